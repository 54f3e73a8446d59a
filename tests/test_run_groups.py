"""``make test``'s groups (tests/run_groups.py) run every test file of pytest's testpaths once."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
import run_groups

ROOT = Path(__file__).resolve().parent.parent


def test_every_test_file_is_in_exactly_one_group():
    testpaths = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"]["testpaths"]
    expected = sorted(str(f.relative_to(ROOT)) for path in testpaths
                      for f in (ROOT / path).rglob("test_*.py"))
    covered = []
    for paths in run_groups.groups():
        for p in paths:
            target = ROOT / p
            covered += ([str(f.relative_to(ROOT)) for f in target.rglob("test_*.py")]
                        if target.is_dir() else [p])
    assert sorted(covered) == expected
    assert len(run_groups.groups()) > 2          # split, not the whole suite in one process


def test_groups_of_a_tree(tmp_path):
    for rel in ("tests/a/test_x.py", "tests/a/deep/test_y.py", "tests/b/helper.py",
                "tests/test_top.py", "examples/plugin/tests/test_p.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert run_groups.groups(tmp_path) == [["tests/a"], ["tests/test_top.py"],
                                           ["examples/plugin/tests"]]


def test_groups_compile_into_the_checkouts_cache_unless_told_otherwise():
    env = run_groups.suite_environment({"PATH": "/bin"})
    assert env == {"PATH": "/bin", "ATREC_COMPILE_CACHE": str(ROOT / ".pytest_cache" / "atrec-xla"),
                   "ATREC_MEMORY_BOUND_MB": "2500"}
    assert run_groups.suite_environment({"ATREC_COMPILE_CACHE": "off",
                                         "ATREC_MEMORY_BOUND_MB": "0"}) == {
        "ATREC_COMPILE_CACHE": "off", "ATREC_MEMORY_BOUND_MB": "0"}


def test_this_process_compiles_into_the_checkouts_cache():
    from atrec.runtime import compilecache

    if os.environ.get("ATREC_COMPILE_CACHE") != str(run_groups.COMPILE_CACHE):
        pytest.skip("ATREC_COMPILE_CACHE was set by the caller")
    assert compilecache.folder().parent == run_groups.COMPILE_CACHE


def test_jobs_come_from_the_environment_and_a_bad_value_is_one_line():
    assert run_groups.jobs({}) == run_groups.DEFAULT_JOBS
    assert run_groups.jobs({"ATREC_TEST_JOBS": "1"}) == 1
    assert run_groups.jobs({"ATREC_TEST_JOBS": " 3 "}) == 3
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(SystemExit, match=f"ATREC_TEST_JOBS={bad}: give how many"):
            run_groups.jobs({"ATREC_TEST_JOBS": bad})


# a group's one test: it writes when it started and ended, and sleeps between
TIMED = '''
import pathlib, time
def test_timed():
    out = pathlib.Path(__file__).with_suffix(".times")
    start = time.time()
    print("output of", pathlib.Path(__file__).stem)
    time.sleep(1.5)
    out.write_text(f"{start} {time.time()}")
'''


@pytest.mark.parametrize("width", [1, 2])
def test_groups_run_width_at_a_time_each_output_whole(tmp_path, capfd, width):
    found = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"test_{name}.py").write_text(TIMED)
        found.append([str(tmp_path / name)])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    results = run_groups.run_all(found, ["-q", "-s", "-p", "no:cacheprovider"], env, width)
    assert [(name, code) for name, code, _ in results] == [(" ".join(g), 0) for g in found]
    (a0, a1), (b0, b1) = (map(float, (tmp_path / n / f"test_{n}.times").read_text().split())
                          for n in ("first", "second"))
    overlap = min(a1, b1) > max(a0, b0)
    assert overlap is (width == 2)
    out = capfd.readouterr().out
    if width == 2:   # each group's output printed whole, under its name
        for name in ("first", "second"):
            block = out.split(f"=== {tmp_path / name} (")[1].split("===")[1]
            assert f"output of test_{name}" in block and "1 passed" in block
