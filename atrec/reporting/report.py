"""The report: Table 1 in the paper's layout, significance, data statistics, the paper's claims.

Everything is computed from a :class:`atrec.evaluation.summary.Summary` of the user's result records:

* :func:`atrec.reporting.table1.table1_rows`: rows dataset x propensity, columns MAE, MSE,
  nDCG@3, each without and with AT; the better of each pair is marked.
* :func:`atrec.evaluation.significance.significance_table`: paired tests of with vs without AT.
* data statistics from :mod:`atrec.data.datastats` (written separately; skipped if absent).
* :func:`atrec.reporting.claims.evaluate_claims`: the paper's five claims, each "holds", "does
  not hold" or "not evaluated (missing results)", with the numbers behind the verdict.

:func:`report` puts them together in one output format and writes the figures;
:func:`table_summary` reads the results of the Table 1 datasets (``atrec check`` reads them the
same way).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from atrec.data.datastats import data_stats, stats_rows
from atrec.data.preprocess import load_processed
from atrec.errors import AtrecError
from atrec.evaluation.significance import significance_table
from atrec.evaluation.summary import EXPECTED_SEEDS, Summary, load_summary
from atrec.names import DEFAULT_METHOD, TABLE_DATASETS
from atrec.paths import results_dir
from atrec.propensity.registry import propensity_label
from atrec.protocols import protocol_flag
from atrec.reporting.claims import Claim, claims_text, evaluate_claims
from atrec.reporting.common import (
    DATASET_LABELS,
    METRIC_LABELS,
    at_column_groups,
    heading,
    json_safe,
    ndcg_metrics,
    signed,
    train_hint,
)
from atrec.reporting.figures import write_figures
from atrec.reporting.header import report_header
from atrec.reporting.latex import latex_escape
from atrec.reporting.table1 import table1_legend, table1_rows
from atrec.reporting.tables import FORMATS, render
from atrec.params.lookup import PUBLISHED
from atrec.results.records import iter_records, record_label


@dataclass(frozen=True)
class ReportOutput:
    """What :func:`report` produced: the rendered ``text``, the figure files, and notices
    (incomplete cells, skipped tables or figures) for standard error."""

    text: str
    figures: tuple[Path, ...]
    notices: tuple[str, ...]


def _data_stats(datasets: Sequence[str], notices: list[str]) -> list[dict]:
    """Data statistics dicts of ``datasets``; a dataset whose statistics cannot be made is
    left out, with a notice."""
    out = []
    for name in datasets:
        try:
            out.append(data_stats(load_processed(name)))
        except AtrecError as exc:
            notices.append(f"data statistics of {name} skipped: {exc}")
    return out


def _format_sig_rows(tests: list, fmt: str) -> list[dict]:
    """Significance rows; text formats get strings (means 4 decimals, statistics 3 digits)."""
    rows = [t.as_row(machine=fmt == "json") for t in tests]
    if fmt == "json":
        return rows
    for row in rows:
        row["dataset"] = DATASET_LABELS.get(row["dataset"], row["dataset"])
        row["propensity"] = propensity_label(row["propensity"])
        if fmt == "latex":
            row["dataset"], row["propensity"] = map(latex_escape, (row["dataset"],
                                                                   row["propensity"]))
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


def no_results_error(summary: Summary, root: Path | None, exit_code: int,
                     protocol: str | None = None) -> AtrecError:
    """The one-line error for "no results to report or check", naming other parameter sets and
    the train command that makes them (under ``protocol`` when it is not the default)."""
    where = (results_dir() if root is None else root) / "runs"
    others = sorted({record_label(r) for r in iter_records(root)} - {summary.params})
    hint = f" (there are results for --params {', '.join(others)})" if others else ""
    scope = ", ".join(summary.datasets) if summary.datasets else "any dataset"
    method = "" if summary.method == DEFAULT_METHOD else f" and method '{summary.method}'"
    flag = protocol_flag(protocol)
    train = ("'atrec train' (or 'make reproduce')" if not method and not flag else
             f"'atrec train{flag}{' --method ' + summary.method if method else ''}'")
    return AtrecError(f"no results for {scope} with params '{summary.params}'{method} under "
                      f"{where}{hint}: run {train} first", exit_code=exit_code)


def report(datasets: Sequence[str] | None = None, fmt: str = "table", std: bool = False,
           ndcg: str = "paper", compare: str | None = None, stats: bool = False,
           claims: bool = True, significance: bool = True, figures: bool = True,
           params: str = PUBLISHED, root: Path | None = None,
           expected_seeds: int = EXPECTED_SEEDS, figures_dir: Path | None = None,
           method: str = DEFAULT_METHOD, header: bool = True) -> ReportOutput:
    """Build the report of the results under ``root`` (default: the results folder).

    Sections, in order: Table 1; the significance table (``significance``); the data statistics
    (``stats``); the paper's claims (``claims``). ``datasets`` default: those of Table 1 that have
    results. Figures 1, 3 and 4 are written under ``figures_dir`` (default
    ``<results>/figures``; ``<results>/figures/<method>`` for a method other than MF-IPS) when
    ``figures``. ``method``: whose results fill the paper's layout (default MF-IPS, the paper's
    Table 1). ``header``: in markdown, start with :func:`atrec.reporting.header.report_header`
    (title, date, versions, parameters, seeds, data checksums, links relative to the results
    folder). Raises :class:`AtrecError` when there are no results.
    """
    if fmt not in FORMATS:
        raise AtrecError(f"unknown format '{fmt}': choose from {', '.join(FORMATS)}")
    ndcg_metrics(ndcg)
    summary = table_summary(root, datasets, params, expected_seeds, exit_code=3, method=method)
    if method != DEFAULT_METHOD and figures_dir is None:
        figures_dir = (root or results_dir()) / "figures" / method
    notices = list(summary.warnings)
    notices += [f"no results for {DATASET_LABELS[d]}: run {train_hint(d)}"
                for d in summary.datasets if not summary.has_results(d)]
    sections: dict[str, tuple[list[dict], list[str], dict]] = {}  # title -> rows, columns, options
    rows, columns = table1_rows(summary, fmt, std, ndcg, compare)
    sections["Table 1"] = (rows, columns, {"numparse": False, "block": "data", "groups":
                                           at_column_groups(("mae", "mse", *ndcg_metrics(ndcg)),
                                                            ndcg)})
    if significance:
        metrics = ("mae", "mse", *ndcg_metrics(ndcg))
        sig_rows = _format_sig_rows(significance_table(summary, metrics), fmt)
        sections["Paired tests, w/ vs w/o AT (* = p < 0.05 after Holm over the table)"] = (
            sig_rows, list(sig_rows[0]) if sig_rows else [], {"numparse": False})
    dataset_stats = _data_stats(summary.datasets, notices) if (stats or figures) else None
    if stats and dataset_stats:
        st_rows = stats_rows(dataset_stats)
        sections["Data statistics"] = (st_rows, list(st_rows[0]) if st_rows else [],
                                       {})
    claim_list = evaluate_claims(summary) if claims else []
    paths: list[Path] = []
    if figures:
        paths, fig_notices = write_figures(summary, dataset_stats, figures_dir)
        notices += fig_notices
    text = _assemble(sections, claim_list if claims else None, summary, fmt)
    if header and fmt == "markdown":
        base = results_dir() if root is None else Path(root)
        text = report_header(summary, paths, base, root) + "\n\n" + text
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
            body += "\n" + table1_legend(summary, fmt)
        parts.append(f"{heading(title, fmt)}\n{body}")
    if claims is not None:
        parts.append(f"{heading('Claims of the paper on these results', fmt)}\n"
                     f"{claims_text(claims, fmt)}")
    return "\n\n".join(parts)


def _json_key(title: str) -> str:
    return {"Table 1": "table1", "Data statistics": "data_stats"}.get(title, "significance")
