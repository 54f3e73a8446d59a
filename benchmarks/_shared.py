"""What the benchmarks share: the local dataset copies and a throw-away data folder."""

from __future__ import annotations

import os
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
