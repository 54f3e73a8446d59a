"""Mean and sd over repetitions of the relative errors of :func:`atrec.semisynthetic.benchmark.repetition`,
and the orderings of estimators they show."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from atrec.semisynthetic.benchmark import PROPENSITY_KINDS, TRUTHS
from atrec.semisynthetic.estimators import ESTIMATORS


@dataclass(frozen=True)
class FormSummary:
    """One form's results over ``seeds``: ``mean[kind][truth][matrix][estimator]`` and ``sd``
    (sample sd, ``ddof = 1``; 0 for one repetition) of the relative error; the observed
    fraction's mean; ``matrices`` in table order."""

    form: str
    seeds: tuple[int, ...]
    matrices: tuple[str, ...]
    mean: dict
    sd: dict
    observed_fraction: float


def summarize(form: str, reps: list[dict]) -> FormSummary:
    """The :class:`FormSummary` of repetition results ``reps`` (one dict per seed)."""
    if not reps:
        raise ValueError(f"no repetitions of form {form!r} to summarise")
    matrices = tuple(reps[0]["matrices"])
    mean: dict = {}
    sd: dict = {}
    for kind in PROPENSITY_KINDS:
        for truth in TRUTHS:
            for m in matrices:
                for e in ESTIMATORS:
                    x = np.array([r["relative_error"][kind][truth][m][e] for r in reps])
                    mean.setdefault(kind, {}).setdefault(truth, {}).setdefault(m, {})[e] = \
                        float(x.mean())
                    sd.setdefault(kind, {}).setdefault(truth, {}).setdefault(m, {})[e] = \
                        float(x.std(ddof=1)) if len(x) > 1 else 0.0
    return FormSummary(form, tuple(r["seed"] for r in reps), matrices, mean, sd,
                       float(np.mean([r["observed_fraction"] for r in reps])))


def ordering(summary: FormSummary, estimators=("IPS", "DR", "MRDR"), kind: str = "noisy",
             truth: str = "realised") -> dict[str, tuple[str, ...]]:
    """Per matrix, ``estimators`` from the smallest mean relative error to the largest."""
    return {m: tuple(sorted(estimators, key=lambda e: summary.mean[kind][truth][m][e]))
            for m in summary.matrices}
