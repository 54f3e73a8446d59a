"""The binary reference code's own cost, measured on this machine, for ``bench_binary.py``.

The binary protocol's speed target compares atrec's 20 seeds with 20 runs of the method's
reference script on the same cores. The issue gives the scripts' CPU per run on Coat for MF
and DR-JL only, measured elsewhere; this module times the scripts here instead, when you give
it a runnable copy of them (atrec ships none of their code):

    ATREC_REFERENCE_CODE=/path/to/ICDE24-MNAR/real_world \
    ATREC_REFERENCE_PYTHON=/path/to/venv-with-torch/bin/python \
    python benchmarks/bench_binary.py coat:mf

``ATREC_REFERENCE_CODE`` is a folder in which ``python <script> --dataset coat`` (or
``yahoo``) trains the method on the CPU: the collection's ``real_world/`` folder, plus the
``arguments.py`` it imports but does not ship, a CPU fallback for its ``.cuda()`` calls and the
one-line fixes that docs/protocols.md, "The reference code's traps", item 4, names.
docs/performance.md ("The reference scripts on the same machine") says what those were here.
``ATREC_REFERENCE_RUNS`` (default :data:`RUNS`) runs each script that many times: one script's runs
varied by up to 31% on one machine and the same data, so the bench prints their mean and their
range, and the speed-up against each.

Each run happens in a new temporary folder holding links to the folder's files and a
``data/`` folder as the scripts' loader reads it: Coat's ``train.ascii`` and ``test.ascii``
from the shared copy, or the Yahoo-size synthetic data written as Yahoo! R3's triplet files
(1-based ids, tab-separated ``user item rating``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from _shared import SHARED, run_child, yahoo_size_data

RUNS = 3   # runs of each script by default (ATREC_REFERENCE_RUNS)


def configured() -> Path | None:
    """The folder of runnable reference scripts, or ``None`` when none is given."""
    folder = os.environ.get("ATREC_REFERENCE_CODE")
    return Path(folder).expanduser().resolve() if folder else None


def script_of(method: str) -> str | None:
    """The file name of ``method``'s reference script (``DT-IPS.py``), from the method's
    ``reference`` attribute; ``None`` for a method without one."""
    from atrec.methods.registry import registry_for

    reference = getattr(registry_for("binary-icde24").get(method), "reference", "") or ""
    name = reference.rsplit("/", 1)[-1]
    return name if name.endswith(".py") else None


def _write_yahoo_size(where: Path) -> None:
    import numpy as np

    from atrec.data.catalogue import YAHOO_TEST, YAHOO_TRAIN

    data = yahoo_size_data()
    where.mkdir(parents=True)
    for name, ratings in ((YAHOO_TRAIN, data.train), (YAHOO_TEST, data.test)):
        rows = np.stack([np.asarray(ratings.user) + 1, np.asarray(ratings.item) + 1,
                         np.asarray(ratings.rating)], axis=1).astype(np.int64)
        np.savetxt(where / name, rows, fmt="%d", delimiter="\t")


def _workdir(code: Path, dataset: str, root: Path) -> Path:
    work = root / "work"
    work.mkdir()
    for item in code.iterdir():
        if item.name != "data":
            (work / item.name).symlink_to(item)
    (work / "data").mkdir()
    if dataset == "coat":
        (work / "data" / "coat").symlink_to((SHARED / "coat").resolve())
    else:
        _write_yahoo_size(work / "data" / "yahoo")
    return work


def runs_asked() -> int | str:
    """How many times to run each script: ``ATREC_REFERENCE_RUNS``, else :data:`RUNS`; a
    one-line message when the variable is not a positive whole number."""
    value = os.environ.get("ATREC_REFERENCE_RUNS", str(RUNS)).strip()
    if not value.isdigit() or int(value) < 1:
        return (f"ATREC_REFERENCE_RUNS={value!r} is not a positive whole number: give how many "
                f"times to run each reference script (default {RUNS})")
    return int(value)


def problem() -> str | None:
    """A one-line message when the reference settings are wrong (so a bench can stop before
    it trains anything), else ``None``."""
    code, runs = configured(), runs_asked()
    if code is not None and not code.is_dir():
        return (f"ATREC_REFERENCE_CODE={code} is not a folder: point it at the reference "
                f"scripts' folder, or unset it")
    return runs if isinstance(runs, str) else None


def cpu_per_run(method: str, dataset: str) -> tuple[list[float], str] | str | None:
    """``(CPU seconds of each run, script)`` of ``method``'s reference script on ``dataset``
    (``coat`` or ``yahoo``, the Yahoo-size data) on this machine, run :func:`runs_asked`
    times; ``None`` when no folder is configured or it lacks the script; a one-line message
    when the settings are wrong or a run fails (no figure: one from a run that did not finish
    would mislead)."""
    message, code, script = problem(), configured(), script_of(method)
    if message is not None:
        return message
    if code is None or script is None or not (code / script).is_file():
        return None
    runs = runs_asked()
    python = os.environ.get("ATREC_REFERENCE_PYTHON") or sys.executable
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    cpu = []
    with tempfile.TemporaryDirectory(prefix="atrec-bench-reference-") as tmp:
        work = _workdir(code, dataset, Path(tmp))
        for _ in range(runs):
            run = run_child([python, script, "--dataset", dataset], env, cwd=work)
            if run.code:
                return (f"{script} exited with {run.code} on {dataset}: make `{python} "
                        f"{script} --dataset {dataset}` run in {code} (docs/performance.md)")
            cpu.append(run.cpu_s)
    return cpu, script
