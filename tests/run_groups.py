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

Compiled loops go to the checkout's own cache folder (:data:`COMPILE_CACHE`), not the user's:
the suite compiles a few hundred small-shape loops that no real run loads (about 400 MB), and
the groups, one process each, still share them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NO_TESTS_COLLECTED = 5      # pytest's exit code when a group has nothing to run
COMPILE_CACHE = ROOT / ".pytest_cache" / "atrec-xla"
"""The tests' compilation cache (``ATREC_COMPILE_CACHE`` unless the caller set it): inside the
checkout, beside pytest's own cache, so that ``make clean`` removes it with the rest."""
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


def main(argv: list[str]) -> int:
    results = []
    env = suite_environment()
    for paths in groups():
        start = time.monotonic()
        code = subprocess.call([sys.executable, "-m", "pytest", *argv, *paths], cwd=ROOT, env=env)
        results.append((" ".join(paths), code, time.monotonic() - start))
    print("\ntest groups (one pytest process each):")
    for name, code, seconds in results:
        verdict = "passed" if code in (0, NO_TESTS_COLLECTED) else f"FAILED (exit {code})"
        print(f"  {seconds:7.1f} s  {verdict:16s}  {name}")
    total = sum(seconds for _, _, seconds in results)
    failed = [name for name, code, _ in results if code not in (0, NO_TESTS_COLLECTED)]
    print(f"  {total:7.1f} s  {'FAILED: ' + ', '.join(failed) if failed else 'all passed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
