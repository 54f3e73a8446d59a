"""Mean and sd over repetitions of the relative errors of a benchmark's repetitions (binary:
:func:`atrec.semisynthetic.benchmark.repetition`; stars:
:func:`atrec.semisynthetic.stars.star_repetition`), and the orderings they show."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FormSummary:
    """One form's results over ``seeds``: ``mean`` and ``sd`` (sample sd, ``ddof = 1``; 0 for
    one repetition) of the relative error, nested as the repetitions' ``relative_error``
    (binary: ``[kind][truth][matrix][estimator]``; stars: ``[loss][matrix][estimator]``); the
    observed fraction's mean; ``matrices`` in table order."""

    form: str
    seeds: tuple[int, ...]
    matrices: tuple[str, ...]
    mean: dict
    sd: dict
    observed_fraction: float


def _over(values: list):
    """Mean and sd of the leaves of equally nested dicts ``values`` (one per repetition)."""
    if isinstance(values[0], dict):
        pairs = {k: _over([v[k] for v in values]) for k in values[0]}
        return {k: m for k, (m, _) in pairs.items()}, {k: d for k, (_, d) in pairs.items()}
    x = np.array(values, dtype=np.float64)
    return float(x.mean()), float(x.std(ddof=1)) if len(x) > 1 else 0.0


def summarize(form: str, reps: list[dict]) -> FormSummary:
    """The :class:`FormSummary` of repetition results ``reps`` (one dict per seed)."""
    if not reps:
        raise ValueError(f"no repetitions of form {form!r} to summarise")
    mean, sd = _over([r["relative_error"] for r in reps])
    return FormSummary(form, tuple(r["seed"] for r in reps), tuple(reps[0]["matrices"]), mean,
                       sd, float(np.mean([r["observed_fraction"] for r in reps])))


def ordering(summary: FormSummary, estimators=("IPS", "DR", "MRDR"), kind: str = "noisy",
             truth: str = "realised") -> dict[str, tuple[str, ...]]:
    """Per matrix, ``estimators`` from the smallest mean relative error to the largest."""
    return {m: tuple(sorted(estimators, key=lambda e: summary.mean[kind][truth][m][e]))
            for m in summary.matrices}
