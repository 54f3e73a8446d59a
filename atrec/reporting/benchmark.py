"""The benchmark table: every method x propensity, without and with AT, and tests against MF-IPS.

:func:`benchmark_report` (``atrec report --table benchmark``) reads the records of one parameter
set and writes two tables (docs: ../shared/BASELINES.md, "How the baselines are reported"):

* the benchmark: rows dataset x method x propensity (datasets in the paper's order, then others;
  methods and propensities in registry order, MF-IPS first; a method that uses no propensity has
  one row, propensity ``none``, shown as a dash). Columns MAE, MSE and nDCG@3 (``ndcg``: the
  paper's variant, the standard one or both), each without and with AT: the mean over seeds
  (``± sd`` with ``std``). The best value of each column within a dataset is marked as Table 1
  marks the better of a pair (bold, or a trailing ``*``; nothing on an all-way tie). Rows that
  use MCAR labels (the propensity's or the method's ``uses_mcar``, e.g. NB (true)) carry ``†``.
* the paired tests (:func:`atrec.evaluation.significance.method_tests`): each method against
  MF-IPS with the same propensity (``uniform``, i.e. constant weights, for a method that uses
  none), same dataset and AT option, paired by seed; t and Wilcoxon p-values, Holm-adjusted over
  the whole family of comparisons.

Methods: those with records (default) or the ones asked for. A method name that the registry does
not know (a plug-in that is not installed here) still gets its rows, labelled by its name; it is
taken to use propensities unless all its records say ``none``, and not to use MCAR labels.
Missing cells show ``-``; they, seeds missing against the expected count, and seeds that only
one side of a paired test has are reported as notices.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from atrec.errors import AtrecError
from atrec.evaluation.registry import metrics_in
from atrec.evaluation.significance import MethodTest, method_tests
from atrec.evaluation.summary import (
    EXPECTED_SEEDS,
    dataset_order,
    merge_summaries,
    resolve_params_label,
    summarize,
)
from atrec.methods.registry import METHODS, base_method
from atrec.names import DATASETS, DEFAULT_METHOD, NO_PROPENSITY, config_key
from atrec.propensity.registry import (
    PROPENSITIES,
    propensity_label,
    propensity_order,
    table1_propensities,
)
from atrec.protocol import TUNING_BUDGET
from atrec.reporting.common import (
    DIGITS,
    LOWER_IS_BETTER,
    METRIC_LABELS,
    at_column_groups,
    better_pair,
    column_name,
    config_label,
    dataset_label,
    heading,
    json_safe,
    marker_name,
    metric_label,
    ndcg_metrics,
    signed,
    train_hint,
)
from atrec.reporting.latex import latex_escape
from atrec.reporting.report import ReportOutput, no_results_error
from atrec.reporting.table1 import cell_text, seeds_text
from atrec.reporting.tables import FORMATS, render
from atrec.results.params import PUBLISHED, params_budget
from atrec.results.records import iter_records, record_label

BASELINE = DEFAULT_METHOD
MCAR_MARK = "†"
AT_OPTIONS = (False, True)


@dataclass(frozen=True)
class MethodInfo:
    """What the table needs to know of a method; ``registered`` False for a name the registry
    does not know (then ``label`` is the name)."""

    name: str
    label: str
    uses_propensity: bool
    uses_mcar: bool
    registered: bool


@dataclass(frozen=True)
class Benchmark:
    """The loaded benchmark: one :class:`Summary` per method (the baseline's always, for the
    tests), the rows ``(dataset, method, propensity)``, the tests and the notices."""

    params: str
    datasets: tuple[str, ...]
    methods: tuple[MethodInfo, ...]
    summaries: dict
    rows: tuple[tuple[str, str, str], ...]
    metrics: tuple[str, ...]
    tests: tuple[MethodTest, ...]
    notices: tuple[str, ...]

    def info(self, method: str) -> MethodInfo:
        return next(m for m in self.methods if m.name == method)

    def uses_mcar(self, method: str, propensity: str) -> bool:
        """Whether a row reads MCAR labels (through its propensity or its method)."""
        return self.info(method).uses_mcar or _propensity_uses_mcar(propensity)

    def mean(self, dataset: str, method: str, propensity: str, with_at: bool,
             metric: str) -> float | None:
        return self.summaries[method].mean(dataset, propensity, with_at, metric)

    def best(self, dataset: str, method: str, propensity: str, with_at: bool,
             metric: str) -> bool:
        """Whether this cell holds the best mean of its column within its dataset (not on an
        all-way tie, as Table 1 marks neither of a tied pair)."""
        values = [self.mean(d, m, p, with_at, metric) for d, m, p in self.rows if d == dataset]
        values = [v for v in values if v is not None]
        mine = self.mean(dataset, method, propensity, with_at, metric)
        if mine is None or len(set(values)) < 2:
            return False
        best = values[0]
        for value in values[1:]:
            if better_pair(metric, best, value)[1]:
                best = value
        return mine == best


def row_sources(bench: Benchmark, dataset: str, method: str, propensity: str,
                tables: dict | None = None) -> tuple[str, str]:
    """``(params, budget)`` of a row as text: the parameter set of its results and how its
    values were made (:func:`~atrec.results.params.params_budget`); ``A / B`` when the
    runs without AT (A) and with AT (B) differ, ``-`` where there are no results."""
    sets, budgets = [], []
    for at in AT_OPTIONS:
        cell = bench.summaries[method].cell(dataset, propensity, at, bench.metrics[0])
        sets.append(cell.params if cell is not None else "-")
        budgets.append(params_budget(cell.params, dataset, config_key(propensity, at, method),
                                     tables) if cell is not None else "-")
    return tuple(" / ".join(dict.fromkeys(v)) if len(set(v)) == 1 else " / ".join(v)
                 for v in (sets, budgets))


def _propensity_uses_mcar(name: str) -> bool:
    try:
        return bool(PROPENSITIES.get(name).uses_mcar)
    except AtrecError:
        return False


def _method_info(name: str, propensities_seen: set[str]) -> MethodInfo:
    try:
        cls = METHODS.get(name)
    except AtrecError:
        uses = bool(propensities_seen - {NO_PROPENSITY}) or not propensities_seen
        return MethodInfo(name, name, uses, False, False)
    return MethodInfo(name, cls.label, bool(cls.uses_propensity), bool(cls.uses_mcar), True)


def _method_order(name: str) -> tuple:
    names = METHODS.names()
    return (names.index(name) if name in names else len(names), name)


def load_benchmark(root: Path | None = None, datasets: Sequence[str] | None = None,
                   params: str = PUBLISHED, expected_seeds: int = EXPECTED_SEEDS,
                   methods: Sequence[str] | None = None, ndcg: str = "both",
                   protocol: str | None = None) -> Benchmark:
    """Read the records under ``root`` and build the :class:`Benchmark` (see the module doc).

    ``params``: a parameter set, or several comma-separated (``published,tuned-atrec``): each
    configuration's results then come from the first set listed that has them, so MF-IPS with
    the authors' values sits beside baselines tuned by atrec (each cell names its set). ``datasets`` default: those with
    results of any selected method. Raises
    :class:`AtrecError` for an unknown dataset or method, and (exit code 3) when no selected
    dataset has results. ``protocol``: a non-default protocol's name, for the commands the
    notices suggest.
    """
    nd = ndcg_metrics(ndcg)
    unknown = [d for d in datasets or () if d not in DATASETS]
    if unknown:
        raise AtrecError(f"unknown dataset '{unknown[0]}': choose from {', '.join(DATASETS)}")
    labels = [resolve_params_label(p.strip()) for p in params.split(",") if p.strip()]
    if not labels:
        raise AtrecError("empty --params value: give a parameter set, or several comma-separated")
    folders = tuple(datasets) if datasets else DATASETS
    records = [r for d in folders for r in iter_records(root, d)]
    # the metrics the records carry (registry order); of saito2020's nDCG@3 pair, --ndcg's
    carried = metrics_in(r for r in records if record_label(r) in labels)
    metrics = tuple(m for m in carried if not m.startswith("ndcg3_") or m in nd) or (
        "mae", "mse", *nd)
    seen: dict[str, set[str]] = {}
    for r in records:
        if isinstance(r, dict) and record_label(r) in labels:
            seen.setdefault(base_method(r), set()).add(str(r.get("propensity")))
    if methods:
        bad = [m for m in methods if m not in seen and m not in METHODS.names()]
        if bad:
            raise AtrecError(f"unknown method '{bad[0]}': choose from "
                             f"{', '.join(sorted({*METHODS.names(), *seen}, key=_method_order))}")
        chosen = list(dict.fromkeys(methods))
    else:
        chosen = sorted(seen, key=_method_order)
    infos = tuple(_method_info(m, seen.get(m, set())) for m in chosen)
    # each configuration's results come from the first listed parameter set that has them
    summaries = {m: merge_summaries([summarize(records, params=lab, datasets=folders,
                                               expected_seeds=expected_seeds, method=m)
                                     for lab in labels])
                 for m in dict.fromkeys([*chosen, BASELINE])}
    label = ", ".join(dict.fromkeys(lab for m in summaries for lab in labels
                                    if any(c.params == lab for c in summaries[m].cells.values())))
    label = label or labels[0]
    if datasets:
        shown = tuple(sorted(dict.fromkeys(datasets), key=dataset_order))
    else:
        shown = tuple(d for d in DATASETS if any(summaries[m].has_results(d) for m in chosen))
        shown = tuple(sorted(shown, key=dataset_order))
    if not any(summaries[m].has_results(d) for m in chosen for d in shown):
        empty = replace(summaries[BASELINE], datasets=tuple(datasets or ()))
        raise no_results_error(empty, root, exit_code=3)
    used = {p for m in chosen for p in seen.get(m, set())} - {NO_PROPENSITY}
    propensities = sorted({*table1_propensities(), *used},
                          key=lambda p: (propensity_order(p), p))
    rows = tuple((d, m.name, p) for d in shown for m in infos
                 for p in (propensities if m.uses_propensity else [NO_PROPENSITY]))
    tests = method_tests(summaries, rows, metrics, baseline=BASELINE)
    bench = Benchmark(label, shown, infos, summaries, rows, metrics, tuple(tests), ())
    return replace(bench, notices=tuple(_notices(bench, chosen, protocol)))


def _notices(bench: Benchmark, chosen: list[str], protocol: str | None) -> list[str]:
    notes = []
    for m in chosen:
        notes += [f"{bench.info(m).label}: {w}" for w in bench.summaries[m].warnings]
    for dataset in bench.datasets:
        for info in bench.methods:
            gaps = [f"{propensity_label(p) if p != NO_PROPENSITY else 'no propensity'}"
                    f" {'w/ AT' if at else 'w/o AT'}"
                    for d, m, p in bench.rows if (d, m) == (dataset, info.name)
                    for at in AT_OPTIONS
                    if any(bench.mean(d, m, p, at, k) is None for k in bench.metrics)]
            if gaps:
                notes.append(f"no results for {dataset_label(dataset)} {info.label}: "
                             f"{', '.join(gaps)} (run {train_hint(dataset, method=info.name, protocol=protocol)})")
    if not bench.summaries[BASELINE].has_results():
        notes.append(f"no paired tests: no {_label(bench, BASELINE)} results of params "
                     f"'{bench.params}'")
    dropped = {}
    for t in bench.tests:
        if t.dropped:
            key = (t.dataset, t.method, t.propensity, t.baseline_propensity, t.with_at)
            dropped.setdefault(key, set()).update(t.dropped)
    for (dataset, method, prop, base_prop, at), seeds in dropped.items():
        notes.append(f"paired test of {_label(bench, method)} against "
                     f"{_label(bench, BASELINE)} on {config_label(dataset, prop, at)}"
                     f"{'' if prop == base_prop else f' ({_label(bench, BASELINE)} {base_prop})'}"
                     f": seed"
                     f"{'s' if len(seeds) > 1 else ''} {', '.join(map(str, sorted(seeds)))} "
                     f"only on one side, left out")
    return notes


def _label(bench: Benchmark, method: str) -> str:
    try:
        return bench.info(method).label
    except StopIteration:
        return _method_info(method, set()).label


def _text_label(text: str, mcar: bool, fmt: str) -> str:
    if fmt == "latex":
        return latex_escape(text) + ("$^\\dagger$" if mcar else "")
    return text + (MCAR_MARK if mcar else "")


def benchmark_rows(bench: Benchmark, fmt: str = "table", std: bool = False,
                   ndcg: str = "both") -> tuple[list[dict], list[str]]:
    """Rows and columns of the benchmark table in a text format (``json``: see
    :func:`benchmark_json`)."""
    rows, tables = [], {}
    for dataset, method, propensity in bench.rows:
        info = bench.info(method)
        prop_mcar = _propensity_uses_mcar(propensity)
        params, budget = row_sources(bench, dataset, method, propensity, tables)
        prop_text = ("---" if fmt == "latex" else "—") if propensity == NO_PROPENSITY else \
            propensity_label(propensity)
        row = {"data": _text_label(dataset_label(dataset), False, fmt),
               "method": _text_label(info.label, info.uses_mcar, fmt),
               "propensity": _text_label(prop_text, prop_mcar, fmt),
               "params": latex_escape(params) if fmt == "latex" else params, "budget": budget}
        for metric in bench.metrics:
            for at in AT_OPTIONS:
                cell = bench.summaries[method].cell(dataset, propensity, at, metric)
                row[column_name(metric, at, ndcg)] = cell_text(
                    bench.mean(dataset, method, propensity, at, metric),
                    cell.sd if cell is not None else None,
                    bench.best(dataset, method, propensity, at, metric), None, metric, fmt, std,
                    False)
        rows.append(row)
    columns = ["data", "method", "propensity", "params", "budget",
               *(column_name(m, at, ndcg) for m in bench.metrics for at in AT_OPTIONS)]
    return rows, columns


def _p_text(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value:.3g}"


def paired_rows(bench: Benchmark, fmt: str = "table", ndcg: str = "both") -> list[dict]:
    """The paired-test table in a text format: one row per comparison, in table order."""
    rows = []
    base = _label(bench, BASELINE)
    for t in bench.tests:
        info = bench.info(t.method)
        prop = "---" if fmt == "latex" else "—"
        if t.propensity != NO_PROPENSITY:
            prop = propensity_label(t.propensity)
        rows.append({
            "data": _text_label(dataset_label(t.dataset), False, fmt),
            "method": _text_label(info.label, info.uses_mcar, fmt),
            "propensity": _text_label(prop, _propensity_uses_mcar(t.propensity), fmt),
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
            for at in AT_OPTIONS:
                cell = bench.summaries[method].cell(dataset, propensity, at, metric)
                cells[metric]["with_at" if at else "without"] = {
                    "mean": bench.mean(dataset, method, propensity, at, metric),
                    "sd": cell.sd if cell is not None else None,
                    "n": cell.n if cell is not None else 0,
                    "seeds": list(cell.seeds) if cell is not None else [],
                    "best": bench.best(dataset, method, propensity, at, metric)}
        rows.append({"dataset": dataset, "method": method, "propensity": propensity,
                     "uses_mcar": bench.uses_mcar(method, propensity), "params": params,
                     "budget": budget, "cells": cells})
    tests = [{"dataset": t.dataset, "method": t.method, "propensity": t.propensity,
              "baseline": BASELINE, "baseline_propensity": t.baseline_propensity,
              "with_at": t.with_at, "metric": t.metric, "n": t.n,
              "mean_method": t.mean_method, "mean_baseline": t.mean_baseline,
              "mean_diff": t.mean_diff, "method_better": t.method_better,
              "t": {"statistic": t.t_stat, "p": t.t_p, "p_holm": t.t_p_holm,
                    "significant": t.t_significant},
              "wilcoxon": {"statistic": t.w_stat, "p": t.w_p, "p_holm": t.w_p_holm,
                           "significant": t.w_significant},
              "dropped_seeds": list(t.dropped)} for t in bench.tests]
    methods = [{"name": m.name, "label": m.label, "uses_propensity": m.uses_propensity,
                "uses_mcar": m.uses_mcar, "registered": m.registered} for m in bench.methods]
    return json_safe({"table": "benchmark", "params": bench.params,
                      "datasets": list(bench.datasets), "baseline": BASELINE,
                      "metrics": list(bench.metrics), "methods": methods, "rows": rows,
                      "tests": tests})


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
            f"{dagger} uses MCAR labels (propensity or method); - means no results.")
    return f"% {text}" if fmt == "latex" else text


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
    body = render(rows, fmt, columns, numparse=False, block="data",
                  groups=at_column_groups(bench.metrics, ndcg))
    if fmt != "csv":
        body += "\n" + _legend(bench, fmt)
    parts = [f"{heading('Benchmark: methods x propensities', fmt)}\n{body}"]
    sig = paired_rows(bench, fmt, ndcg)
    title = (f"Paired tests vs {_label(bench, BASELINE)} at the same propensity "
             f"(* = p < 0.05 after Holm over the table)")
    parts.append(f"{heading(title, fmt)}\n"
                 + (render(sig, fmt, list(sig[0]), numparse=False) if sig
                    else "(nothing to show)"))
    return ReportOutput("\n\n".join(parts), (), bench.notices)
