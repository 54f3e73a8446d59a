"""Where atrec keeps data and results.

``ATREC_DATA_DIR`` and ``ATREC_RESULTS_DIR`` override the defaults ``./data`` and ``./results``
(relative to the current directory, which is the repository root under ``make``).
"""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """Root folder of downloaded and preprocessed datasets."""
    return Path(os.environ.get("ATREC_DATA_DIR", "data"))


def results_dir() -> Path:
    """Root folder of result records, studies, tables and figures."""
    return Path(os.environ.get("ATREC_RESULTS_DIR", "results"))
