"""What the benchmarks share: the local dataset copies, a throw-away data folder and the
per-process driver of the case benchmarks."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

SHARED = Path(os.environ.get("ATREC_SHARED_DATA")
              or Path(__file__).resolve().parents[2] / "shared" / "data")


def shared_dataset(name: str):
    """Install dataset ``name`` from the shared copy into a temporary data folder; load it."""
    from atrec.datasets import download
    from atrec.preprocess import preprocess

    os.environ["ATREC_DATA_DIR"] = tempfile.mkdtemp(prefix="atrec-bench-")
    download(name, source=SHARED / name, quiet=True)
    return preprocess(name, quiet=True)


def run_cases(script: str, cases: list[str], default_cases: list[str], header: str,
              run_case) -> None:
    """One case given: run it in this process. Otherwise print ``header`` and run each case
    (``default_cases`` when none is given) as ``script case`` in a fresh process, so that each
    case's peak RSS is its own."""
    if len(cases) == 1:
        run_case(cases[0])
        return
    print(header)
    for case in cases or default_cases:
        subprocess.call([sys.executable, script, case])
