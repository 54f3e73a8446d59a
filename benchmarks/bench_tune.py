"""Time of the paper's whole tuning: 24 studies (12 Coat, 12 Yahoo) x 25 trials, printed.

    python benchmarks/bench_tune.py                # Coat in full; Yahoo-size: 4 studies
    python benchmarks/bench_tune.py --yahoo-full   # Yahoo-size in full too (long)

Cases, each with a fresh SQLite storage in a temporary folder, one worker, the protocol's
objective (``atrec.tuning.study.tune``, 500-step runs on the seed-12345 split):

* Optuna's own cost per trial (a free objective), with the SQLite settings of
  ``atrec.tuning.storage.open_storage``;
* Coat (real data from ``../shared/data``): all 12 studies x 25 trials;
* Yahoo-size synthetic data (``atrec.data.synthetic.YAHOO_SIZE``; the licensed Yahoo! R3 is not
  here): by default the item and user propensities, without and with AT, 25 trials each, and
  the six propensities are extrapolated (printed as such): per AT option, the first study
  (which pays the compilations of the dims it visits) plus 5 x the second (which mostly
  reuses them, as the later studies of a full run do). A trial's time depends mostly on the
  ``dim`` TPE picks (5..50); the propensity changes only the weights. So the extrapolation is
  fair but not exact. ``--yahoo-full`` runs all 12 studies.

Memory: the process's peak RSS (``ru_maxrss``) is printed after each dataset, with how many times
it released its compiled loops (:mod:`atrec.runtime.compiled`, bound ``ATREC_MEMORY_BOUND_MB``).

Studies with AT are timed only when ``atrec.learners.at`` provides the AT learner; otherwise they are
reported as not run. TensorFlow may warn about retracing: each new ``dim`` is a new shape.
Target (issue 5): the whole tuning in under 10 minutes on 2 cores.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from _shared import shared_dataset, yahoo_size_data  # noqa: E402

from atrec.propensity.registry import table1_propensities
from atrec.runtime import compiled
from atrec.tuning import DEFAULT_TRIALS, TuneRequest, WorkerSettings, run_study, tune

TARGET_S = 600.0
TARGET_MB = 1500.0   # issue 15: the peak of a whole tuning run, however many trials


def peak_mb() -> float:
    """This process's peak resident size so far (Linux reports ``ru_maxrss`` in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _coat():
    return shared_dataset("coat")


def _yahoo_size():
    from dataclasses import replace

    return replace(yahoo_size_data(), name="yahoo")


def _at_available() -> bool:
    """Whether ``atrec.learners.at`` provides what the AT objective calls (it landed late)."""
    try:
        from atrec.learners import at
    except ImportError as exc:
        print(f"  with AT: not run ({exc})")
        return False
    missing = [f for f in ("fit_at", "initial_params", "ATSettings") if not hasattr(at, f)]
    if missing:
        print(f"  with AT: not run (atrec.learners.at lacks {', '.join(missing)})")
    return not missing


def optuna_overhead(folder: str, trials: int = 50) -> float:
    """Seconds per trial that Optuna and SQLite add around a free objective."""
    start = time.perf_counter()
    run_study("overhead", lambda p: p.lam, True, trials, f"sqlite:///{folder}/overhead.db")
    return (time.perf_counter() - start) / trials


def time_studies(label: str, data, propensities, folder: str, at_options) -> list:
    """Tune ``propensities`` x ``at_options`` on ``data``, print one line per study, return
    the outcomes (``seconds`` per study)."""
    request = TuneRequest((data.name,), tuple(propensities), tuple(at_options),
                          storage=f"sqlite:///{folder}/{label}.db", worker=WorkerSettings())
    outcomes = tune(request, export_path=Path(folder) / f"{label}-tuned.yaml",
                    loader=lambda name: data)
    for o in outcomes:
        p = o.best_params
        eps = "" if p.epsilon is None else f", eps {p.epsilon:.2g}"
        print(f"  {o.study:<28} {o.ran:3d} trials {o.seconds:8.1f} s   best {o.best_value:.4f} "
              f"(dim {p.dim}, lam {p.lam:.2g}{eps})")
    return outcomes


def whole(outcomes, with_at: bool) -> float:
    """Seconds of all six propensities' studies: measured, or first + 5 x the mean of the rest."""
    times = [o.seconds for o in outcomes if o.with_at == with_at]
    if len(times) == len(table1_propensities()):
        return sum(times)
    if len(times) == 1:
        return times[0] * len(table1_propensities())
    return times[0] + (len(table1_propensities()) - 1) * sum(times[1:]) / len(times[1:])


def main(argv: list[str]) -> None:
    yahoo = table1_propensities() if "--yahoo-full" in argv else ("item", "user")
    folder = tempfile.mkdtemp(prefix="atrec-bench-tune-")
    print(f"Optuna + SQLite per trial (free objective): {optuna_overhead(folder) * 1000:.0f} ms")

    estimate, missing = 0.0, 0
    for label, loader, propensities in (("coat", _coat, table1_propensities()),
                                        ("yahoo-size", _yahoo_size, yahoo)):
        data = loader()
        options = [False] + ([True] if _at_available() else [])
        print(f"{label}: {len(propensities) * len(options)} studies x {DEFAULT_TRIALS} trials")
        outcomes = time_studies(label, data, propensities, folder, options)
        seconds = sum(o.seconds for o in outcomes)
        ran = sum(o.ran for o in outcomes)
        studies = len(table1_propensities()) * len(options)
        scaled = sum(whole(outcomes, a) for a in options)
        measured = len(propensities) == len(table1_propensities())
        how = "measured" if measured else "extrapolated: first study + 5 x the second, per AT"
        print(f"{label}: {seconds:.1f} s for {ran} trials ({seconds / max(ran, 1):.2f} s/trial); "
              f"{studies} studies x {DEFAULT_TRIALS} trials {'=' if measured else '~'} "
              f"{scaled / 60:.1f} min ({how})")
        print(f"{label}: peak RSS of the tuning process so far {peak_mb():.0f} MB "
              f"(target {TARGET_MB:.0f} MB; compiled loops released {compiled.releases} times "
              f"to stay under ATREC_MEMORY_BOUND_MB={compiled.bound_mb():.0f})")
        estimate += scaled
        missing += 2 * len(table1_propensities()) - studies
    print(f"whole tuning ({24 - missing} of 24 studies x {DEFAULT_TRIALS} trials, 2 cores): "
          f"~{estimate / 60:.1f} min against a target of {TARGET_S / 60:.0f} min"
          + (f"; the {missing} studies with AT were not run" if missing else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
