"""Where the test suite finds its real Coat and MovieLens 100K copies: the places the README
tells a user to put them, in the order atrec itself reads them.

For each dataset, the first of:

1. ``ATREC_COAT_SOURCE`` / ``ATREC_ML_100K_SOURCE``: the variables ``atrec download`` and
   ``make reproduce`` install from (a folder, or the official archive);
2. ``ATREC_SHARED_DATA/<name>``: a folder holding both, ``coat/`` and ``ml-100k/`` (the
   Makefile's default for the two variables above is ``../shared/data``, beside the checkout);
3. ``../shared/data/<name>`` beside the checkout (CI's layout);
4. the copy ``make reproduce`` (or ``atrec download``) installed: ``<data>/<name>/raw`` with
   ``<data>`` the user's ``ATREC_DATA_DIR``, else the checkout's ``data/``.

A dataset found nowhere makes the suite stop before any test with one line naming the variable
to set (:func:`missing_line`). Imports no atrec module, so ``tests/run_groups.py`` can check
before it starts a group.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATASETS = {"coat": "Coat", "ml-100k": "MovieLens 100K"}
SHARED_ENV = "ATREC_SHARED_DATA"


def source_env(name: str) -> str:
    """``coat`` -> ``ATREC_COAT_SOURCE`` (as :func:`atrec.runtime.settings.source_env`)."""
    return "ATREC_" + name.upper().replace("-", "_") + "_SOURCE"


def candidates(name: str, environ: Mapping[str, str] = os.environ,
               root: Path = ROOT) -> list[Path]:
    """The places dataset ``name`` is looked for, in order (module doc)."""
    out = []
    if environ.get(source_env(name)):
        out.append(Path(environ[source_env(name)]).expanduser())
    if environ.get(SHARED_ENV):
        out.append(Path(environ[SHARED_ENV]).expanduser() / name)
    out.append(root.parent / "shared" / "data" / name)
    data = Path(environ.get("ATREC_DATA_DIR") or root / "data").expanduser()
    out.append((data if data.is_absolute() else root / data) / name / "raw")
    return out


def find(name: str, environ: Mapping[str, str] = os.environ, root: Path = ROOT) -> Path | None:
    """The first existing place of :func:`candidates` (a folder, or for the variable an
    archive or file too), ``None`` when there is none."""
    return next((p for p in candidates(name, environ, root) if p.exists()), None)


def missing(environ: Mapping[str, str] = os.environ, root: Path = ROOT) -> list[str]:
    """The datasets of :data:`DATASETS` found nowhere."""
    return [name for name in DATASETS if find(name, environ, root) is None]


def missing_line(names: list[str]) -> str:
    """One line saying which copies the tests lack and what to set."""
    what = " and ".join(DATASETS[n] for n in names)
    envs = " and ".join(source_env(n) for n in names)
    where = "its folder or official archive" if len(names) == 1 else (
        "their folders or official archives")
    return (f"the tests need a copy of {what}: set {envs} to {where} "
            f"(or {SHARED_ENV} to a folder holding {', '.join(n + '/' for n in names)}), or run "
            f"'make reproduce' first, which installs them under data/")
