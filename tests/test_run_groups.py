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
