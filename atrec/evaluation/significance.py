"""Paired tests of with-AT against without-AT, with a Holm correction over the whole table.

For each (dataset, propensity, metric) the two configurations are paired by seed: seed ``s``
uses the same data split with and without AT, so the per-seed differences
``d_s = value_with_AT(s) - value_without_AT(s)`` (over the seeds both have) are tested:

* paired t-test (``scipy.stats.ttest_rel``), H0: mean of d is 0;
* Wilcoxon signed-rank test (``scipy.stats.wilcoxon``), H0: d is symmetric about 0.

All differences zero (identical results, e.g. shared hyperparameters and seeds) means no evidence
of a difference: both p-values are set to 1. Fewer than two shared seeds: not tested (NaN).

Each test's p-values are adjusted by Holm's step-down method (Holm 1979) over all tested rows
of the table, so ``*`` (adjusted p < 0.05) controls the family-wise error rate of the table.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from atrec.propensity.registry import table1_propensities
from atrec.evaluation.summary import LOWER_IS_BETTER, Summary

ALPHA = 0.05
MARK = "*"
DEFAULT_METRICS = ("mae", "mse", "ndcg3_paper")


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order.

    With the ``m`` finite p-values sorted ascending, ``p_(1) <= ... <= p_(m)``, the adjusted
    value of ``p_(i)`` is ``max_{j <= i} min(1, (m - j + 1) * p_(j))``. A hypothesis is rejected
    at level alpha when its adjusted p-value is below alpha, which is Holm's step-down rule.
    NaN entries (untested rows) stay NaN and do not count in ``m``.
    """
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"pvalues must be one-dimensional, got shape {p.shape}")
    finite = np.flatnonzero(np.isfinite(p))
    if np.any((p[finite] < 0) | (p[finite] > 1)):
        raise ValueError(f"p-values must lie in [0, 1], got {p[finite].tolist()}")
    out = np.full(p.shape, math.nan)
    m = len(finite)
    running = 0.0
    for rank, idx in enumerate(finite[np.argsort(p[finite], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[idx]))
        out[idx] = running
    return out.tolist()


@dataclass(frozen=True)
class PairedTest:
    """The paired comparison of one (dataset, propensity, metric).

    ``mean_diff`` is the mean of ``with AT - without AT`` over the ``n`` shared seeds;
    ``at_better`` says whether that difference favours AT (negative for MAE/MSE, positive for
    nDCG). ``*_holm`` are Holm-adjusted p-values over the whole table.
    """

    dataset: str
    propensity: str
    metric: str
    n: int
    mean_without: float
    mean_with: float
    mean_diff: float
    at_better: bool | None
    t_stat: float
    t_p: float
    w_stat: float
    w_p: float
    t_p_holm: float = math.nan
    w_p_holm: float = math.nan

    @property
    def t_significant(self) -> bool:
        return bool(self.t_p_holm < ALPHA)

    @property
    def w_significant(self) -> bool:
        return bool(self.w_p_holm < ALPHA)

    def as_row(self, machine: bool = False) -> dict:
        """A table row; ``machine=True`` adds the test statistics and keeps booleans instead of
        ``*`` markers."""
        row = {
            "dataset": self.dataset, "propensity": self.propensity, "metric": self.metric,
            "n": self.n, "w/o AT": self.mean_without, "w/ AT": self.mean_with,
            "diff (w/ - w/o)": self.mean_diff, "AT better": self.at_better,
        }
        if machine:
            row.update({"t": self.t_stat, "p (t)": self.t_p, "p Holm (t)": self.t_p_holm,
                        "significant (t)": self.t_significant, "W": self.w_stat,
                        "p (Wilcoxon)": self.w_p, "p Holm (Wilcoxon)": self.w_p_holm,
                        "significant (Wilcoxon)": self.w_significant})
        else:
            row.update({"p (t)": self.t_p, "p Holm (t)": self.t_p_holm,
                        "sig (t)": MARK if self.t_significant else "",
                        "p (Wilcoxon)": self.w_p, "p Holm (Wilcoxon)": self.w_p_holm,
                        "sig (Wilcoxon)": MARK if self.w_significant else ""})
        return row


def paired_test(dataset: str, propensity: str, metric: str, without: dict[int, float],
                with_at: dict[int, float]) -> PairedTest | None:
    """Test one pair of cells given as ``{seed: value}``; ``None`` when they share no seed."""
    shared = sorted(set(without) & set(with_at))
    if not shared:
        return None
    a = np.array([without[s] for s in shared])
    b = np.array([with_at[s] for s in shared])
    diff = b - a
    mean_diff = float(diff.mean())
    lower = LOWER_IS_BETTER[metric]
    at_better = None if mean_diff == 0 else (mean_diff < 0) == lower
    t_stat = t_p = w_stat = w_p = math.nan
    if len(shared) >= 2:
        if np.all(diff == 0):
            t_stat, t_p, w_stat, w_p = 0.0, 1.0, 0.0, 1.0
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                t = stats.ttest_rel(b, a)
                w = stats.wilcoxon(b, a)
            t_stat, t_p = float(t.statistic), float(t.pvalue)
            w_stat, w_p = float(w.statistic), float(w.pvalue)
    return PairedTest(dataset, propensity, metric, len(shared), float(a.mean()), float(b.mean()),
                      mean_diff, at_better, t_stat, t_p, w_stat, w_p)


def significance_table(summary: Summary,
                       metrics: Sequence[str] = DEFAULT_METRICS) -> list[PairedTest]:
    """Paired tests for every (dataset, propensity, metric) with both cells present.

    Order: the summary's datasets, then propensities, then ``metrics``. The Holm correction runs
    over every row returned (separately for the t and the Wilcoxon p-values).
    """
    tests: list[PairedTest] = []
    for dataset in summary.datasets:
        for propensity in table1_propensities():
            for metric in metrics:
                without = summary.cell(dataset, propensity, False, metric)
                with_at = summary.cell(dataset, propensity, True, metric)
                if without is None or with_at is None:
                    continue
                test = paired_test(dataset, propensity, metric,
                                   dict(zip(without.seeds, without.values)),
                                   dict(zip(with_at.seeds, with_at.values)))
                if test is not None:
                    tests.append(test)
    t_holm = holm([t.t_p for t in tests])
    w_holm = holm([t.w_p for t in tests])
    return [replace(t, t_p_holm=th, w_p_holm=wh) for t, th, wh in zip(tests, t_holm, w_holm)]
