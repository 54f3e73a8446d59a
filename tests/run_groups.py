"""Run the test suite as one pytest process per group of tests (what ``make test`` calls).

Why not one process: every compiled TensorFlow loop (XLA's CPU code) stays mapped in the
process that compiled it until the process ends; TensorFlow offers no way to free it. The
whole suite compiles several thousand loops, and in one process it reached Linux's default
limit of 65,530 memory maps (``vm.max_map_count``) and 15 GB of resident memory; the next
``mmap`` failed inside TensorFlow and the process died of a segmentation fault. One process per
group keeps each far below both (figures in docs/testing.md).

The groups are found, not listed, so a new test folder is run without editing this file:
each folder under ``tests/`` that holds tests, the ``test_*.py`` files directly in ``tests/``,
and ``examples/plugin/tests``. Arguments after the script's name go to every pytest call
(``python3 tests/run_groups.py -x -k coat``). The exit code is 0 when every group passed (or a
``-k`` left a group with nothing to run), else 1; a summary with each group's time ends the run.

Two groups run at a time (``ATREC_TEST_JOBS``): a group mostly traces and compiles on one core,
and beside another the suite took 868 s of wall time instead of 1,385 s, peak 4.8 GB for all
its processes (docs/testing.md). Side by side, a group's output is printed whole when it ends.

Compiled loops go to the checkout's own cache folder (:data:`COMPILE_CACHE`), not the user's:
the suite compiles a few hundred small-shape loops that no real run loads (about 400 MB), and
the groups, one process each, still share them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import data_sources

ROOT = Path(__file__).resolve().parent.parent
NO_TESTS_COLLECTED = 5      # pytest's exit code when a group has nothing to run
COMPILE_CACHE = ROOT / ".pytest_cache" / "atrec-xla"
"""The tests' compilation cache (``ATREC_COMPILE_CACHE`` unless the caller set it): inside the
checkout, beside pytest's own cache, so that ``make clean`` removes it with the rest."""
JOBS_ENV = "ATREC_TEST_JOBS"
DEFAULT_JOBS = 2
"""Groups run at a time unless ``ATREC_TEST_JOBS`` says otherwise: one per core of the 2-core
reference machine."""
MEMORY_BOUND_MB = 2500
"""The tests' ``ATREC_MEMORY_BOUND_MB`` unless the caller set one: a group holds hundreds of
small loops, and under atrec's default (1,500 MB, for long user runs) it would drop and trace
them again, which costs time and tests nothing; the tests of the bound set their own."""


def suite_environment(environ=os.environ) -> dict:
    """``environ`` with :data:`COMPILE_CACHE` as ``ATREC_COMPILE_CACHE`` and
    :data:`MEMORY_BOUND_MB` as ``ATREC_MEMORY_BOUND_MB`` where it names none."""
    env = dict(environ)
    env.setdefault("ATREC_COMPILE_CACHE", str(COMPILE_CACHE))
    env.setdefault("ATREC_MEMORY_BOUND_MB", str(MEMORY_BOUND_MB))
    return env


def groups(root: Path = ROOT) -> list[list[str]]:
    """The pytest arguments of each group, in the order they run (paths relative to root)."""
    tests = root / "tests"
    found = [[str(d.relative_to(root))] for d in sorted(tests.iterdir())
             if d.is_dir() and any(d.rglob("test_*.py"))]
    loose = sorted(str(f.relative_to(root)) for f in tests.glob("test_*.py"))
    if loose:
        found.append(loose)
    plugin = root / "examples" / "plugin" / "tests"
    if plugin.is_dir():
        found.append([str(plugin.relative_to(root))])
    return found


def jobs(environ=os.environ) -> int:
    """How many groups run at once: ``ATREC_TEST_JOBS``, else :data:`DEFAULT_JOBS`."""
    text = environ.get(JOBS_ENV, "").strip()
    if not text:
        return DEFAULT_JOBS
    if not text.isdigit() or int(text) < 1:
        raise SystemExit(f"error: {JOBS_ENV}={text}: give how many test groups run at once, "
                         f"a whole number from 1 (e.g. {DEFAULT_JOBS})")
    return int(text)


def run_group(paths: list[str], argv: list[str], env: dict, capture: bool) -> tuple:
    """``(exit code, seconds, output)`` of one group's pytest process; its output is kept and
    returned when ``capture`` (groups that run side by side print theirs whole, one after the
    other), else it goes straight to the terminal (``output`` empty)."""
    start = time.monotonic()
    command = [sys.executable, "-m", "pytest", *argv, *paths]
    if not capture:
        return subprocess.call(command, cwd=ROOT, env=env), time.monotonic() - start, ""
    with tempfile.TemporaryFile() as out:
        code = subprocess.call(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        out.seek(0)
        text = out.read().decode(errors="replace")
    return code, time.monotonic() - start, text


def run_all(found: list[list[str]], argv: list[str], env: dict, width: int) -> list[tuple]:
    """Run the groups ``found``, ``width`` at a time, in order of start; returns ``(name, exit
    code, seconds)`` per group in the order of ``found``. Side by side, each group's output is
    printed whole when it ends."""
    results = []
    with ThreadPoolExecutor(max_workers=width) as pool:
        running = {pool.submit(run_group, paths, argv, env, width > 1): " ".join(paths)
                   for paths in found}
        for future in as_completed(running):
            code, seconds, text = future.result()
            results.append((running[future], code, seconds))
            if text:
                print(f"\n=== {running[future]} ({seconds:.1f} s) ===\n{text}", end="", flush=True)
    order = {" ".join(paths): k for k, paths in enumerate(found)}
    return sorted(results, key=lambda r: order[r[0]])


def main(argv: list[str]) -> int:
    width = jobs()
    lacking = data_sources.missing()
    if lacking:     # one line, not one per group
        print(f"error: {data_sources.missing_line(lacking)}", file=sys.stderr)
        return 2
    start = time.monotonic()
    results = run_all(groups(), argv, suite_environment(), width)
    print(f"\ntest groups (one pytest process each, {width} at a time):")
    for name, code, seconds in results:
        verdict = "passed" if code in (0, NO_TESTS_COLLECTED) else f"FAILED (exit {code})"
        print(f"  {seconds:7.1f} s  {verdict:16s}  {name}")
    total = sum(seconds for _, _, seconds in results)
    failed = [name for name, code, _ in results if code not in (0, NO_TESTS_COLLECTED)]
    print(f"  {total:7.1f} s  {'FAILED: ' + ', '.join(failed) if failed else 'all passed'}"
          f" ({time.monotonic() - start:.1f} s of wall time)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
