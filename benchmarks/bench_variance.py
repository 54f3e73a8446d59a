"""Speed of the ML-100K variance experiment (Figure 2) per configuration.

    python benchmarks/bench_variance.py

Runs ``atrec.workflows.variance.run_variance`` on the real ML-100K copy (``../shared/data``) for
min_items 1 and 50 (the largest and the smallest data), the default parameter set, each case in
a fresh temporary results folder: MF-IPS (500 steps) and AT (150 and 500 pre-training steps)
with one data draw for 20 seeds (trained stacked), and AT with a data draw per seed (3 seeds;
every run compiles anew). Prints seconds per configuration and per seed. Figures only, no
assertions. The full grid is 6 min_items x 2 methods.
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

MIN_ITEMS = (1, 50)
CASES = [  # label, with AT, AT pre-training steps, data draw, seeds
    ("MF-IPS, 500 steps", False, None, "fixed", 20),
    ("AT, 150 pre-training steps", True, None, "fixed", 20),
    ("AT, 500 pre-training steps", True, 500, "fixed", 20),
    ("AT, 150 pre-training steps", True, None, "per-seed", 3),
]


def main() -> None:
    from atrec.reporting.tables import render
    from atrec.workflows.variance import VarianceRequest, protocol_settings, run_variance

    data = shared_dataset("ml-100k")
    rows = []
    for label, with_at, pre_steps, draw, n_seeds in CASES:
        _, at_settings = protocol_settings(pre_steps=pre_steps)
        for m in MIN_ITEMS:
            request = VarianceRequest(min_items=(m,), at_options=(with_at,),
                                      seeds=tuple(range(n_seeds)), at_settings=at_settings,
                                      data_draw=draw)
            root = Path(tempfile.mkdtemp(prefix="atrec-bench-runs-"))
            start = time.perf_counter()
            run_variance(request, data, root=root, figures=False)
            seconds = time.perf_counter() - start
            rows.append({"method": label, "data draw": draw, "min_items": m, "seeds": n_seeds,
                         "s": seconds, "s per seed": seconds / n_seeds})
    print(render(rows, "table", floatfmt=".2f"))


if __name__ == "__main__":
    main()
