"""The protocol gap's outputs (``atrec report --table protocol-gap``): the table of a
:class:`~atrec.reporting.protocol_gap.Gap` in every format, its tests and intervals, its JSON,
the figure (rank under one protocol against the other) and the report per dataset. What a gap
is and how it is loaded: :mod:`atrec.reporting.protocol_gap`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from atrec.errors import AtrecError
from atrec.evaluation.fits import FAILED_MARK
from atrec.evaluation.significance import ALPHA
from atrec.evaluation.summary import dataset_order
from atrec.names import NO_PROPENSITY
from atrec.paths import results_dir
from atrec.protocols import get_protocol
from atrec.reporting.benchmark import BINARY_BASELINE, MCAR_MARK, label_of
from atrec.reporting.common import dataset_label, heading, json_safe, metric_label, signed
from atrec.reporting.figures import _new_figure, _suptitle, save_figure
from atrec.reporting.intervals import TITLE as INTERVALS_TITLE
from atrec.reporting.intervals import boot_metrics, interval_rows, row_intervals
from atrec.reporting.latex import latex_escape
from atrec.reporting.protocol_gap import (
    CLEAN_PROTOCOL,
    COLUMNS,
    GAP_PARAMS,
    GAP_PROTOCOLS,
    RANKED,
    REFERENCE_PROTOCOL,
    SHORT,
    RULE_PROTOCOL,
    SHOWN,
    STEP_PROTOCOL,
    TRUTH_DATASET,
    TRUTH_PROTOCOL,
    Gap,
    protocol_gap,
)
from atrec.reporting.protocol_gap_parts import HOLDS, PARTS, WITHIN_NOISE, decompositions
from atrec.reporting.report import ReportOutput
from atrec.reporting.tables import FORMATS, render


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _beats(gap: Gap, protocol: str, method: str) -> str:
    """``AUC, nDCG@5`` (the metrics on which it beats MF), ``no``, or ``-`` when untested."""
    verdicts = [(metric_label(m, "standard"), gap.beats_mf(protocol, method, m))
                for m in RANKED[protocol]]
    if all(v is None for _, v in verdicts):
        return "-"
    return ", ".join(label for label, v in verdicts if v) or "no"


def _row_label(gap: Gap, method: str, fmt: str) -> str:
    """A row's label with its marks: reads MCAR labels, some fits failed."""
    label = gap.label(method)
    if fmt == "latex":
        label = latex_escape(label) + ("$^\\dagger$" if gap.uses_mcar(method) else "")
    elif gap.uses_mcar(method):
        label += MCAR_MARK
    if any(gap.failed(p, method) for p in COLUMNS):
        label += "$^\\ddagger$" if fmt == "latex" else FAILED_MARK
    return label


def gap_rows(gap: Gap, fmt: str = "table") -> tuple[list[dict], list[str]]:
    """The gap table in a text format: one row per method, ending with the cause of its move
    on each ranked metric (:mod:`atrec.reporting.protocol_gap_parts`)."""
    parts = decompositions(gap)
    rows = []
    for method in gap.methods:
        failed = {p: len(gap.failed(p, method)) for p in COLUMNS}
        row = {"method": _row_label(gap, method, fmt)}
        for protocol in COLUMNS:
            p = SHORT[protocol]
            row[f"{p} params"] = gap.params(protocol, method)[0]
            for metric in (*RANKED[protocol], *SHOWN[protocol]):
                row[f"{p} {metric_label(metric, 'standard')}"] = _number(
                    gap.mean(protocol, method, metric))
            for metric in RANKED[protocol]:
                rank = gap.rank(protocol, method, metric)
                row[f"{p} rank {metric_label(metric, 'standard')}"] = "-" if rank is None \
                    else str(rank)
            row[f"{p} beats MF"] = "(baseline)" if method == BINARY_BASELINE else _beats(
                gap, protocol, method)
            row[f"{p} failed"] = str(failed[protocol])
        for k, metric in enumerate(RANKED[CLEAN_PROTOCOL]):
            row[f"cause {metric_label(metric, 'standard')}"] = parts[(method, k)].cause_text()
        rows.append(row)
    return rows, list(rows[0]) if rows else []


def part_rows(gap: Gap, fmt: str = "table") -> list[dict]:
    """The gap decomposed: per method and ranked metric, the move against MF between the
    protocols (``total``) and each part of it with its 95% interval over the chain's seeds."""
    rows = []
    for (method, k), d in decompositions(gap).items():
        if method == BINARY_BASELINE or d.total is None:
            continue
        row = {"method": _row_label(gap, method, fmt),
               "metric": metric_label(RANKED[CLEAN_PROTOCOL][k], "standard"),
               "n": str(d.parts[0].n) if d.parts else "-", "move vs MF": signed(d.total, 4)}
        found = {part.name: part for part in d.parts}
        for name in PARTS:
            part = found.get(name)
            row[name] = "-" if part is None else part.text()[len(name) + 1:]
        row["cause"] = d.cause_text()
        rows.append(row)
    return rows


def gap_test_rows(gap: Gap, fmt: str = "table") -> list[dict]:
    """The paired tests against MF behind the ``beats MF`` columns."""
    rows = []
    for protocol in COLUMNS:
        for t in gap.tests.get(protocol, ()):
            label = gap.label(t.method)
            rows.append({"protocol": protocol, "method": latex_escape(label) if fmt == "latex"
                         else label, "metric": metric_label(t.metric, "standard"),
                         "n": str(t.n), "diff (method - MF)": signed(t.mean_diff, 4),
                         "p (t)": f"{t.t_p:.3g}", "p Holm (t)": f"{t.t_p_holm:.3g}",
                         "p Holm (Wilcoxon)": f"{t.w_p_holm:.3g}",
                         "beats MF": "yes" if gap.beats_mf(protocol, t.method, t.metric)
                         else "no"})
    return rows


def gap_json(gap: Gap) -> dict:
    """The gap as machine-readable data (non-finite numbers as ``None``); each method's
    ``parts``: per ranked metric (``binary-clean``'s name) its decomposition."""
    methods = []
    parts = decompositions(gap)
    for method in gap.methods:
        entry = {"method": method, "label": gap.label(method), "uses_mcar": gap.uses_mcar(method),
                 "parts": {m: parts[(method, k)].as_dict()
                           for k, m in enumerate(RANKED[CLEAN_PROTOCOL])}}
        for protocol in COLUMNS:
            params, budget = gap.params(protocol, method)
            entry[protocol] = {
                "params": params, "budget": budget,
                "means": {m: gap.mean(protocol, method, m)
                          for m in (*RANKED[protocol], *SHOWN[protocol])},
                "ranks": {m: gap.rank(protocol, method, m) for m in RANKED[protocol]},
                "beats_mf": {m: gap.beats_mf(protocol, method, m) for m in RANKED[protocol]},
                "failed": {str(k): v for k, v in gap.failed(protocol, method).items()},
                "intervals": _intervals_json(gap, protocol, method)}
        methods.append(entry)
    tests = [{"protocol": p, "method": t.method, "metric": t.metric, "n": t.n,
              "mean_diff": t.mean_diff, "method_better": t.method_better, "t_p": t.t_p,
              "t_p_holm": t.t_p_holm, "w_p": t.w_p, "w_p_holm": t.w_p_holm}
             for p in COLUMNS for t in gap.tests.get(p, ())]
    return json_safe({"table": "protocol-gap", "dataset": gap.dataset,
                      "synthetic_data": gap.synthetic, "baseline": BINARY_BASELINE,
                      "alpha": ALPHA,
                      "params": {p: gap.benches[p].params for p in gap.benches},
                      "ranked_metrics": {p: list(RANKED[p]) for p in COLUMNS},
                      "truth_dataset": TRUTH_DATASET, "parts": list(PARTS),
                      "steps": sorted(gap.steps),
                      "methods": methods, "tests": tests})


def _intervals_json(gap: Gap, protocol: str, method: str) -> dict:
    """The method's intervals over test users and seeds under ``protocol`` (metric ->
    ``{mean, interval, diff, diff_interval}``; empty without bootstrapped records)."""
    bench = gap.benches.get(protocol)
    if bench is None or method not in bench.summaries:
        return {}
    return {m: row_intervals(bench, gap.dataset, method, NO_PROPENSITY, False, m)
            for m in boot_metrics(bench)}


def _legend(gap: Gap, fmt: str) -> str:
    dagger = "$^\\dagger$" if fmt == "latex" else MCAR_MARK
    ddagger = "$^\\ddagger$" if fmt == "latex" else FAILED_MARK
    text = (f"{gap.dataset_label}. icde24 = {REFERENCE_PROTOCOL} (parameter set "
            f"{GAP_PARAMS[REFERENCE_PROTOCOL]}; the (ref) metrics count a test user without a "
            f"positive as the reference code does); clean = {CLEAN_PROTOCOL} (each method's "
            f"values from the first of {GAP_PARAMS[CLEAN_PROTOCOL]} it has results for: see its "
            f"params column; "
            f"users without a positive left out); truth = {TRUTH_PROTOCOL} (a known truth, "
            f"{dataset_label(TRUTH_DATASET)} completed into true rates c, whatever the "
            f"dataset: trained on one MNAR draw from it, every cell scored "
            f"against its true rate c, AUC with pairs weighted by c and 1 - c, nDCG@5 and "
            f"Recall@5 with gains c; parameter sets {GAP_PARAMS[TRUTH_PROTOCOL]}). Rank 1 = best mean among these methods "
            f"under that protocol; ties share the better rank. beats MF: the metrics on which "
            f"the method's paired t-test against MF over seeds has a Holm-adjusted p < {ALPHA} "
            f"(one family per column: every method x AUC, nDCG@5) in its favour; "
            f"{dagger} reads MCAR labels; - means no results; "
            f"{ddagger} some fits failed "
            f"(collapsed, at the constant's validation loss, or a seed far below the others: "
            f"docs/protocols.md, Failed fits), counted in the failed columns and left out of "
            f"the means, ranks and tests.")
    return f"% {text}" if fmt == "latex" else text


def _parts_legend(fmt: str) -> str:
    text = (f"The move: the method's mean difference from MF under {CLEAN_PROTOCOL} less the "
            f"same under {REFERENCE_PROTOCOL}, split by a chain of runs that each change one "
            f"factor: test set ({REFERENCE_PROTOCOL} -> {STEP_PROTOCOL}, the same training "
            f"scored on {CLEAN_PROTOCOL}'s test set, the 5% MCAR slice out of it), nDCG "
            f"convention (the same runs, (ref) -> standard), data (-> {RULE_PROTOCOL}: "
            f"{CLEAN_PROTOCOL}'s split, {REFERENCE_PROTOCOL}'s stopping rule), selection (-> "
            f"{CLEAN_PROTOCOL} at reference values in the code's form: its selection rule), "
            f"form (-> its default form), parameters (-> its set in this table), seeds "
            f"(each protocol's seeds outside the chain's). Each part: mean change over the "
            f"n seeds every step has, [95% t-interval]. cause: the part with the largest "
            f"change, for a method whose rank or verdict against MF changes, {WITHIN_NOISE} when "
            f"its interval holds zero ({HOLDS}: neither changes; -: a run of the chain is "
            f"missing, see the notices, or no seed has a fit that did not fail at every step). The parts' p-values (JSON) are not adjusted.")
    return f"% {text}" if fmt == "latex" else text


ROW_INCHES = 0.22     # the gap figure's height per method: one tick label per row, never two


def gap_figure(gap: Gap):
    """Each method's rank under ``binary-icde24`` (open circle) and under ``binary-clean``
    (filled circle), joined, one row per method and one panel per ranked metric (1 = best, at
    the left). Rows are ordered by the rank under ``binary-clean`` by AUC, so the methods that
    hold their place read down a straight line and the long segments are the ones the protocol
    moves. The figure grows by :data:`ROW_INCHES` per method, so each name has its own row at
    any number of methods; the x axis has at most nine integer ticks; colour says whether a
    method reads MCAR labels (``†``), and a legend under the panels says what each mark is."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    methods = [m for m in gap.methods
               if any(gap.rank(p, m, RANKED[p][0]) is not None for p in GAP_PROTOCOLS)]
    far = len(gap.methods) + 1

    def order(method):
        clean, ref = RANKED[CLEAN_PROTOCOL][0], RANKED[REFERENCE_PROTOCOL][0]
        return (gap.rank(CLEAN_PROTOCOL, method, clean) or far,
                gap.rank(REFERENCE_PROTOCOL, method, ref) or far, method)

    methods.sort(key=order)
    n = max(len(methods), 1)
    fig, axes = _new_figure(2, ncols=2, panel_size=(4.4, 1.4 + ROW_INCHES * n))
    _suptitle(fig, f"Protocol gap on {gap.dataset_label}: rank of each method under "
                   f"{REFERENCE_PROTOCOL} and {CLEAN_PROTOCOL} (1 = best)")
    for k, ax in enumerate(axes):
        ref, clean = RANKED[REFERENCE_PROTOCOL][k], RANKED[CLEAN_PROTOCOL][k]
        for row, method in enumerate(methods):
            colour = "C3" if gap.uses_mcar(method) else "C0"
            x = gap.rank(REFERENCE_PROTOCOL, method, ref)
            y = gap.rank(CLEAN_PROTOCOL, method, clean)
            if x is not None and y is not None:
                ax.plot([x, y], [row, row], color=colour, linewidth=1, alpha=0.5)
            if x is not None:
                ax.scatter([x], [row], s=22, facecolors="white", edgecolors=colour, zorder=3)
            if y is not None:
                ax.scatter([y], [row], s=22, color=colour, zorder=3)
        ax.set_ylim(n - 0.5, -0.5)
        ax.set_yticks(range(len(methods)))
        ax.set_yticklabels([gap.label(m) for m in methods] if k == 0 else [], fontsize=8)
        ax.set_xlim(0.5, len(gap.methods) + 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True, min_n_ticks=1))
        ax.grid(axis="y", linewidth=0.3, alpha=0.4)
        ax.set_title(f"by {metric_label(clean, 'standard')}")
        ax.set_xlabel("rank (1 = best)")
    marks = [Line2D([], [], marker="o", linestyle="", markerfacecolor="white",
                    markeredgecolor="black", label=REFERENCE_PROTOCOL),
             Line2D([], [], marker="o", linestyle="", color="black", label=CLEAN_PROTOCOL),
             Line2D([], [], color="C0", label="reads no MCAR label"),
             Line2D([], [], color="C3", label=f"reads MCAR labels ({MCAR_MARK})")]
    fig.legend(handles=marks, loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    return fig


def gap_report(root: Path | None = None, dataset: str = "coat", fmt: str = "table",
               figures: bool = True, figures_dir: Path | None = None,
               expected_seeds: int | None = None) -> ReportOutput:
    """The protocol-gap table and its paired tests in format ``fmt``, and (``figures``) the
    figure ``protocol_gap_<dataset>`` (PNG, PDF) under ``figures_dir`` (default
    ``<results>/figures``). Raises :class:`AtrecError` for a bad format and (exit code 3)
    when there are no results."""
    if fmt not in FORMATS:
        raise AtrecError(f"unknown format '{fmt}': choose from {', '.join(FORMATS)}")
    gap = protocol_gap(root, dataset, expected_seeds)
    paths: list[Path] = []
    if figures:
        out = figures_dir or (results_dir() if root is None else Path(root)) / "figures"
        paths = save_figure(gap_figure(gap), f"protocol_gap_{gap.dataset}", out)
    if fmt == "json":
        return ReportOutput(json.dumps(gap_json(gap), indent=1), tuple(paths), gap.notices)
    rows, columns = gap_rows(gap, fmt)
    body = render(rows, fmt, columns, numparse=False)
    if fmt != "csv":
        body += "\n" + _legend(gap, fmt)
    tests = gap_test_rows(gap, fmt)
    title = (f"Protocol gap: {REFERENCE_PROTOCOL} vs {CLEAN_PROTOCOL} vs the truth "
             f"({TRUTH_PROTOCOL})")
    parts = [f"{heading(title, fmt)}\n{body}",
             f"{heading('Paired t-tests vs MF, Holm over each protocol', fmt)}\n"
             + (render(tests, fmt, list(tests[0]), numparse=False) if tests
                else "(nothing to show)")]
    moved = part_rows(gap, fmt)
    parts.append(f"{heading('The gap by part: what moves each method against MF', fmt)}\n"
                 + (render(moved, fmt, list(moved[0]), numparse=False) if moved
                    else "(nothing to show)")
                 + ("" if fmt == "csv" else "\n" + _parts_legend(fmt)))
    for protocol, bench in gap.benches.items():   # intervals over test users and seeds
        if boot_metrics(bench):
            boxed = interval_rows(bench, label_of, fmt)
            parts.append(f"{heading(f'{protocol}: {INTERVALS_TITLE}', fmt)}\n"
                         + render(boxed, fmt, list(boxed[0]), numparse=False))
    return ReportOutput("\n\n".join(parts), tuple(paths), gap.notices)


def gap_datasets(root: Path | None = None) -> tuple[str, ...]:
    """The datasets with records under either binary protocol, in the paper's order."""
    base = results_dir() if root is None else Path(root)
    found = {p.name for name in GAP_PROTOCOLS
             for p in (get_protocol(name).results_root(base) / "runs").glob("*") if p.is_dir()}
    return tuple(sorted(found, key=dataset_order))


def gap_reports(datasets: Sequence[str] | None = None, fmt: str = "table", figures: bool = True,
                expected_seeds: int | None = None,
                root: Path | None = None) -> list[ReportOutput]:
    """:func:`gap_report` of each of ``datasets`` (default: those with binary results); in
    ``json``, one output holding the list of every dataset's document."""
    chosen = list(datasets or gap_datasets(root))
    if not chosen:
        base = results_dir() if root is None else Path(root)
        raise AtrecError(f"no results of the binary protocols under {base}: run 'atrec "
                         f"reproduce --binary' first", exit_code=3)
    outs = [gap_report(root, d, fmt, figures, expected_seeds=expected_seeds) for d in chosen]
    if fmt == "json" and len(outs) > 1:
        doc = [json.loads(o.text) for o in outs]
        return [ReportOutput(json.dumps(doc, indent=1), tuple(p for o in outs for p in o.figures),
                             tuple(n for o in outs for n in o.notices))]
    return outs
