"""Table 1 in the paper's layout, and the published Table 1 to compare with.

:func:`table1_rows`: rows dataset x propensity (Yahoo, then Coat; propensities in the paper's
order), columns MAE, MSE, nDCG@3, each without and with AT; the better of each pair is marked.
:func:`paper_table`: the paper's numbers, for ``--compare paper`` and ``atrec check``.
"""

from __future__ import annotations

import csv
import math
from importlib import resources

from atrec.errors import AtrecError
from atrec.evaluation.summary import Summary
from atrec.names import PAPER_METRICS, TABLE_DATASETS
from atrec.propensity.registry import propensity_label, table1_propensities
from atrec.reporting.common import (
    DIGITS,
    better_pair,
    column_name,
    dataset_label,
    mark,
    marker_name,
    ndcg_metrics,
    signed,
)
from atrec.reporting.latex import latex_escape
from atrec.reporting.tables import FORMATS

COMPARE_CHOICES = ("paper",)


def paper_table() -> dict[tuple[str, str, bool], dict[str, float]]:
    """Table 1 of the paper: ``(dataset, propensity, with_at) -> {mae, mse, ndcg3_paper}``.

    Read from ``atrec/resources/paper_table1.csv`` (transcribed from Saito, SIGIR 2020, Table 1;
    means over 20 seeds; nDCG@3 is the authors' variant).
    """
    text = (resources.files("atrec") / "resources" / "paper_table1.csv").read_text()
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    table = {}
    for row in csv.DictReader(lines):
        key = (row["dataset"], row["propensity"], row["with_at"].strip().lower() == "true")
        table[key] = {m: float(row[m]) for m in PAPER_METRICS}
    return table


def cell_text(mean: float | None, sd: float | None, better: bool, paper: float | None,
              metric: str, fmt: str, std: bool, compare: bool) -> str:
    """One cell: the mean (``-`` when missing), marked when ``better``, ``± sd`` with ``std``,
    ``(paper x, +diff)`` with ``compare``."""
    d = DIGITS[metric]
    text = "-" if mean is None else f"{mean:.{d}f}"
    if better:
        text = mark(text, fmt)
    if std and mean is not None and sd is not None and math.isfinite(sd):
        plus_minus = "$\\pm$" if fmt == "latex" else "±"
        text += f" {plus_minus} {sd:.{d}f}"
    if compare:
        if paper is None:
            text += " (paper -)"
        elif mean is None:
            text += f" (paper {paper:.{d}f})"
        else:
            text += f" (paper {paper:.{d}f}, {signed(mean - paper, d)})"
    return text


def table1_rows(summary: Summary, fmt: str = "table", std: bool = False, ndcg: str = "paper",
                compare: str | None = None) -> tuple[list[dict], list[str]]:
    """Rows and column names of Table 1 for ``summary`` in format ``fmt``.

    Text formats get one string per cell (mean, the better of each pair marked: ``**bold**`` in
    markdown, ``\\textbf{}`` in LaTeX (labels escaped), a trailing ``*`` in table/csv; ``± sd`` with ``std``;
    ``(paper x, +diff)`` with ``compare="paper"``; ``-`` when missing). ``json`` gets raw numbers
    with keys ``<metric>_<without|with_at>[_sd|_n|_better|_paper|_diff]``.
    """
    if fmt not in FORMATS:
        raise AtrecError(f"unknown format '{fmt}': choose from {', '.join(FORMATS)}")
    if compare not in (None, *COMPARE_CHOICES):
        raise AtrecError(f"unknown comparison '{compare}': choose from "
                         f"{', '.join(COMPARE_CHOICES)}")
    metrics = ("mae", "mse", *ndcg_metrics(ndcg))
    published = paper_table() if compare else {}
    rows, columns = [], []
    for dataset in (d for d in TABLE_DATASETS if d in summary.datasets):
        for propensity in table1_propensities():
            labels = (dataset_label(dataset, summary.synthetic.get(dataset)),
                      propensity_label(propensity))
            if fmt == "latex":
                labels = tuple(latex_escape(t) for t in labels)
            row = ({"dataset": dataset, "propensity": propensity} if fmt == "json" else
                   {"data": labels[0], "propensity": labels[1]})
            if fmt == "json" and dataset in summary.synthetic:
                row["synthetic_data"] = summary.synthetic[dataset]
            for metric in metrics:
                cells = [summary.cell(dataset, propensity, at, metric) for at in (False, True)]
                means = [c.mean if c is not None and c.n else None for c in cells]
                marks = better_pair(metric, *means)
                for at, cell, mean, better in zip((False, True), cells, means, marks):
                    paper = published.get((dataset, propensity, at), {}).get(metric)
                    if fmt == "json":
                        key = f"{metric}_{'with_at' if at else 'without'}"
                        row[key] = mean
                        row[f"{key}_better"] = better
                        row[f"{key}_n"] = cell.n if cell is not None else 0
                        if std:
                            row[f"{key}_sd"] = cell.sd if cell is not None else None
                        if compare:
                            row[f"{key}_paper"] = paper
                            row[f"{key}_diff"] = (mean - paper if mean is not None
                                                  and paper is not None else None)
                    else:
                        row[column_name(metric, at, ndcg)] = cell_text(
                            mean, cell.sd if cell is not None else None, better, paper, metric,
                            fmt, std, bool(compare))
            rows.append(row)
            if not columns:
                columns = list(row)
    return rows, columns


def seeds_text(ns: list[int]) -> str:
    """``5`` or ``3-5``: the range of seed counts over cells."""
    return f"{min(ns)}" if min(ns) == max(ns) else f"{min(ns)}-{max(ns)}"


def table1_legend(summary: Summary, fmt: str) -> str:
    """The line under Table 1: seeds, parameter set, what the mark means."""
    seeds = seeds_text([c.n for c in summary.cells.values()])
    text = (f"Means over {seeds} seeds (params: {summary.params}); {marker_name(fmt)} marks the "
            f"better of w/o and w/ AT (lower MAE/MSE, higher nDCG@3); - means no results.")
    return f"% {text}" if fmt == "latex" else text
