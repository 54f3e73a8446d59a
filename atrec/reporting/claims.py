"""The paper's claims, evaluated on the user's results.

:func:`evaluate_claims` gives each of the five claims as "holds", "does not hold" or "not
evaluated (missing results)", with the numbers behind the verdict; :func:`claims_text` writes
them in an output format.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from atrec.evaluation.summary import Summary
from atrec.propensity.registry import propensity_label, table1_propensities
from atrec.reporting.common import (
    DIGITS,
    METRIC_LABELS,
    better_pair,
    config_label,
    dataset_label,
    train_hint,
)
from atrec.reporting.tables import render

HOLDS, FAILS, MISSING = "holds", "does not hold", "not evaluated (missing results)"
TRACE_WINDOW = 10


@dataclass(frozen=True)
class Claim:
    """One claim of the paper, evaluated on the user's results.

    ``key`` is the claim number (1..5), ``status`` one of :data:`HOLDS`, :data:`FAILS`,
    :data:`MISSING`; ``evidence`` gives the numbers behind the verdict; ``datasets`` are those the
    claim needs.
    """

    key: int
    statement: str
    status: str
    evidence: str
    datasets: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.status not in (HOLDS, FAILS, MISSING):
            raise ValueError(f"status must be one of {HOLDS!r}, {FAILS!r}, {MISSING!r}, "
                             f"got {self.status!r}")

    def as_row(self) -> dict:
        return {"claim": self.key, "statement": self.statement, "status": self.status,
                "evidence": self.evidence}


def _means(summary: Summary, dataset: str, metric: str, with_at: bool) -> dict[str, float | None]:
    return {p: summary.mean(dataset, p, with_at, metric) for p in table1_propensities()}


def _missing_claim(key: int, statement: str, datasets: tuple[str, ...], missing: list[str],
                   summary: Summary) -> Claim:
    absent = [d for d in datasets if not summary.has_results(d)]
    if absent:
        evidence = "; ".join(f"no results for {dataset_label(d)}: run {train_hint(d)}"
                             for d in absent)
    else:
        evidence = "no results for " + ", ".join(missing[:4]) + (
            f" and {len(missing) - 4} more" if len(missing) > 4 else "")
    return Claim(key, statement, MISSING, evidence, datasets)


def _missing_cells(summary: Summary, dataset: str, metrics: Sequence[str],
                   ats: Sequence[bool]) -> list[str]:
    return [f"{config_label(dataset, p, at)} ({METRIC_LABELS[m]})"
            for p in table1_propensities() for at in ats for m in metrics
            if summary.mean(dataset, p, at, m) is None]


def _at_improves_everywhere(summary: Summary, key: int, statement: str, dataset: str,
                            metrics: Sequence[str]) -> Claim:
    """Claims (1) and (4): AT improves ``metrics`` on ``dataset`` for every propensity."""
    missing = _missing_cells(summary, dataset, metrics, (False, True))
    if missing:
        return _missing_claim(key, statement, (dataset,), missing, summary)
    parts, ok = [], True
    for metric in metrics:
        without = _means(summary, dataset, metric, False)
        with_at = _means(summary, dataset, metric, True)
        better = {p: better_pair(metric, without[p], with_at[p])[1] for p in table1_propensities()}
        ok = ok and all(better.values())
        d = DIGITS[metric]
        cells = ", ".join(f"{propensity_label(p)} {without[p]:.{d}f}->{with_at[p]:.{d}f}"
                          f"{'' if better[p] else ' (not improved)'}" for p in table1_propensities())
        parts.append(f"{METRIC_LABELS[metric]} w/o->w/ AT: {cells}; "
                     f"improved for {sum(better.values())} of {len(table1_propensities())}")
    return Claim(key, statement, HOLDS if ok else FAILS, " | ".join(parts), (dataset,))


def _claim2(summary: Summary) -> Claim:
    statement = "Without AT, NB (true) is far best on Yahoo (lowest MAE and MSE of the six)."
    missing = _missing_cells(summary, "yahoo", ("mae", "mse"), (False,))
    if missing:
        return _missing_claim(2, statement, ("yahoo",), missing, summary)
    parts, ok = [], True
    for metric in ("mae", "mse"):
        means = _means(summary, "yahoo", metric, False)
        others = {p: v for p, v in means.items() if p != "nb-true"}
        runner = min(others, key=others.get)
        best = means["nb-true"] < others[runner]
        ok = ok and best
        parts.append(f"{METRIC_LABELS[metric]}: NB (true) {means['nb-true']:.3f}, best other "
                     f"{propensity_label(runner)} {others[runner]:.3f} "
                     f"(gap {others[runner] - means['nb-true']:+.3f})")
    return Claim(2, statement, HOLDS if ok else FAILS, "; ".join(parts), ("yahoo",))


def _claim3(summary: Summary) -> Claim:
    statement = ("AT shrinks the spread of Yahoo MSE across propensities "
                 "(range max - min, and sd of the six means).")
    missing = _missing_cells(summary, "yahoo", ("mse",), (False, True))
    if missing:
        return _missing_claim(3, statement, ("yahoo",), missing, summary)
    spread = {}
    for at in (False, True):
        values = np.array(list(_means(summary, "yahoo", "mse", at).values()))
        spread[at] = (float(values.max() - values.min()), float(values.std(ddof=1)))
    ok = spread[True][0] < spread[False][0] and spread[True][1] < spread[False][1]
    evidence = (f"MSE range {spread[False][0]:.3f} w/o -> {spread[True][0]:.3f} w/ AT; "
                f"sd {spread[False][1]:.3f} w/o -> {spread[True][1]:.3f} w/ AT")
    return Claim(3, statement, HOLDS if ok else FAILS, evidence, ("yahoo",))


def _claim5(summary: Summary) -> Claim:
    statement = ("Over pseudo-labelling, (a)+(b) (pseudo-label loss + discrepancy) and test MSE "
                 f"fall (mean over seeds, first vs last {TRACE_WINDOW} steps).")
    traces = [t for t in summary.ordered_traces()
              if t.n_steps >= 2 and {"pseudo_loss", "discrepancy", "test_mse"} <= set(t.values)]
    datasets = tuple(dict.fromkeys(t.dataset for t in traces)) or tuple(summary.datasets)
    if not traces:
        return Claim(5, statement, MISSING, "no AT results with pseudo-labelling traces",
                     datasets)
    parts, ok = [], True
    for key, label in (("a+b", "(a)+(b)"), ("test_mse", "test MSE")):
        firsts, lasts, rising = [], [], []
        for trace in traces:
            window = min(TRACE_WINDOW, trace.n_steps // 2)
            series = trace.series(key)
            first, last = float(series[:, :window].mean()), float(series[:, -window:].mean())
            firsts.append(first)
            lasts.append(last)
            if not last < first:
                rising.append(f"{config_label(trace.dataset, trace.propensity)} "
                              f"{first:.4f}->{last:.4f}")
        ok = ok and not rising
        text = (f"{label} falls in {len(traces) - len(rising)} of {len(traces)} AT configurations "
                f"(average first {np.mean(firsts):.4f} -> last {np.mean(lasts):.4f})")
        parts.append(text + (f"; not falling: {', '.join(rising)}" if rising else ""))
    return Claim(5, statement, HOLDS if ok else FAILS, "; ".join(parts), datasets)


def evaluate_claims(summary: Summary) -> list[Claim]:
    """The paper's claims (1)-(5) evaluated on ``summary``'s means and traces.

    1. On Yahoo, AT lowers MAE and MSE for every propensity.
    2. Without AT, NB (true) has the lowest MAE and MSE of the six propensities on Yahoo.
    3. AT shrinks the spread (max - min and sd of the six means) of Yahoo MSE across propensities.
    4. On Coat, AT raises nDCG@3 (paper variant) for every propensity.
    5. Over pseudo-labelling, (a)+(b) and A3's test MSE fall: the mean over seeds of the last
       10 steps is below that of the first 10, for every (dataset, propensity) with AT traces.

    A claim whose cells are not all present is "not evaluated (missing results)".
    """
    return [
        _at_improves_everywhere(summary, 1, "On Yahoo, AT lowers MAE and MSE for every propensity.",
                                "yahoo", ("mae", "mse")),
        _claim2(summary),
        _claim3(summary),
        _at_improves_everywhere(summary, 4, "On Coat, AT raises nDCG@3 (paper variant) for every "
                                "propensity.", "coat", ("ndcg3_paper",)),
        _claim5(summary),
    ]


def claims_text(claims: list[Claim], fmt: str) -> str:
    """The claims as text in ``fmt`` (csv and json: rows)."""
    if fmt in ("csv", "json"):
        return render([c.as_row() for c in claims], fmt)
    if fmt == "markdown":
        return "\n".join(f"- **({c.key}) {c.status}**: {c.statement}  \n  {c.evidence}"
                         for c in claims)
    if fmt == "latex":
        items = "\n".join(f"  \\item ({c.key}) \\textbf{{{c.status}}}: {c.statement} "
                          f"{c.evidence}" for c in claims)
        items = items.replace("->", "$\\to$")
        return f"\\begin{{itemize}}\n{items}\n\\end{{itemize}}"
    return "\n".join(f"({c.key}) {c.status}: {c.statement}\n    {c.evidence}" for c in claims)
