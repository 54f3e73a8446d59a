"""Speed of the ``1bit-mc`` propensity fit on Coat and ML-100K (real data from ../shared/data).

    python benchmarks/bench_onebit.py              # both datasets
    python benchmarks/bench_onebit.py ml-100k      # one
    python benchmarks/bench_onebit.py --profile    # and the 15 costliest calls (cProfile)

Each dataset: the training matrix of the tuning split (seed 12345), the default radius, one
call of :func:`atrec.propensity.solvers.fit_onebit_mc` with the estimator's default tolerance
and iteration cap. Prints wall and CPU seconds (on a shared machine CPU-s is the steadier
figure; ``OPENBLAS_NUM_THREADS=1`` steadier still), iterations, the objective reached, the duality gap and the
rank, so that a faster solver can be checked to reach the same objective by the same rule.
Figures to read, never asserted.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from _shared import shared_dataset

DATA = ("coat", "ml-100k")


def observed(name: str):
    from atrec.data.splits import make_split
    from atrec.propensity.solvers import default_radius, observation_matrix
    from atrec.run_settings import TUNING_SEED

    split = make_split(shared_dataset(name), TUNING_SEED)
    y = observation_matrix(split.num_users, split.num_items, split.train.user, split.train.item)
    return y, default_radius(split.num_users, split.num_items, len(split.train))


def main(args: list[str]) -> None:
    from atrec.propensity.models import OneBitMC
    from atrec.propensity.solvers import fit_onebit_mc

    profile = "--profile" in args
    names = [a for a in args if not a.startswith("--")] or list(DATA)
    est = OneBitMC()
    for name in names:
        y, radius = observed(name)
        prof = cProfile.Profile() if profile else None
        start, cpu = time.perf_counter(), time.process_time()
        if prof:
            prof.enable()
        fit = fit_onebit_mc(y, radius, est.tol, est.max_iter)
        if prof:
            prof.disable()
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"{name:8s} {y.shape[0]}x{y.shape[1]}: {seconds:7.2f} s ({cpu:.2f} CPU-s), "
              f"{fit.iterations} "
              f"iterations, converged {fit.converged}, objective {fit.objective:.6f}, gap "
              f"{fit.duality_gap:.4g} (tol x F {est.tol * fit.objective:.4g}), rank {fit.rank}",
              flush=True)
        if prof:
            pstats.Stats(prof).sort_stats("cumulative").print_stats(15)


if __name__ == "__main__":
    main(sys.argv[1:])
