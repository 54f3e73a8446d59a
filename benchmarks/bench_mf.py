"""Speed and peak memory of MF-IPS training (500 steps, validation after every step).

    python benchmarks/bench_mf.py            # all cases, each in a fresh process
    python benchmarks/bench_mf.py coat:item  # one case
    taskset -c 1 python benchmarks/bench_mf.py --one-replica yahoo-size:40  # CPU ms per step

Cases:

* ``coat:<propensity>``: real data from ``../shared/data``, 20 seeds, the authors' published
  parameters, trained by one call of ``mf.fit``.
* ``yahoo-size:<dim>``: Yahoo-size synthetic data (``atrec.data.synthetic.YAHOO_SIZE``), 20 seeds,
  dims 5..50, trained by one call of ``mf.fit`` (the training alone).
* ``yahoo-run:<dim>``: the same data and seeds through ``experiment.run_config``, what ``atrec
  train`` does: splits, propensities, training in the groups the tool forms, test metrics, both
  nDCG@3 variants and one JSON record per seed. Its peak RSS is the memory a Yahoo run needs.

Each case runs in its own process so that its peak RSS is its own (the synthetic data are
generated once by a child process, see ``_shared.yahoo_size_data``). The first call (tracing and
compilation included; the TensorFlow import is timed apart) and a second, warm call are both
timed. The reference figures of the authors' TF1 code on 2 cores (1.2 s per seed on Coat, 2.3 s
per seed on Yahoo, from issue 3) give the speed-up column. ``--one-replica`` trains a single
replica on one thread and prints its CPU time per step (best of three warm runs): the figure to
compare code changes with on a shared machine, pinned to a core.
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

AUTHORS_S_PER_SEED = {"coat": 1.2, "yahoo-size": 2.3}
SEEDS = list(range(20))
DIMS = (5, 10, 20, 30, 40, 50)
CASES = ([f"coat:{p}" for p in ("uniform", "item", "nb-uniform")]
         + [f"yahoo-size:{d}" for d in DIMS] + [f"yahoo-run:{d}" for d in DIMS])


def _coat():
    return shared_dataset("coat")


def _case_data(case: str, seeds: list[int]):
    """``(kind, params, inputs, settings, init, batch positions)`` of ``case`` for ``seeds``."""
    from atrec.experiments.inputs import stack_inputs
    from atrec.learners import mf
    from atrec.params.lookup import HyperParams, get_params

    kind, arg = case.split(":")
    if kind == "coat":
        data, propensity = _coat(), arg
        params, _ = get_params("published", "coat", propensity, False)
    else:
        data = yahoo_size_data()
        propensity, params = "item", HyperParams(int(arg), 3e-5)
    inputs = stack_inputs(data, propensity, seeds)
    settings = mf.TrainSettings()
    init = mf.init_params(data.num_users, data.num_items, params.dim, seeds)
    pos = mf.batch_positions(settings, len(inputs.splits[0].train), seeds)
    return kind, params, inputs, settings, init, pos


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_tool_case(case: str) -> None:
    """``yahoo-run:<dim>``: 20 seeds through ``run_config`` into a throw-away results folder."""
    import tempfile

    start = time.perf_counter()
    import tensorflow  # noqa: F401  (timed apart: every process pays it once)
    import_s = time.perf_counter() - start

    from atrec.experiments.driver import run_config
    from atrec.experiments.spec import RunSpec
    from atrec.params.lookup import HyperParams

    data = yahoo_size_data()
    spec = RunSpec("yahoo-size", "item", False, HyperParams(int(case.split(":")[1]), 3e-5),
                   "published", tuple(SEEDS))
    root = Path(tempfile.mkdtemp(prefix="atrec-bench-results-"))
    times = []
    for force in (False, True):  # the second run recomputes every seed, warm
        start = time.perf_counter()
        outcome = run_config(data, spec, root=root, force=force)
        times.append(time.perf_counter() - start)
        assert len(outcome.trained) == len(SEEDS)
    warm = times[1] / len(SEEDS)
    ref = AUTHORS_S_PER_SEED["yahoo-size"]
    print(f"{case:18s} dim {spec.params.dim:2d}  first {times[0]:6.2f} s  warm {times[1]:6.2f} s  "
          f"{warm:6.3f} s/seed  end to end (TF import {import_s:.1f} s apart)  "
          f"x{ref / warm:5.1f} vs authors  peak {_peak_mb():5.0f} MB", flush=True)


def run_case(case: str) -> None:
    if case.startswith("yahoo-run:"):
        run_tool_case(case)
        return
    from atrec.learners import mf

    kind, params, inputs, settings, init, pos = _case_data(case, SEEDS)
    times = []
    for _ in range(2):
        start = time.perf_counter()
        mf.fit(init, inputs.train, inputs.val, inputs.test, params.lam, settings, pos)
        times.append(time.perf_counter() - start)
    warm = times[1] / len(SEEDS)
    peak_mb = _peak_mb()
    ref = AUTHORS_S_PER_SEED[kind]
    print(f"{case:18s} dim {params.dim:2d}  first {times[0]:6.2f} s  warm {times[1]:6.2f} s  "
          f"{warm:6.3f} s/seed  {settings.steps * len(SEEDS) / times[1]:7.0f} seed-steps/s  "
          f"x{ref / warm:5.1f} vs authors  peak {peak_mb:5.0f} MB", flush=True)


def run_one_replica(case: str) -> None:
    from atrec.learners import mf

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
