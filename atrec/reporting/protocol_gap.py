"""The protocol gap (``atrec report --table protocol-gap``): how much of each binary method's
standing comes from the protocol it is measured under.

For one dataset, every binary method with results is read under the two binary protocols
(:mod:`atrec.protocols.binary`):

* ``binary-icde24``, the ICDE 2024 code's protocol with its leaks, at the parameter set
  ``reference`` (the values the code ships);
* ``binary-clean``, a validation split and no leak, at the first of its sets in
  ``train``'s default order (atrec's shipped ``tuned-atrec``, then ``reference``, then the
  user's ``tuned``) that the method has results for (each row names the set).

and beside them, whatever the dataset, the same methods on the semi-synthetic truth
(``binary-truth``, :mod:`atrec.protocols.truth`: trained on an MNAR draw from the ML-100K truth,
scored on every cell against its true rate), so that a reader sees which gains on a real MCAR
test are gains on the truth too.

Per method and protocol the table shows AUC (pooled and per user), nDCG@5 and Recall@5, each
protocol in its own convention (``binary-icde24``: a test user without a positive counts as the
reference code counts it, the ``(ref)`` metrics; ``binary-clean``: such users left out), and the
method's rank among the methods of that protocol by AUC and by nDCG@5 (1 = best; tied means
share the better rank, so 1, 1, 3). A method with a ``form`` has a row at each protocol's
default (``dr``: the code's form under ``binary-icde24``, the corrected one under
``binary-clean``) and a row per form named (``dr+form=coded``: the code's form under both), so a
form is compared with itself across the protocols; ranks count each run once. A method *beats MF* under a protocol on a metric when its paired t-test
against MF over the seeds both have (:func:`atrec.evaluation.significance.method_tests`) has a
Holm-adjusted p below 0.05 and its mean is the better one; the Holm family is one protocol's
tests, every method x {AUC, nDCG@5} (on the truth: its pair-weighted AUC and nDCG@5 with gains
``c``). Methods that read MCAR labels (``uses_mcar``) carry ``†``.

:func:`protocol_gap` loads a :class:`Gap`; :func:`gap_report` renders it in every output format
and draws the figure (:func:`gap_figure`: rank under one protocol against the other).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from atrec.errors import AtrecError
from atrec.evaluation.fits import FAILED_MARK
from atrec.evaluation.registry import DIRECTIONS as LOWER_IS_BETTER
from atrec.evaluation.significance import ALPHA, MethodTest, method_tests
from atrec.evaluation.summary import dataset_order
from atrec.methods.options import parse_method
from atrec.methods.registry import canonical, registry_for
from atrec.names import NO_PROPENSITY
from atrec.paths import results_dir
from atrec.protocols import get_protocol
from atrec.protocols.binary import BinaryClean, BinaryICDE24
from atrec.protocols.truth import BinaryTruth
from atrec.semisynthetic.truth import DATASET as TRUTH_DATASET
from atrec.reporting.benchmark import (
    BINARY_BASELINE,
    MCAR_MARK,
    Benchmark,
    _method_order,
    label_of,
    load_benchmark,
    row_sources,
)
from atrec.reporting.common import dataset_label, heading, json_safe, metric_label, signed
from atrec.reporting.figures import _new_figure, _suptitle, save_figure
from atrec.reporting.intervals import TITLE as INTERVALS_TITLE
from atrec.reporting.intervals import boot_metrics, interval_rows, row_intervals
from atrec.reporting.latex import latex_escape
from atrec.reporting.report import ReportOutput
from atrec.reporting.tables import FORMATS, render
from atrec.params.lookup import REFERENCE

REFERENCE_PROTOCOL = BinaryICDE24.name
CLEAN_PROTOCOL = BinaryClean.name
GAP_PROTOCOLS = (REFERENCE_PROTOCOL, CLEAN_PROTOCOL)
# the semi-synthetic truth, the same columns for every dataset: its own data set's records
TRUTH_PROTOCOL = BinaryTruth.name
COLUMNS = (*GAP_PROTOCOLS, TRUTH_PROTOCOL)
# the parameter sets read, in order of preference (each method from the first that has it)
GAP_PARAMS = {REFERENCE_PROTOCOL: REFERENCE, CLEAN_PROTOCOL: ",".join(BinaryClean.param_sets),
              TRUTH_PROTOCOL: ",".join(BinaryTruth.param_sets)}
# the metrics ranked and tested (AUC, nDCG@5), then those shown too, in each protocol's convention
RANKED = {REFERENCE_PROTOCOL: ("auc", "ndcg5_ref"), CLEAN_PROTOCOL: ("auc", "ndcg5"),
          TRUTH_PROTOCOL: ("truth_auc", "truth_ndcg5")}
SHOWN = {REFERENCE_PROTOCOL: ("auc_user", "recall5_ref"),
         CLEAN_PROTOCOL: ("auc_user", "recall5"),
         TRUTH_PROTOCOL: ("truth_user_auc", "truth_recall5")}
SHORT = {REFERENCE_PROTOCOL: "icde24", CLEAN_PROTOCOL: "clean",
         TRUTH_PROTOCOL: "truth"}   # column prefixes


@dataclass(frozen=True)
class Gap:
    """One dataset's methods under both protocols and on the truth (:data:`COLUMNS`):
    ``benches`` (protocol -> its
    :class:`~atrec.reporting.benchmark.Benchmark`, absent when it has no results), ``methods``
    (names, in registry order), ``tests`` (protocol -> the Holm-adjusted tests against MF on
    :data:`RANKED`) and ``notices``."""

    dataset: str
    benches: dict
    methods: tuple[str, ...]
    tests: dict
    notices: tuple[str, ...]

    def data_of(self, protocol: str) -> str:
        """The dataset a protocol's column reads: the truth's own, else the gap's."""
        return TRUTH_DATASET if protocol == TRUTH_PROTOCOL else self.dataset

    def key(self, protocol: str, method: str) -> str | None:
        """The key under ``protocol`` of a row (module doc: a method at each protocol's
        default, or in a form named by the row), ``None`` where that protocol has no results
        of it."""
        bench = self.benches.get(protocol)
        if bench is None:
            return None
        if method in bench.summaries:
            return method
        try:
            key = canonical(method, protocol)
        except AtrecError:
            return None
        return key if key in bench.summaries else None

    def mean(self, protocol: str, method: str, metric: str) -> float | None:
        key = self.key(protocol, method)
        if key is None:
            return None
        return self.benches[protocol].mean(self.data_of(protocol), key, NO_PROPENSITY, False, metric)

    def rank(self, protocol: str, method: str, metric: str) -> int | None:
        """1 + the number of methods with a strictly better mean (``None`` without results)."""
        mine = self.mean(protocol, method, metric)
        if mine is None:
            return None
        keys = {self.key(protocol, m) for m in self.methods} - {None}
        others = [self.benches[protocol].mean(self.data_of(protocol), k, NO_PROPENSITY, False,
                                              metric)
                  for k in keys]
        lower = LOWER_IS_BETTER[metric]
        return 1 + sum(v is not None and (v < mine if lower else v > mine) for v in others)

    def test(self, protocol: str, method: str, metric: str) -> MethodTest | None:
        key = self.key(protocol, method)
        return next((t for t in self.tests.get(protocol, ()) if (t.method, t.metric) ==
                     (key, metric)), None)

    def beats_mf(self, protocol: str, method: str, metric: str) -> bool | None:
        """Whether ``method`` beats MF significantly (module doc); ``None`` when untested."""
        t = self.test(protocol, method, metric)
        if t is None:
            return None
        return bool(t.t_significant and t.method_better)

    def label(self, method: str) -> str:
        """A row's label: the method's, naming the options its key names (``DR
        (form=coded)``; a row without: each protocol's default form)."""
        bench = next(b for b in (*self.benches.values(),))
        name, options = parse_method(method)
        if not options:
            return label_of(bench, method)
        base = label_of(bench, name) if name in bench.summaries else name
        return f"{base} ({', '.join(f'{k}={v}' for k, v in options.items())})"

    @property
    def synthetic(self) -> str | None:
        """The generator the dataset's records name, where they came from synthetic data."""
        return next((b.synthetic[self.dataset] for b in self.benches.values()
                     if self.dataset in b.synthetic), None)

    @property
    def dataset_label(self) -> str:
        """The dataset's name in captions and titles, naming synthetic data as such."""
        return dataset_label(self.dataset, self.synthetic)

    def uses_mcar(self, method: str) -> bool:
        return any(self.benches[p].info(self.key(p, method)).uses_mcar for p in self.benches
                   if self.key(p, method) in {i.name for i in self.benches[p].methods})

    def failed(self, protocol: str, method: str) -> dict:
        """``{seed: reason}`` of the method's failed fits under ``protocol``
        (:mod:`atrec.evaluation.fits`); they are left out of its means and tests."""
        key = self.key(protocol, method)
        if key is None:
            return {}
        return self.benches[protocol].summaries[key].failed_seeds(self.data_of(protocol),
                                                                  NO_PROPENSITY, False)

    def params(self, protocol: str, method: str) -> tuple[str, str]:
        """``(parameter set, budget)`` of the method's row under ``protocol`` (``-`` if none)."""
        bench, key = self.benches.get(protocol), self.key(protocol, method)
        if bench is None or key not in {i.name for i in bench.methods}:
            return "-", "-"
        return row_sources(bench, self.data_of(protocol), key, NO_PROPENSITY)


def protocol_gap(root: Path | None = None, dataset: str = "coat",
                 expected_seeds: int | None = None) -> Gap:
    """Load the gap of ``dataset`` from the results folder ``root`` (default: atrec's).
    Raises :class:`AtrecError` (exit code 3) when neither protocol has results there."""
    base = results_dir() if root is None else Path(root)
    benches: dict[str, Benchmark] = {}
    notices: list[str] = []
    for name in COLUMNS:
        protocol = get_protocol(name)
        data = TRUTH_DATASET if name == TRUTH_PROTOCOL else dataset
        try:
            bench = load_benchmark(protocol.results_root(base), [data], GAP_PARAMS[name],
                                   expected_seeds or protocol.seeds, protocol=name)
        except AtrecError as exc:
            if exc.exit_code != 3:
                raise
            notices.append(f"no {name} results for {dataset_label(data)}: run 'atrec train "
                           f"--protocol {name} --dataset {data} --method all'"
                           + (" (or 'make truth')" if name == TRUTH_PROTOCOL else ""))
            continue
        benches[name] = bench
        notices += [f"{name}: {n}" for n in bench.notices]
    if not set(benches) & set(GAP_PROTOCOLS):
        raise AtrecError(f"no results of the binary protocols for {dataset_label(dataset)} under "
                         f"{base}: run 'atrec reproduce --binary' (or 'atrec train --protocol "
                         f"binary-icde24 --params reference --method all --dataset {dataset}')",
                         exit_code=3)
    # a row per key of either protocol: a method at each protocol's default form, and each
    # other form by name under both, so a form is compared with itself across the protocols
    registry = registry_for(REFERENCE_PROTOCOL)
    names = sorted(dict.fromkeys(i.name for b in benches.values() for i in b.methods),
                   key=lambda m: _method_order(m, registry))
    tests = {}
    for name, bench in benches.items():
        data = TRUTH_DATASET if name == TRUTH_PROTOCOL else dataset
        rows = [(data, m, NO_PROPENSITY) for m in names if m in bench.summaries]
        tests[name] = tuple(method_tests(bench.summaries, rows, RANKED[name],
                                         baseline=BINARY_BASELINE, pair=lambda p: p))
    return Gap(dataset, benches, tuple(names), tests, tuple(notices))


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _beats(gap: Gap, protocol: str, method: str) -> str:
    """``AUC, nDCG@5`` (the metrics on which it beats MF), ``no``, or ``-`` when untested."""
    verdicts = [(metric_label(m, "standard"), gap.beats_mf(protocol, method, m))
                for m in RANKED[protocol]]
    if all(v is None for _, v in verdicts):
        return "-"
    return ", ".join(label for label, v in verdicts if v) or "no"


def gap_rows(gap: Gap, fmt: str = "table") -> tuple[list[dict], list[str]]:
    """The gap table in a text format: one row per method."""
    rows = []
    for method in gap.methods:
        label = gap.label(method)
        if fmt == "latex":
            label = latex_escape(label) + ("$^\\dagger$" if gap.uses_mcar(method) else "")
        elif gap.uses_mcar(method):
            label += MCAR_MARK
        failed = {p: len(gap.failed(p, method)) for p in COLUMNS}
        if any(failed.values()):
            label += "$^\\ddagger$" if fmt == "latex" else FAILED_MARK
        row = {"method": label}
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
        rows.append(row)
    return rows, list(rows[0]) if rows else []


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
    """The gap as machine-readable data (non-finite numbers as ``None``)."""
    methods = []
    for method in gap.methods:
        entry = {"method": method, "label": gap.label(method), "uses_mcar": gap.uses_mcar(method)}
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
                      "truth_dataset": TRUTH_DATASET,
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
