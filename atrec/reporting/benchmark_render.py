"""The benchmark table rendered: rows, legend and paired tests in every output format, its JSON,
and :func:`benchmark_report` (``atrec report --table benchmark``), over the
:class:`~atrec.reporting.benchmark.Benchmark` that :func:`~atrec.reporting.benchmark.load_benchmark`
reads (what the table holds: that module's doc).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from atrec.errors import AtrecError
from atrec.evaluation.fits import FAILED_MARK
from atrec.evaluation.summary import EXPECTED_SEEDS
from atrec.names import NO_PROPENSITY
from atrec.propensity.registry import propensity_label
from atrec.run_settings import TUNING_BUDGET
from atrec.reporting.benchmark import (
    AT_OPTIONS,
    BASELINE,
    MCAR_MARK,
    SECOND_BINARY_BASELINE,
    Benchmark,
    label_of,
    load_benchmark,
    propensity_uses_mcar,
    row_sources,
)
from atrec.reporting.common import (
    DIGITS,
    LOWER_IS_BETTER,
    METRIC_LABELS,
    at_column_groups,
    column_name,
    heading,
    json_safe,
    marker_name,
    metric_label,
    signed,
)
from atrec.reporting.intervals import TITLE as INTERVALS_TITLE
from atrec.reporting.intervals import boot_metrics, interval_rows, row_intervals
from atrec.reporting.latex import latex_escape
from atrec.reporting.nuisance import FLAG_MARK
from atrec.reporting.report import ReportOutput
from atrec.reporting.table1 import cell_text, seeds_text
from atrec.reporting.tables import FORMATS, render
from atrec.params.lookup import PUBLISHED


def _text_label(text: str, mcar: bool, fmt: str) -> str:
    if fmt == "latex":
        return latex_escape(text) + ("$^\\dagger$" if mcar else "")
    return text + (MCAR_MARK if mcar else "")


def _column(bench: Benchmark, metric: str, with_at: bool, ndcg: str) -> str:
    """A metric's column: ``AUC`` alone when the table has no AT runs (the binary
    protocols'), else ``AUC w/o AT`` / ``AUC w/ AT``."""
    if bench.at_options == (False,):
        return metric_label(metric, ndcg)
    return column_name(metric, with_at, ndcg)


def benchmark_rows(bench: Benchmark, fmt: str = "table", std: bool = False,
                   ndcg: str = "both") -> tuple[list[dict], list[str]]:
    """Rows and columns of the benchmark table in a text format (``json``: see
    :func:`benchmark_json`)."""
    rows, tables = [], {}
    for dataset, method, propensity in bench.rows:
        info = bench.info(method)
        prop_mcar = propensity_uses_mcar(propensity)
        params, budget = row_sources(bench, dataset, method, propensity, tables)
        prop_text = ("---" if fmt == "latex" else "—") if propensity == NO_PROPENSITY else \
            propensity_label(propensity)
        failed = failed_count(bench, dataset, method, propensity)
        row = {"data": _text_label(bench.dataset_label(dataset), False, fmt),
               "method": _text_label(info.label, info.uses_mcar, fmt) + _failed_mark(failed,
                                                                                    fmt)
               + (FLAG_MARK if (dataset, method, propensity) in bench.flagged else ""),
               "propensity": _text_label(prop_text, prop_mcar, fmt),
               "params": latex_escape(params) if fmt == "latex" else params, "budget": budget}
        for metric in bench.metrics:
            for at in bench.at_options:
                cell = bench.summaries[method].cell(dataset, propensity, at, metric)
                row[_column(bench, metric, at, ndcg)] = cell_text(
                    bench.mean(dataset, method, propensity, at, metric),
                    cell.sd if cell is not None else None,
                    bench.best(dataset, method, propensity, at, metric), None, metric, fmt, std,
                    False)
        row["failed"] = str(failed)
        rows.append(row)
    columns = ["data", "method", "propensity", "params", "budget",
               *(_column(bench, m, at, ndcg) for m in bench.metrics for at in bench.at_options)]
    if any_failed(bench):
        columns.append("failed")
    return rows, columns


def failed_count(bench: Benchmark, dataset: str, method: str, propensity: str) -> int:
    """How many of a row's fits failed (atrec.evaluation.fits), over its AT options."""
    summary = bench.summaries[method]
    return sum(len(summary.failed_seeds(dataset, propensity, at)) for at in bench.at_options)


def any_failed(bench: Benchmark) -> bool:
    return any(failed_count(bench, *row) for row in bench.rows)


def _failed_mark(count: int, fmt: str) -> str:
    if not count:
        return ""
    return "$^\\ddagger$" if fmt == "latex" else FAILED_MARK


def _p_text(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value:.3g}"


def paired_rows(bench: Benchmark, fmt: str = "table", ndcg: str = "both",
                second: bool = False) -> list[dict]:
    """The paired-test table in a text format: one row per comparison, in table order (with
    ``second``, the tests against :data:`SECOND_BINARY_BASELINE`)."""
    rows = []
    base = label_of(bench, SECOND_BINARY_BASELINE if second else bench.baseline)
    for t in (bench.second_tests if second else bench.tests):
        info = bench.info(t.method)
        prop = "---" if fmt == "latex" else "—"
        if t.propensity != NO_PROPENSITY:
            prop = propensity_label(t.propensity)
        rows.append({
            "data": _text_label(bench.dataset_label(t.dataset), False, fmt),
            "method": _text_label(info.label, info.uses_mcar, fmt),
            "propensity": _text_label(prop, propensity_uses_mcar(t.propensity), fmt),
            "AT": "w/" if t.with_at else "w/o", "metric": metric_label(t.metric, ndcg),
            "n": str(t.n), f"diff (method - {base})": signed(t.mean_diff, DIGITS[t.metric]),
            "p (t)": _p_text(t.t_p), "p (Wilcoxon)": _p_text(t.w_p),
            "p Holm (t)": _p_text(t.t_p_holm), "p Holm (Wilcoxon)": _p_text(t.w_p_holm),
            "sig (t)": "*" if t.t_significant else "",
            "sig (Wilcoxon)": "*" if t.w_significant else "",
        })
    return rows


def benchmark_json(bench: Benchmark) -> dict:
    """The benchmark as nested, machine-readable data (non-finite numbers as ``None``)."""
    rows, tables = [], {}
    for dataset, method, propensity in bench.rows:
        params, budget = row_sources(bench, dataset, method, propensity, tables)
        cells = {}
        for metric in bench.metrics:
            cells[metric] = {}
            for at in bench.at_options:
                cell = bench.summaries[method].cell(dataset, propensity, at, metric)
                cells[metric]["with_at" if at else "without"] = {
                    "mean": bench.mean(dataset, method, propensity, at, metric),
                    "sd": cell.sd if cell is not None else None,
                    "n": cell.n if cell is not None else 0,
                    "seeds": list(cell.seeds) if cell is not None else [],
                    "best": bench.best(dataset, method, propensity, at, metric)}
                if metric in boot_metrics(bench):
                    got = row_intervals(bench, dataset, method, propensity, at, metric)
                    cells[metric]["with_at" if at else "without"].update(
                        ci95_users_seeds=got["interval"], diff_vs_baseline=got["diff"],
                        diff_ci95_users_seeds=got["diff_interval"])
        failed = {("with_at" if at else "without"): {
            str(s): r for s, r in bench.summaries[method].failed_seeds(dataset, propensity,
                                                                       at).items()}
            for at in bench.at_options}
        rows.append({"dataset": dataset, "method": method, "propensity": propensity,
                     "uses_mcar": bench.uses_mcar(method, propensity), "params": params,
                     "budget": budget, "cells": cells, "failed": failed})
    tests = [_test_json(t, bench.baseline) for t in bench.tests]
    methods = [{"name": m.name, "label": m.label, "uses_propensity": m.uses_propensity,
                "uses_mcar": m.uses_mcar, "registered": m.registered} for m in bench.methods]
    out = {"table": "benchmark", "protocol": bench.protocol, "params": bench.params,
           "datasets": list(bench.datasets), "baseline": bench.baseline,
           "metrics": list(bench.metrics), "methods": methods, "rows": rows, "tests": tests}
    if bench.synthetic:
        out["synthetic_data"] = dict(bench.synthetic)   # dataset -> its generator
    if bench.second_tests:
        out["second_baseline"] = SECOND_BINARY_BASELINE
        out["second_tests"] = [_test_json(t, SECOND_BINARY_BASELINE) for t in bench.second_tests]
    return json_safe(out)


def _test_json(t, baseline: str) -> dict:
    """One paired test as JSON data."""
    return {"dataset": t.dataset, "method": t.method, "propensity": t.propensity,
            "baseline": baseline, "baseline_propensity": t.baseline_propensity,
            "with_at": t.with_at, "metric": t.metric, "n": t.n,
            "mean_method": t.mean_method, "mean_baseline": t.mean_baseline,
            "mean_diff": t.mean_diff, "method_better": t.method_better,
            "t": {"statistic": t.t_stat, "p": t.t_p, "p_holm": t.t_p_holm,
                  "significant": t.t_significant},
            "wilcoxon": {"statistic": t.w_stat, "p": t.w_p, "p_holm": t.w_p_holm,
                         "significant": t.w_significant},
            "dropped_seeds": list(t.dropped)}


def _directions(metrics) -> str:
    """``lower MAE/MSE, higher nDCG@3``: which way is better, for the metrics shown."""
    lower = [METRIC_LABELS[m] for m in metrics if LOWER_IS_BETTER[m]]
    higher = list(dict.fromkeys(METRIC_LABELS[m].split(" (")[0] for m in metrics
                                if not LOWER_IS_BETTER[m]))
    return ", ".join(part for part in (f"lower {'/'.join(lower)}" if lower else "",
                                       f"higher {'/'.join(higher)}" if higher else "") if part)


def _legend(bench: Benchmark, fmt: str) -> str:
    ns = [c.n for m in bench.summaries for c in bench.summaries[m].cells.values()
          if m in {i.name for i in bench.methods}] or [0]
    dagger = "$^\\dagger$" if fmt == "latex" else MCAR_MARK
    text = (f"Means over {seeds_text(ns)} seeds (params: {bench.params}, each row's in its "
            f"params column; budget: trials per tuning study of atrec's protocol, the same "
            f"{TUNING_BUDGET} for every method unless the row says otherwise, or 'authors' "
            f"for values as their authors published them); {marker_name(fmt)} "
            f"marks the best of each column within a dataset ({_directions(bench.metrics)}); "
            f"{dagger} uses MCAR labels "
            f"({'method' if bench.baseline != BASELINE else 'propensity or method'}); "
            + (f"{FLAG_MARK} some seeds have a degenerate nuisance model (the notes); "
               if bench.flagged else "")
            + "- means no results."
            + (f" {_failed_mark(1, fmt)}: some seeds' fits "
               f"failed (collapsed scores, a validation criterion at the constant's ln 2, or "
               f"a seed far below the others: docs/protocols.md, Failed fits); the failed "
               f"column counts them, and they are left out of the means and tests."
               if any_failed(bench) else ""))
    return f"% {text}" if fmt == "latex" else text


def _constant_columns(bench: Benchmark) -> set[str]:
    """Columns that say nothing in this table: ``propensity`` when no method uses one, ``AT``
    when no row was trained with AT (the binary protocols' tables)."""
    drop = set() if any(m.uses_propensity for m in bench.methods) else {"propensity"}
    return drop | ({"AT"} if bench.at_options == (False,) else set())


def benchmark_report(root: Path | None = None, datasets: Sequence[str] | None = None,
                     params: str = PUBLISHED, fmt: str = "table", std: bool = False,
                     ndcg: str = "both", expected_seeds: int = EXPECTED_SEEDS,
                     methods: Sequence[str] | None = None,
                     protocol: str | None = None) -> ReportOutput:
    """The benchmark table and its paired tests in format ``fmt`` (module doc).

    Returns a :class:`~atrec.reporting.report.ReportOutput` (no figures); its notices (missing
    cells, missing seeds, seeds dropped from a paired test) belong on standard error. Raises
    :class:`AtrecError` for a bad option, an unknown dataset or method, and (exit code 3) when
    there are no results.
    """
    if fmt not in FORMATS:
        raise AtrecError(f"unknown format '{fmt}': choose from {', '.join(FORMATS)}")
    bench = load_benchmark(root, datasets, params, expected_seeds, methods, ndcg, protocol)
    if fmt == "json":
        return ReportOutput(json.dumps(benchmark_json(bench), indent=1), (), bench.notices)
    rows, columns = benchmark_rows(bench, fmt, std, ndcg)
    drop = _constant_columns(bench)
    columns = [c for c in columns if c not in drop]
    body = render(rows, fmt, columns, numparse=False, block="data",
                  groups=at_column_groups(bench.metrics, ndcg)
                  if bench.at_options == AT_OPTIONS else ())
    if fmt != "csv":
        body += "\n" + _legend(bench, fmt)
    binary = bench.baseline != BASELINE
    title = (f"Benchmark under {bench.protocol}: methods" if binary
             else "Benchmark: methods x propensities")
    parts = [f"{heading(title, fmt)}\n{body}"]
    first = (f"Paired tests vs {label_of(bench, bench.baseline)}"
             f"{'' if binary else ' at the same propensity'} "
             f"(* = p < 0.05 after Holm over the table)")
    families = [(False, first)]
    if bench.second_tests:   # the binary protocols' tests against IPS, a family of its own
        second = (f"Paired tests vs {label_of(bench, SECOND_BINARY_BASELINE)} "
                  f"(* = p < 0.05 after Holm over this table)")
        families.append((True, second))
    for second, title in families:
        sig = paired_rows(bench, fmt, ndcg, second=second)
        parts.append(f"{heading(title, fmt)}\n"
                     + (render(sig, fmt, [c for c in sig[0] if c not in drop], numparse=False)
                        if sig else "(nothing to show)"))
    if boot_metrics(bench):    # binary records carry test-user resamples
        boxed = interval_rows(bench, label_of, fmt)
        parts.append(f"{heading(INTERVALS_TITLE, fmt)}\n"
                     + render(boxed, fmt, list(boxed[0]), numparse=False))
    return ReportOutput("\n\n".join(parts), (), bench.notices)
