"""Tuning repeated on several validation splits (``atrec tune --splits N``; docs/protocol.md,
"Tuning on several splits").

One study tunes a configuration on one split, so its best value is the best of many noisy
measurements on that split: how much of the choice is the split's is unknown. With ``N``
splits, the configuration is tuned ``N`` times, on the splits of seeds :data:`TUNING_SEED`,
``TUNING_SEED + 1``, ... (:func:`split_seeds`), each its own resumable study
(:func:`atrec.tuning.configs.split_study_name`); the seed is the run's seed, so it draws the
split and the model's initialisation. Then:

* **the spread**: each split's best value and best values, and the min, max and sd (sample,
  ``ddof=1``) of the best values;
* **one configuration exported, by the mean rule** (:data:`SPLIT_RULE`): every split's winner is
  measured on every other split (at most ``N * (N - 1)`` extra runs; a winner whose values a
  split's study already holds as a COMPLETE trial, such as the shared first trial, costs no
  run), and the winner whose objective averaged over the ``N`` splits is lowest is exported
  (ties: the earlier split). Averaging over splits picks a configuration that is good on the
  split-to-split variation rather than on one split's noise; the median split's winner would
  cost no run but would still be chosen on one split.

The extra measurements are kept in the measured split's study (a study user attribute per
configuration, :data:`CROSS_ATTR`), so a re-run, or another worker, runs none of them again.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from atrec.fileio import atomic_write_text
from atrec.params.lookup import HyperParams
from atrec.results.tuning_spread import read_spreads
from atrec.run_settings import TUNING_SEED
from atrec.tuning.storage import file_lock
from atrec.tuning.study import Objective, StudyOutcome, quiet_optuna

SPLIT_RULE = "mean"     # the exported configuration: lowest objective averaged over the splits
CROSS_ATTR = "cross "   # prefix of a study user attribute: another split's winner measured here


def split_seeds(n: int) -> tuple[int, ...]:
    """The run seeds of ``n`` validation splits: ``TUNING_SEED, TUNING_SEED + 1, ...``; the first
    is the single-split tuning's, so ``--splits N`` extends the study a plain tune made."""
    if int(n) != n or n < 1:
        raise ValueError(f"splits must be a positive integer, got {n!r}")
    return tuple(TUNING_SEED + k for k in range(int(n)))


@dataclass(frozen=True)
class SplitSpread:
    """The studies of one configuration on ``len(seeds)`` splits.

    ``values[i][j]``: split ``i``'s best configuration measured on split ``j`` (``values[i][i]``
    its own best value); ``chosen``: the index of the exported winner (:data:`SPLIT_RULE`).
    """

    seeds: tuple[int, ...]
    studies: tuple[str, ...]
    params: tuple[dict, ...]
    values: tuple[tuple[float, ...], ...]
    chosen: int
    failed: tuple[str | None, ...]

    @property
    def best_values(self) -> tuple[float, ...]:
        return tuple(self.values[i][i] for i in range(len(self.seeds)))

    @property
    def means(self) -> tuple[float, ...]:
        return tuple(statistics.fmean(row) for row in self.values)

    def summary(self) -> dict:
        """Min, max and sd (``ddof=1``) of the splits' best values."""
        best = self.best_values
        return {"min": min(best), "max": max(best), "sd": statistics.stdev(best)}

    def entry(self) -> dict:
        """What the tuned parameter file records beside the exported values."""
        return {"n": len(self.seeds), "seeds": list(self.seeds), "rule": SPLIT_RULE,
                "chosen_seed": self.seeds[self.chosen],
                "best_values": [float(v) for v in self.best_values],
                "values": [float(v) for v in self.values[self.chosen]],
                **self.summary()}

    def record(self, outcome: StudyOutcome, protocol: str) -> dict:
        """The full record of :mod:`atrec.results.tuning_spread` (every split's winner)."""
        return {"dataset": outcome.dataset, "method": outcome.method,
                "propensity": outcome.propensity, "with_at": outcome.with_at,
                "protocol": protocol, "trials": outcome.target, "rule": SPLIT_RULE,
                "chosen_seed": self.seeds[self.chosen], **self.summary(),
                "splits": [{"seed": s, "study": st, "best_value": float(v[i]), "params": p,
                            "values": [float(x) for x in v], "mean": m, "failed": f}
                           for i, (s, st, p, v, m, f) in enumerate(zip(
                               self.seeds, self.studies, self.params, self.values,
                               self.means, self.failed))],
                "updated": datetime.now(UTC).isoformat(timespec="seconds")}


def _key(params: dict) -> str:
    return CROSS_ATTR + json.dumps(params, sort_keys=True)


def measured(study, params: dict, objective: Objective) -> float:
    """``params`` measured by ``objective`` on the split of ``study`` (an Optuna study): the
    value of a COMPLETE trial of the study at exactly these values, else the one stored in the
    study's user attribute ``CROSS_ATTR + values``, else a new run, stored there."""
    from optuna.trial import TrialState  # about 1 s to import: only where a study is used

    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if t.params == params and t.value is not None:
            return float(t.value)
    key = _key(params)
    stored = study.user_attrs.get(key)
    if stored is not None:
        return float(stored)
    value = float(objective(HyperParams.from_values(dict(params))))
    study.set_user_attr(key, value)
    return value


def combine(outcomes: list[StudyOutcome], evaluate: Callable[[int, int], float]) -> StudyOutcome:
    """One outcome for the configuration from its split studies' ``outcomes`` (in seed order).

    ``evaluate(i, j)``: split ``i``'s best values measured on split ``j`` (:func:`measured`).
    The result is the first split's outcome carrying the winner of :data:`SPLIT_RULE`: its
    values, its mean over the splits as ``best_value``, and ``spread`` set; ``failed`` when any
    split's study failed (a configuration that fails on one split is not shipped), or no split
    has a best trial.
    """
    start = time.perf_counter()
    first = outcomes[0]
    total = replace(first, ran=sum(o.ran for o in outcomes),
                    complete=min(o.complete for o in outcomes),
                    seconds=sum(o.seconds for o in outcomes))
    if any(o.best_params is None for o in outcomes):
        total.failed = total.failed or "a split's study has no COMPLETE trial"
        return total
    n = len(outcomes)
    values = tuple(tuple(outcomes[i].best_value if i == j else evaluate(i, j) for j in range(n))
                   for i in range(n))
    means = [statistics.fmean(row) for row in values]
    chosen = min(range(n), key=lambda i: (means[i], i))
    spread = SplitSpread(seeds=tuple(o.seed for o in outcomes),
                         studies=tuple(o.study for o in outcomes),
                         params=tuple(o.best_params.as_dict() for o in outcomes),
                         values=values, chosen=chosen,
                         failed=tuple(o.failed for o in outcomes))
    win = outcomes[chosen]
    total.best_params, total.best_value, total.best_trial = (win.best_params, means[chosen],
                                                              win.best_trial)
    total.spread = spread
    broken = [f"split seed {o.seed}: {o.failed}" for o in outcomes if o.failed]
    total.failed = "; ".join(broken) or None
    total.seconds += time.perf_counter() - start
    return total


def cross_evaluator(outcomes: list[StudyOutcome], storage,
                    objective_for: Callable[[int], Objective]):
    """``evaluate(i, j)`` for :func:`combine`: split ``i``'s winner measured on split ``j``'s
    study (``storage``: an opened Optuna storage), with the objective ``objective_for(seed)``."""
    import optuna  # about 1 s to import: only where a study is used

    def evaluate(i: int, j: int) -> float:
        with quiet_optuna():
            study = optuna.load_study(study_name=outcomes[j].study, storage=storage)
            return measured(study, outcomes[i].best_params.as_dict(),
                            objective_for(outcomes[j].seed))

    return evaluate


def save_spreads(outcomes: list[StudyOutcome], path: Path, protocol: str) -> Path | None:
    """Merge the records of ``outcomes`` that have a ``spread`` into ``path`` (one JSON mapping
    ``study -> record``, written whole under a file lock); ``None`` when none has one."""
    records = {o.study: o.spread.record(o, protocol) for o in outcomes if o.spread is not None}
    if not records:
        return None
    with file_lock(path.with_name(path.name + ".lock")):
        table = read_spreads(path)
        table.update(records)
        atomic_write_text(path, json.dumps(table, indent=1, sort_keys=True) + "\n")
    return path


def spread_lines(outcomes: list[StudyOutcome]) -> list[str]:
    """One line per configuration tuned on several splits, for the closing notes of ``atrec
    tune``: the splits' best values, their spread, and which winner was exported."""
    lines = []
    for o in outcomes:
        s = o.spread
        if s is None:
            continue
        spread = s.summary()
        best = ", ".join(f"{seed}: {v:.4f}" for seed, v in zip(s.seeds, s.best_values))
        lines.append(f"{o.study}: best per split {best} (min {spread['min']:.4f}, max "
                     f"{spread['max']:.4f}, sd {spread['sd']:.4f}); exported split "
                     f"{s.seeds[s.chosen]}'s winner, mean {o.best_value:.4f} over the "
                     f"{len(s.seeds)} splits")
    return lines
