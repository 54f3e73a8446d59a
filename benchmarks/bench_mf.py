"""Speed and peak memory of MF-IPS training (500 steps, validation and test after every step).

    python benchmarks/bench_mf.py            # all cases, each in a fresh process
    python benchmarks/bench_mf.py coat:item  # one case
    taskset -c 1 python benchmarks/bench_mf.py --one-replica yahoo-size:40  # CPU ms per step

Cases: Coat (real data from ``../shared/data``, 20 seeds, each propensity with the authors'
published parameters) and Yahoo-size synthetic data (``atrec.synthetic.YAHOO_SIZE``, 20 seeds,
dims 5..50). Each case runs in its own process so that its peak RSS is its own; the first call
(compilation included) and a second, warm call are both timed. The reference figures of the
authors' TF1 code on 2 cores (1.2 s per seed on Coat, 2.3 s per seed on Yahoo, from issue 3)
give the speed-up column. ``--one-replica`` trains a single replica on one thread and prints its
CPU time per step (best of three warm runs): the figure to compare code changes with on a shared
machine, pinned to a core.
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

from _shared import run_cases, shared_dataset  # noqa: E402

AUTHORS_S_PER_SEED = {"coat": 1.2, "yahoo-size": 2.3}
SEEDS = list(range(20))
CASES = ([f"coat:{p}" for p in ("uniform", "item", "nb-uniform")]
         + [f"yahoo-size:{d}" for d in (5, 10, 20, 30, 40, 50)])


def _coat():
    return shared_dataset("coat")


def _case_data(case: str, seeds: list[int]):
    """``(kind, params, inputs, settings, init, batch positions)`` of ``case`` for ``seeds``."""
    from atrec import mf
    from atrec.experiment import stack_inputs
    from atrec.params import HyperParams, get_params

    kind, arg = case.split(":")
    if kind == "coat":
        data, propensity = _coat(), arg
        params, _ = get_params("published", "coat", propensity, False)
    else:
        from atrec.synthetic import YAHOO_SIZE, make_synthetic

        data = make_synthetic(**YAHOO_SIZE, seed=0).data
        propensity, params = "item", HyperParams(int(arg), 3e-5)
    inputs = stack_inputs(data, propensity, seeds)
    settings = mf.TrainSettings()
    init = mf.init_params(data.num_users, data.num_items, params.dim, seeds)
    pos = mf.batch_positions(settings, len(inputs.splits[0].train), seeds)
    return kind, params, inputs, settings, init, pos


def run_case(case: str) -> None:
    from atrec import mf

    kind, params, inputs, settings, init, pos = _case_data(case, SEEDS)
    times = []
    for _ in range(2):
        start = time.perf_counter()
        mf.fit(init, inputs.train, inputs.val, inputs.test, params.lam, settings, pos)
        times.append(time.perf_counter() - start)
    warm = times[1] / len(SEEDS)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ref = AUTHORS_S_PER_SEED[kind]
    print(f"{case:18s} dim {params.dim:2d}  first {times[0]:6.2f} s  warm {times[1]:6.2f} s  "
          f"{warm:6.3f} s/seed  {settings.steps * len(SEEDS) / times[1]:7.0f} seed-steps/s  "
          f"x{ref / warm:5.1f} vs authors  peak {peak_mb:5.0f} MB", flush=True)


def run_one_replica(case: str) -> None:
    from atrec import mf

    _, params, inputs, settings, init, pos = _case_data(case, SEEDS[:1])
    cpu = []
    for _ in range(4):  # the first call compiles
        start = time.process_time()
        mf.fit(init, inputs.train, inputs.val, inputs.test, params.lam, settings, pos,
               chunk=1, threads=1)
        cpu.append(time.process_time() - start)
    print(f"{case:18s} dim {params.dim:2d}  one replica, one thread: "
          f"{min(cpu[1:]) / settings.steps * 1e3:.3f} ms CPU per step", flush=True)


def main(cases: list[str]) -> None:
    if cases[:1] == ["--one-replica"]:
        for case in cases[1:] or CASES:
            run_one_replica(case)
        return
    run_cases(__file__, cases, CASES,
              f"MF-IPS, 500 steps, {len(SEEDS)} seeds per case, {os.cpu_count()} CPU(s)", run_case)


if __name__ == "__main__":
    main(sys.argv[1:])
