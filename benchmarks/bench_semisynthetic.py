"""Speed of the semi-synthetic benchmark (``atrec semisynthetic``).

    python benchmarks/bench_semisynthetic.py

On the real ML-100K copy (``../shared/data``), in a fresh data and results folder: the
completion at the reference recipe (wall and CPU seconds, epochs, seconds per epoch), reading
it back from the cache, the setup of one form (rates, prediction matrices, propensity) and one
repetition of each default form. Figures only, no assertions.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from _shared import shared_dataset

REPETITIONS = 5


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    from atrec.reporting.tables import render
    from atrec.semisynthetic.benchmark import repetition, setup_for
    from atrec.semisynthetic.forms import DEFAULT_FORMS, FORMS
    from atrec.semisynthetic.truth import load_completion, truth_of

    shared_dataset("ml-100k")
    os.environ["ATREC_RESULTS_DIR"] = tempfile.mkdtemp(prefix="atrec-bench-runs-")
    rows = []
    stored, wall, cpu = _timed(load_completion)
    epochs = stored.manifest["epochs"]
    rows.append({"step": f"completion ({epochs} epochs)", "wall s": wall, "CPU s": cpu,
                 "per unit": f"{wall / epochs * 1000:.0f} ms per epoch"})
    _, wall, cpu = _timed(load_completion)
    rows.append({"step": "completion read from the cache", "wall s": wall, "CPU s": cpu,
                 "per unit": ""})
    for name in DEFAULT_FORMS:
        form = FORMS[name]
        setup, wall, cpu = _timed(lambda: setup_for(form, truth_of(stored, form.cuts).rates, 0))
        rows.append({"step": f"{name}: setup", "wall s": wall, "CPU s": cpu, "per unit": ""})
        _, wall, cpu = _timed(lambda: [repetition(setup, s) for s in range(REPETITIONS)])
        rows.append({"step": f"{name}: {REPETITIONS} repetitions", "wall s": wall, "CPU s": cpu,
                     "per unit": f"{wall / REPETITIONS:.2f} s per repetition"})
    print(render(rows, "table", floatfmt=".2f"))


if __name__ == "__main__":
    main()
