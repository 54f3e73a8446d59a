"""Paired tests over seeds, with a Holm correction over a whole table.

Two tables use them: with-AT against without-AT (:func:`significance_table`, the report), and
every method against MF-IPS with the same propensity (:func:`method_tests`, the benchmark
table). Two cells are paired by seed: seed ``s`` uses the same data split in both, so the
per-seed differences ``d_s = b(s) - a(s)`` (over the seeds both have; :func:`compare_paired`)
are tested:

* paired t-test (``scipy.stats.ttest_rel``), H0: mean of d is 0;
* Wilcoxon signed-rank test (``scipy.stats.wilcoxon``), H0: d is symmetric about 0.

All differences zero (identical results, e.g. shared hyperparameters and seeds) means no evidence
of a difference: both p-values are set to 1. Fewer than two shared seeds: not tested (NaN).

Each test's p-values are adjusted by Holm's step-down method (Holm 1979) over all tested rows
of the table (:func:`with_holm`), so ``*`` (adjusted p < 0.05) controls the family-wise error
rate of the table.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from atrec.evaluation.registry import DIRECTIONS as LOWER_IS_BETTER
from atrec.evaluation.summary import Summary
from atrec.names import DEFAULT_METHOD, NO_PROPENSITY
from atrec.propensity.registry import table1_propensities

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
class Paired:
    """The paired comparison of ``b`` against ``a`` over the ``n`` seeds both have.

    ``mean_diff`` is the mean of ``b - a``; ``b_better`` says whether it favours ``b`` (negative
    for MAE/MSE, positive for nDCG; ``None`` when zero). ``dropped`` lists the seeds that only
    one side has (left out of the test).
    """

    n: int
    mean_a: float
    mean_b: float
    mean_diff: float
    b_better: bool | None
    t_stat: float
    t_p: float
    w_stat: float
    w_p: float
    dropped: tuple[int, ...] = ()


def compare_paired(a: Mapping[int, float], b: Mapping[int, float],
                   metric: str) -> Paired | None:
    """Paired t and Wilcoxon tests of ``b`` against ``a`` (each ``{seed: value}``) over the seeds
    both have; ``None`` when they share no seed."""
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    x = np.array([a[s] for s in shared])
    y = np.array([b[s] for s in shared])
    diff = y - x
    mean_diff = float(diff.mean())
    b_better = None if mean_diff == 0 else (mean_diff < 0) == LOWER_IS_BETTER[metric]
    t_stat = t_p = w_stat = w_p = math.nan
    if len(shared) >= 2:
        if np.all(diff == 0):
            t_stat, t_p, w_stat, w_p = 0.0, 1.0, 0.0, 1.0
        else:
            from scipy import stats  # 1.5 s to import: only where a test is run

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                t = stats.ttest_rel(y, x)
                w = stats.wilcoxon(y, x)
            t_stat, t_p = float(t.statistic), float(t.pvalue)
            w_stat, w_p = float(w.statistic), float(w.pvalue)
    dropped = tuple(sorted(set(a) ^ set(b)))
    return Paired(len(shared), float(x.mean()), float(y.mean()), mean_diff, b_better,
                  t_stat, t_p, w_stat, w_p, dropped)


class HolmTested:
    """A row with ``t_p_holm`` and ``w_p_holm`` (set by :func:`with_holm`)."""

    t_p_holm: float
    w_p_holm: float

    @property
    def t_significant(self) -> bool:
        return bool(self.t_p_holm < ALPHA)

    @property
    def w_significant(self) -> bool:
        return bool(self.w_p_holm < ALPHA)


Tested = TypeVar("Tested", bound=HolmTested)


def with_holm(tests: Sequence[Tested]) -> list[Tested]:
    """``tests`` (dataclasses with ``t_p`` and ``w_p``) with their Holm-adjusted p-values set,
    the correction running over all of them (separately for the t and the Wilcoxon tests)."""
    t_holm = holm([t.t_p for t in tests])
    w_holm = holm([t.w_p for t in tests])
    return [replace(t, t_p_holm=th, w_p_holm=wh) for t, th, wh in zip(tests, t_holm, w_holm)]


@dataclass(frozen=True)
class PairedTest(HolmTested):
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
    p = compare_paired(without, with_at, metric)
    if p is None:
        return None
    return PairedTest(dataset, propensity, metric, p.n, p.mean_a, p.mean_b, p.mean_diff,
                      p.b_better, p.t_stat, p.t_p, p.w_stat, p.w_p)


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
    return with_holm(tests)


@dataclass(frozen=True)
class MethodTest(HolmTested):
    """The paired comparison of one method with the baseline method in one configuration.

    ``mean_diff`` is the mean of ``method - baseline`` over the ``n`` shared seeds;
    ``method_better`` says whether it favours the method. The baseline runs with
    ``baseline_propensity`` (:func:`baseline_propensity`). ``dropped`` lists the seeds only one
    side has (left out of the test). ``*_holm``: Holm-adjusted over the whole family.
    """

    dataset: str
    method: str
    propensity: str
    baseline_propensity: str
    with_at: bool
    metric: str
    n: int
    mean_baseline: float
    mean_method: float
    mean_diff: float
    method_better: bool | None
    t_stat: float
    t_p: float
    w_stat: float
    w_p: float
    dropped: tuple[int, ...] = ()
    t_p_holm: float = math.nan
    w_p_holm: float = math.nan


def baseline_propensity(propensity: str) -> str:
    """The baseline's propensity to compare a row with: the same one, or ``uniform`` (constant
    weights: plain MF) for a method that uses none (:data:`~atrec.names.NO_PROPENSITY`)."""
    return "uniform" if propensity == NO_PROPENSITY else propensity


def method_tests(summaries: Mapping[str, Summary], rows: Sequence[tuple[str, str, str]],
                 metrics: Sequence[str] = DEFAULT_METRICS,
                 baseline: str = DEFAULT_METHOD,
                 pair: Callable[[str], str] = baseline_propensity) -> list[MethodTest]:
    """Paired tests of every row's method against ``baseline`` (default MF-IPS).

    ``summaries`` maps a method name to its :class:`Summary` (one per base method, with and
    without AT); ``rows`` lists ``(dataset, method, propensity)``, those of ``baseline`` itself
    being skipped. For each row, each AT option (without, then with) and each metric, the
    method's cell is paired by seed with the baseline's cell of the same dataset, AT option and
    ``pair(propensity)`` (default :func:`baseline_propensity`; the binary protocols pair
    with the same propensity, MF's ``none``). Pairs where either cell is missing or no seed is shared are
    left out. The Holm correction runs over every test returned (the whole family).
    """
    base = summaries.get(baseline)
    tests: list[MethodTest] = []
    for dataset, method, propensity in rows:
        summary = summaries.get(method)
        if method == baseline or base is None or summary is None:
            continue
        other = pair(propensity)
        for with_at in (False, True):
            for metric in metrics:
                mine = summary.cell(dataset, propensity, with_at, metric)
                theirs = base.cell(dataset, other, with_at, metric)
                if mine is None or theirs is None:
                    continue
                p = compare_paired(dict(zip(theirs.seeds, theirs.values)),
                                   dict(zip(mine.seeds, mine.values)), metric)
                if p is not None:
                    tests.append(MethodTest(dataset, method, propensity, other, with_at, metric,
                                            p.n, p.mean_a, p.mean_b, p.mean_diff, p.b_better,
                                            p.t_stat, p.t_p, p.w_stat, p.w_p, p.dropped))
    return with_holm(tests)
