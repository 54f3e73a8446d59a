"""Speed and peak memory of asymmetric tri-training (150 pre-training + 100 pseudo-labelling steps).

    python benchmarks/bench_at.py               # all cases, each in a fresh process
    python benchmarks/bench_at.py yahoo-size:4  # one case, 4 seeds

Cases: Coat (real data from ``../shared/data``, 20 seeds, item propensity with the authors'
published with-AT parameters) and Yahoo-size synthetic data (``atrec.data.synthetic.YAHOO_SIZE``,
item propensity, dim 40, lam 3.45e-6 and epsilon 0.0082 as the authors' Yahoo item-AT values).
Each case runs in its own process so that its peak RSS (``resource.getrusage``) is its own; a first
call (compilation included) and a second, warm call are both timed, the warm one also in CPU
seconds of the process (all threads), which a busy machine distorts less than wall time.
Yahoo size runs the 20 seeds of a configuration (about 2.5 CPU-seconds each); ``yahoo-size:4``
runs 4. The authors' TF1 code needs about 1.9 s per seed on Coat and 31 s per seed on Yahoo with
AT on 2 cores (issue 4); the last column is the warm speed-up against those figures. No
assertions: figures to read.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from _shared import run_cases, shared_dataset, yahoo_size_data  # noqa: E402

AUTHORS_S_PER_SEED = {"coat": 1.9, "yahoo-size": 31.0}
CASES = ["coat:20", "yahoo-size:20"]


def _coat():
    return shared_dataset("coat")


def run_case(case: str) -> None:
    from atrec.experiments.inputs import stack_inputs
    from atrec.learners import at
    from atrec.params.lookup import HyperParams, get_params

    kind, n_seeds = case.split(":")
    seeds = list(range(int(n_seeds)))
    if kind == "coat":
        data = _coat()
        params, _ = get_params("published", "coat", "item", True)
    else:
        data = yahoo_size_data()
        params = HyperParams(40, 3.45133291759994e-06, 0.00822507197062529)
    inputs = stack_inputs(data, "item", seeds)
    settings = at.ATSettings()
    inits = at.initial_params(data.num_users, data.num_items, params.dim, seeds)
    times = []
    for _ in range(2):
        start, cpu = time.perf_counter(), time.process_time()
        result = at.fit_at(inits, inputs.train, inputs.val, inputs.test, params.lam,
                           params.epsilon, settings, seeds, data.num_users, data.num_items)
        times.append(time.perf_counter() - start)
    cpu = (time.process_time() - cpu) / len(seeds)
    warm = times[1] / len(seeds)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ref = AUTHORS_S_PER_SEED[kind]
    print(f"{kind:10s} {len(seeds):2d} seeds  dim {params.dim:2d}  first {times[0]:6.2f} s  "
          f"warm {times[1]:6.2f} s  {warm:6.3f} s/seed ({cpu:6.3f} CPU-s/seed)  "
          f"x{ref / warm:5.1f} vs authors  "
          f"peak {peak_mb:5.0f} MB  (MAE {result.mae.mean():.3f}, "
          f"pseudo-labels/step {result.trace['n_pseudo'].mean():.0f})", flush=True)


def main(cases: list[str]) -> None:
    run_cases(__file__, cases, CASES, f"AT (150 + 10 x 10 steps), {os.cpu_count()} CPU(s)",
              run_case)


if __name__ == "__main__":
    main(sys.argv[1:])
