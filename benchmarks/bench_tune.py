"""Time of the paper's whole tuning: 24 studies (12 Coat, 12 Yahoo) x 25 trials, printed.

    python benchmarks/bench_tune.py                # Coat in full; Yahoo-size: item only
    python benchmarks/bench_tune.py --yahoo-full   # Yahoo-size in full too (long)

Cases, each with a fresh SQLite storage in a temporary folder, one worker, the protocol's
objective (``atrec.tuning.tune``, 500-step runs on the seed-12345 split):

* Optuna's own cost per trial (a free objective), with the SQLite settings of ``open_storage``;
* Coat (real data from ``../shared/data``): all 12 studies x 25 trials;
* Yahoo-size synthetic data (``atrec.synthetic.YAHOO_SIZE``; the licensed Yahoo! R3 is not
  here): by default only the item propensity, without and with AT, 25 trials each, and the
  six propensities are extrapolated from it (x 6, printed as such). A trial's time depends
  mostly on the ``dim`` TPE picks (5..50), and a whole study samples the dims as the real ones
  do, so the extrapolation is fair but not exact; the propensity changes only the weights.
  ``--yahoo-full`` runs all 12 studies.

Studies with AT are timed only when ``atrec.at`` provides the AT learner; otherwise they are
reported as not run. Target (issue 5): the whole tuning in under 10 minutes on 2 cores.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from atrec.names import PROPENSITIES
from atrec.tuning import DEFAULT_TRIALS, TuneRequest, WorkerSettings, run_study, tune

SHARED = Path(os.environ.get("ATREC_SHARED_DATA")
              or Path(__file__).resolve().parents[2] / "shared" / "data")
TARGET_S = 600.0


def _coat():
    from atrec.datasets import download
    from atrec.preprocess import preprocess

    os.environ["ATREC_DATA_DIR"] = tempfile.mkdtemp(prefix="atrec-bench-")
    download("coat", source=SHARED / "coat", quiet=True)
    return preprocess("coat", quiet=True)


def _yahoo_size():
    from dataclasses import replace

    from atrec.synthetic import YAHOO_SIZE, make_synthetic

    data = make_synthetic(**YAHOO_SIZE, seed=0).data
    return replace(data, name="yahoo")


def _at_available(data) -> bool:
    """Whether one AT run works here (``atrec.at`` may not have landed yet); costs one run."""
    from atrec.experiment import validation_loss
    from atrec.params import HyperParams

    try:
        validation_loss(data, "uniform", True, HyperParams(5, 1e-3, 0.1))
    except (AttributeError, ImportError, TypeError) as exc:
        print(f"  with AT: not run ({type(exc).__name__}: {exc})")
        return False
    return True


def optuna_overhead(folder: str, trials: int = 50) -> float:
    """Seconds per trial that Optuna and SQLite add around a free objective."""
    start = time.perf_counter()
    run_study("overhead", lambda p: p.lam, True, trials, f"sqlite:///{folder}/overhead.db")
    return (time.perf_counter() - start) / trials


def time_studies(label: str, data, propensities, folder: str, at_options) -> tuple[float, int]:
    """Tune ``propensities`` x ``at_options`` on ``data``; print per study; (seconds, trials)."""
    request = TuneRequest((data.name,), tuple(propensities), tuple(at_options),
                          storage=f"sqlite:///{folder}/{label}.db", worker=WorkerSettings())
    start = time.perf_counter()
    outcomes = tune(request, export_path=Path(folder) / f"{label}-tuned.yaml",
                    loader=lambda name: data)
    total = time.perf_counter() - start
    for o in outcomes:
        p = o.best_params
        print(f"  {o.study:<28} {o.ran:3d} trials {o.seconds:8.1f} s   best {o.best_value:.4f} "
              f"(dim {p.dim}, lam {p.lam:.2g}{'' if p.epsilon is None else f', eps {p.epsilon:.2g}'})")
    return total, sum(o.ran for o in outcomes)


def main(argv: list[str]) -> None:
    yahoo = PROPENSITIES if "--yahoo-full" in argv else ("item",)
    folder = tempfile.mkdtemp(prefix="atrec-bench-tune-")
    print(f"Optuna + SQLite per trial (free objective): {optuna_overhead(folder) * 1000:.0f} ms")

    estimate, missing = 0.0, 0
    for label, loader, propensities in (("coat", _coat, PROPENSITIES),
                                        ("yahoo-size", _yahoo_size, yahoo)):
        data = loader()
        options = [False] + ([True] if _at_available(data) else [])
        print(f"{label}: {len(propensities) * len(options)} studies x {DEFAULT_TRIALS} trials")
        seconds, ran = time_studies(label, data, propensities, folder, options)
        studies = len(PROPENSITIES) * len(options)
        scaled = seconds * len(PROPENSITIES) / len(propensities)
        measured = len(propensities) == len(PROPENSITIES)
        print(f"{label}: {seconds:.1f} s for {ran} trials ({seconds / max(ran, 1):.2f} s/trial); "
              f"{studies} studies x {DEFAULT_TRIALS} trials {'=' if measured else '~'} "
              f"{scaled / 60:.1f} min ({'measured' if measured else 'extrapolated x6 from item'})")
        estimate += scaled
        missing += 2 * len(PROPENSITIES) - studies
    print(f"whole tuning ({24 - missing} of 24 studies x {DEFAULT_TRIALS} trials, 2 cores): "
          f"~{estimate / 60:.1f} min against a target of {TARGET_S / 60:.0f} min"
          + (f"; the {missing} studies with AT were not run" if missing else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
