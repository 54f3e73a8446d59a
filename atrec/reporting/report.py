"""The report: Table 1 in the paper's layout, significance, data statistics, the paper's claims.

Everything is computed from a :class:`atrec.evaluation.summary.Summary` of the user's result records:

* :func:`table1_rows`: rows dataset x propensity (Yahoo, then Coat; propensities in the paper's
  order), columns MAE, MSE, nDCG@3, each without and with AT; the better of each pair is marked.
* :func:`atrec.evaluation.significance.significance_table`: paired tests of with vs without AT.
* data statistics from :mod:`atrec.data.datastats` (written separately; skipped if absent).
* :func:`evaluate_claims`: the paper's five claims, each "holds", "does not hold" or "not
  evaluated (missing results)", with the numbers behind the verdict.

:func:`report` puts them together in one output format and writes the figures.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

import numpy as np

from atrec.errors import AtrecError
from atrec.names import DEFAULT_METHOD
from atrec.names import TABLE_DATASETS
from atrec.propensity.registry import table1_propensities, propensity_label
from atrec.experiments.params import PUBLISHED
from atrec.evaluation.summary import EXPECTED_SEEDS, LOWER_IS_BETTER, Summary, load_summary
from atrec.reporting.tables import FORMATS, render

PAPER_METRICS = ("mae", "mse", "ndcg3_paper")
NDCG_CHOICES = ("paper", "standard", "both")
COMPARE_CHOICES = ("paper",)
DATASET_LABELS = {"yahoo": "Yahoo! R3", "coat": "Coat"}
METRIC_LABELS = {"mae": "MAE", "mse": "MSE", "ndcg3_paper": "nDCG@3",
                 "ndcg3_standard": "nDCG@3 (standard)"}
DIGITS = {"mae": 3, "mse": 3, "ndcg3_paper": 4, "ndcg3_standard": 4}
HOLDS, FAILS, MISSING = "holds", "does not hold", "not evaluated (missing results)"
TRACE_WINDOW = 10


# --------------------------------------------------------------------------------------------
# The published Table 1


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


def _config(dataset: str, propensity: str, with_at: bool | None = None) -> str:
    at = "" if with_at is None else (" with AT" if with_at else " without AT")
    return f"{DATASET_LABELS.get(dataset, dataset)} {propensity_label(propensity)}{at}"


def signed(value: float, digits: int) -> str:
    """``value`` with a sign and ``digits`` decimals, never ``-0.000`` (rounding noise)."""
    return f"{round(value, digits) + 0.0:+.{digits}f}"


def train_hint(dataset: str, propensity: str | None = None, with_at: bool | None = None) -> str:
    """The command that produces missing results."""
    parts = ["atrec train", f"--dataset {dataset}"]
    if propensity is not None:
        parts.append(f"--propensity {propensity}")
    if with_at is not None:
        parts.append("--with-at" if with_at else "--without-at")
    return " ".join(parts)


# --------------------------------------------------------------------------------------------
# The paper's claims


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
        evidence = "; ".join(f"no results for {DATASET_LABELS.get(d, d)}: run {train_hint(d)}"
                             for d in absent)
    else:
        evidence = "no results for " + ", ".join(missing[:4]) + (
            f" and {len(missing) - 4} more" if len(missing) > 4 else "")
    return Claim(key, statement, MISSING, evidence, datasets)


def _missing_cells(summary: Summary, dataset: str, metrics: Sequence[str],
                   ats: Sequence[bool]) -> list[str]:
    return [f"{_config(dataset, p, at)} ({METRIC_LABELS[m]})"
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
        better = {p: _better(metric, without[p], with_at[p])[1] for p in table1_propensities()}
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
                rising.append(f"{_config(trace.dataset, trace.propensity)} "
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


# --------------------------------------------------------------------------------------------
# Table 1


def _ndcg_metrics(ndcg: str) -> tuple[str, ...]:
    if ndcg not in NDCG_CHOICES:
        raise AtrecError(f"unknown nDCG variant '{ndcg}': choose from {', '.join(NDCG_CHOICES)}")
    return {"paper": ("ndcg3_paper",), "standard": ("ndcg3_standard",),
            "both": ("ndcg3_paper", "ndcg3_standard")}[ndcg]


def _column(metric: str, with_at: bool, ndcg: str) -> str:
    label = METRIC_LABELS[metric]
    if ndcg == "both" and metric == "ndcg3_paper":
        label = "nDCG@3 (paper)"
    return f"{label} {'w/ AT' if with_at else 'w/o AT'}"


def _better(metric: str, without: float | None, with_at: float | None) -> tuple[bool, bool]:
    """Which of (without, with AT) is better; neither on a tie or a missing value."""
    if without is None or with_at is None or without == with_at:
        return (False, False)
    at_wins = (with_at < without) == LOWER_IS_BETTER[metric]
    return (not at_wins, at_wins)


def _mark(text: str, fmt: str) -> str:
    if fmt == "markdown":
        return f"**{text}**"
    if fmt == "latex":
        return f"\\textbf{{{text}}}"
    return f"{text}*"


def _cell_text(mean: float | None, sd: float | None, better: bool, paper: float | None,
               metric: str, fmt: str, std: bool, compare: bool) -> str:
    d = DIGITS[metric]
    text = "-" if mean is None else f"{mean:.{d}f}"
    if better:
        text = _mark(text, fmt)
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
    markdown, ``\\textbf{}`` in LaTeX, a trailing ``*`` in table/csv; ``± sd`` with ``std``;
    ``(paper x, +diff)`` with ``compare="paper"``; ``-`` when missing). ``json`` gets raw numbers
    with keys ``<metric>_<without|with_at>[_sd|_n|_better|_paper|_diff]``.
    """
    if fmt not in FORMATS:
        raise AtrecError(f"unknown format '{fmt}': choose from {', '.join(FORMATS)}")
    if compare not in (None, *COMPARE_CHOICES):
        raise AtrecError(f"unknown comparison '{compare}': choose from "
                         f"{', '.join(COMPARE_CHOICES)}")
    metrics = ("mae", "mse", *_ndcg_metrics(ndcg))
    published = paper_table() if compare else {}
    rows, columns = [], []
    for dataset in (d for d in TABLE_DATASETS if d in summary.datasets):
        for propensity in table1_propensities():
            row = ({"dataset": dataset, "propensity": propensity} if fmt == "json" else
                   {"data": DATASET_LABELS[dataset], "propensity": propensity_label(propensity)})
            for metric in metrics:
                cells = [summary.cell(dataset, propensity, at, metric) for at in (False, True)]
                means = [c.mean if c is not None and c.n else None for c in cells]
                marks = _better(metric, *means)
                for at, cell, mean, mark in zip((False, True), cells, means, marks):
                    paper = published.get((dataset, propensity, at), {}).get(metric)
                    if fmt == "json":
                        key = f"{metric}_{'with_at' if at else 'without'}"
                        row[key] = mean
                        row[f"{key}_better"] = mark
                        row[f"{key}_n"] = cell.n if cell is not None else 0
                        if std:
                            row[f"{key}_sd"] = cell.sd if cell is not None else None
                        if compare:
                            row[f"{key}_paper"] = paper
                            row[f"{key}_diff"] = (mean - paper if mean is not None
                                                  and paper is not None else None)
                    else:
                        row[_column(metric, at, ndcg)] = _cell_text(
                            mean, cell.sd if cell is not None else None, mark, paper, metric,
                            fmt, std, bool(compare))
            rows.append(row)
            if not columns:
                columns = list(row)
    return rows, columns


# --------------------------------------------------------------------------------------------
# The whole report


@dataclass(frozen=True)
class ReportOutput:
    """What :func:`report` produced: the rendered ``text``, the figure files, and notices
    (incomplete cells, skipped tables or figures) for standard error."""

    text: str
    figures: tuple[Path, ...]
    notices: tuple[str, ...]


def _data_stats(datasets: Sequence[str], notices: list[str]) -> list[dict] | None:
    """Data statistics dicts of ``datasets``; ``None`` (with a notice) if they cannot be made."""
    try:
        from atrec.data.datastats import data_stats
        from atrec.data.preprocess import load_processed
    except ImportError as exc:
        notices.append(f"data statistics skipped: {exc.name} is not available in this atrec")
        return None
    out = []
    for name in datasets:
        try:
            out.append(data_stats(load_processed(name)))
        except AtrecError as exc:
            notices.append(f"data statistics of {name} skipped: {exc}")
    return out


def _stats_rows(stats: list[dict]) -> list[dict]:
    from atrec.data.datastats import stats_rows

    return stats_rows(stats)


def _format_sig_rows(tests: list, fmt: str) -> list[dict]:
    """Significance rows; text formats get strings (means 4 decimals, statistics 3 digits)."""
    rows = [t.as_row(machine=fmt == "json") for t in tests]
    if fmt == "json":
        return rows
    for row in rows:
        row["dataset"] = DATASET_LABELS.get(row["dataset"], row["dataset"])
        row["propensity"] = propensity_label(row["propensity"])
        row["metric"] = METRIC_LABELS.get(row["metric"], row["metric"])  # no "_" for LaTeX
        for key, value in row.items():
            if value is None or (isinstance(value, float) and not math.isfinite(value)):
                row[key] = "-"
            elif isinstance(value, bool):
                row[key] = "yes" if value else "no"
            elif key.startswith("diff"):
                row[key] = signed(value, 4)
            elif key in ("w/o AT", "w/ AT"):
                row[key] = f"{value:.4f}"
            elif isinstance(value, float):
                row[key] = f"{value:.3g}"
    return rows


def _claims_text(claims: list[Claim], fmt: str) -> str:
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


def _heading(title: str, fmt: str) -> str:
    return {"table": f"{title}\n{'=' * len(title)}", "markdown": f"## {title}",
            "latex": f"% {title}", "csv": f"# {title}"}[fmt]


def _legend(summary: Summary, fmt: str) -> str:
    marker = {"markdown": "bold", "latex": "bold"}.get(fmt, "*")
    ns = [c.n for c in summary.cells.values()]
    seeds = f"{min(ns)}" if min(ns) == max(ns) else f"{min(ns)}-{max(ns)}"
    text = (f"Means over {seeds} seeds (params: {summary.params}); {marker} marks the better of "
            f"w/o and w/ AT (lower MAE/MSE, higher nDCG@3); - means no results.")
    return f"% {text}" if fmt == "latex" else text


def no_results_error(summary: Summary, root: Path | None, exit_code: int) -> AtrecError:
    """The one-line error for "no results to report or check", naming other parameter sets."""
    from atrec.paths import results_dir
    from atrec.experiments.records import iter_records, record_label

    where = (results_dir() if root is None else root) / "runs"
    others = sorted({record_label(r) for r in iter_records(root)} - {summary.params})
    hint = f" (there are results for --params {', '.join(others)})" if others else ""
    scope = ", ".join(summary.datasets) if summary.datasets else "any dataset"
    method = "" if summary.method == DEFAULT_METHOD else f" and method '{summary.method}'"
    train = ("'atrec train' (or 'make reproduce')" if not method else
             f"'atrec train --method {summary.method}'")
    return AtrecError(f"no results for {scope} with params '{summary.params}'{method} under "
                      f"{where}{hint}: run {train} first", exit_code=exit_code)


def report(datasets: Sequence[str] | None = None, fmt: str = "table", std: bool = False,
           ndcg: str = "paper", compare: str | None = None, stats: bool = False,
           claims: bool = True, significance: bool = True, figures: bool = True,
           params: str = PUBLISHED, root: Path | None = None,
           expected_seeds: int = EXPECTED_SEEDS, figures_dir: Path | None = None,
           method: str = DEFAULT_METHOD) -> ReportOutput:
    """Build the report of the results under ``root`` (default: the results folder).

    Sections, in order: Table 1; the significance table (``significance``); the data statistics
    (``stats``); the paper's claims (``claims``). ``datasets`` default: those of Table 1 that have
    results. Figures 1, 3 and 4 are written under ``figures_dir`` (default
    ``<results>/figures``; ``<results>/figures/<method>`` for a method other than MF-IPS) when
    ``figures``. ``method``: whose results fill the paper's layout (default MF-IPS, the paper's
    Table 1). Raises :class:`AtrecError` when there are no results.
    """
    if fmt not in FORMATS:
        raise AtrecError(f"unknown format '{fmt}': choose from {', '.join(FORMATS)}")
    _ndcg_metrics(ndcg)
    summary = table_summary(root, datasets, params, expected_seeds, exit_code=3, method=method)
    if method != DEFAULT_METHOD and figures_dir is None:
        from atrec.paths import results_dir

        figures_dir = (root or results_dir()) / "figures" / method
    notices = list(summary.warnings)
    notices += [f"no results for {DATASET_LABELS[d]}: run {train_hint(d)}"
                for d in summary.datasets if not summary.has_results(d)]
    sections: dict[str, tuple[list[dict], list[str], dict]] = {}  # title -> rows, columns, options
    rows, columns = table1_rows(summary, fmt, std, ndcg, compare)
    sections["Table 1"] = (rows, columns, {"numparse": False})
    if significance:
        from atrec.evaluation.significance import significance_table

        metrics = ("mae", "mse", *_ndcg_metrics(ndcg))
        sig_rows = _format_sig_rows(significance_table(summary, metrics), fmt)
        sections["Paired tests, w/ vs w/o AT (* = p < 0.05 after Holm over the table)"] = (
            sig_rows, list(sig_rows[0]) if sig_rows else [], {"numparse": False})
    data_stats = _data_stats(summary.datasets, notices) if (stats or figures) else None
    if stats and data_stats:
        st_rows = _stats_rows(data_stats)
        sections["Data statistics"] = (st_rows, list(st_rows[0]) if st_rows else [],
                                       {})
    claim_list = evaluate_claims(summary) if claims else []
    paths: list[Path] = []
    if figures:
        from atrec.reporting.figures import write_figures

        paths, fig_notices = write_figures(summary, data_stats, figures_dir)
        notices += fig_notices
    text = _assemble(sections, claim_list if claims else None, summary, fmt)
    return ReportOutput(text=text, figures=tuple(paths), notices=tuple(notices))


def table_summary(root: Path | None, datasets: Sequence[str] | None, params: str,
                  expected_seeds: int, exit_code: int,
                  method: str = DEFAULT_METHOD) -> Summary:
    """The summary of the Table 1 datasets ``datasets`` (default: those with results).

    Only the folders of Table 1 datasets are read (the ML-100K experiment keeps its own
    records). Raises :class:`AtrecError` for an unknown dataset, and with ``exit_code`` when no
    selected dataset has results of this parameter set.
    """
    if datasets:
        unknown = [d for d in datasets if d not in TABLE_DATASETS]
        if unknown:
            raise AtrecError(f"unknown dataset '{unknown[0]}': choose from "
                             f"{', '.join(TABLE_DATASETS)} or 'all'")
    summary = load_summary(root, datasets or TABLE_DATASETS, params, expected_seeds, method)
    if not datasets:
        summary = replace(summary, datasets=tuple(d for d in summary.datasets
                                                  if summary.has_results(d)))
    if not summary.has_results():
        raise no_results_error(summary, root, exit_code=exit_code)
    return summary


def _assemble(sections: dict, claims: list[Claim] | None, summary: Summary, fmt: str) -> str:
    if fmt == "json":
        doc = {"params": summary.params, "datasets": list(summary.datasets)}
        for title, (rows, columns, _) in sections.items():
            doc[_json_key(title)] = json.loads(render(rows, "json", columns)) if rows else []
        if claims is not None:
            doc["claims"] = [c.as_row() for c in claims]
        return json.dumps(json_safe(doc), indent=1, default=str)
    parts = []
    for title, (rows, columns, options) in sections.items():
        body = render(rows, fmt, columns, **options) if rows else "(nothing to show)"
        if title == "Table 1" and fmt != "csv":
            body += "\n" + _legend(summary, fmt)
        parts.append(f"{_heading(title, fmt)}\n{body}")
    if claims is not None:
        parts.append(f"{_heading('Claims of the paper on these results', fmt)}\n"
                     f"{_claims_text(claims, fmt)}")
    return "\n\n".join(parts)


def json_safe(value):
    """``value`` with every non-finite float replaced by ``None`` (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def _json_key(title: str) -> str:
    return {"Table 1": "table1", "Data statistics": "data_stats"}.get(title, "significance")
