"""The benchmark table: every method x propensity, without and with AT, and tests against MF-IPS.

:func:`load_benchmark` reads the records of one parameter set into a :class:`Benchmark`, which
:mod:`atrec.reporting.benchmark_render` writes as two tables (``atrec report --table
benchmark``; docs/methods.md, "How the baselines are reported"):

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

Under a binary protocol (``protocol`` whose view is ``binary``) the methods are the binary
registry's (:func:`atrec.methods.registry.registry_for`), the baseline of the paired tests is
binary MF (same propensity ``none``), and the AT columns are those the records hold (only
``w/o AT`` while no binary record was trained with AT). A second family tests every other method
against IPS (:data:`SECOND_BINARY_BASELINE`), Holm-adjusted on its own, when IPS has results:
the binary literature's methods claim to beat IPS as well as MF.

Methods: those with records (default) or the ones asked for. A method name that the registry does
not know (a plug-in that is not installed here) still gets its rows, labelled by its name; it is
taken to use propensities unless all its records say ``none``, and not to use MCAR labels.
Missing cells show ``-``; they, seeds missing against the expected count, and seeds that only
one side of a paired test has are reported as notices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from atrec.errors import AtrecError
from atrec.evaluation.registry import metrics_in
from atrec.evaluation.significance import MethodTest, baseline_propensity, method_tests
from atrec.evaluation.summary import (
    EXPECTED_SEEDS,
    dataset_order,
    merge_summaries,
    resolve_params_label,
    summarize,
)
from atrec.methods.binary.ips import BinaryIPS, BinaryMF
from atrec.methods.options import parse_method
from atrec.methods.registry import (
    METHODS,
    base_method,
    method_class,
    method_label,
    registry_for,
)
from atrec.names import DATASETS, DEFAULT_METHOD, NO_PROPENSITY, config_key
from atrec.propensity.registry import (
    PROPENSITIES,
    propensity_label,
    propensity_order,
    table1_propensities,
)
from atrec.protocols import get_protocol
from atrec.reporting.common import (
    better_pair,
    config_label,
    dataset_label,
    ndcg_metrics,
    train_hint,
)
from atrec.reporting.nuisance import flag_notices, flagged_runs
from atrec.reporting.report import no_results_error
from atrec.params.budget import params_budget
from atrec.params.lookup import PUBLISHED
from atrec.results.records import iter_records, record_label

BASELINE = DEFAULT_METHOD          # the tests' baseline under the 1-5 star protocols
BINARY_BASELINE = BinaryMF.name    # ... and under the binary ones
SECOND_BINARY_BASELINE = BinaryIPS.name   # the binary protocols' second family of tests
MCAR_MARK = "†"
AT_OPTIONS = (False, True)


def is_binary(protocol: str | None) -> bool:
    """Whether ``protocol`` (a name; ``None``: the default) sees binary labels."""
    return protocol is not None and get_protocol(protocol).view == "binary"


def baseline_for(protocol: str | None) -> str:
    """The method every other is tested against under ``protocol``."""
    return BINARY_BASELINE if is_binary(protocol) else BASELINE


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
    # (dataset, method, propensity, with_at, set label) -> the budget its records name
    budgets: dict = field(default_factory=dict)
    baseline: str = BASELINE
    at_options: tuple[bool, ...] = AT_OPTIONS
    protocol: str | None = None
    # the second family (binary protocols): every method but the baselines against IPS
    second_tests: tuple[MethodTest, ...] = ()
    # (dataset, method, propensity) -> its seeds whose nuisance models are flagged
    # (atrec.reporting.nuisance)
    flagged: dict = field(default_factory=dict)

    @property
    def synthetic(self) -> dict:
        """Dataset -> the generator its records name, where they came from synthetic data."""
        found: dict[str, str] = {}
        for summary in self.summaries.values():
            for dataset, source in summary.synthetic.items():
                found.setdefault(dataset, source)
        return found

    def dataset_label(self, dataset: str) -> str:
        """The dataset's label, saying so where its records came from synthetic data."""
        return dataset_label(dataset, self.synthetic.get(dataset))

    def info(self, method: str) -> MethodInfo:
        return next(m for m in self.methods if m.name == method)

    def uses_mcar(self, method: str, propensity: str) -> bool:
        """Whether a row reads MCAR labels (through its propensity or its method)."""
        return self.info(method).uses_mcar or propensity_uses_mcar(propensity)

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
    values were made, as its records name it (records made before they did: from the
    parameter file, :func:`~atrec.params.budget.params_budget`); ``A / B`` when the
    runs without AT (A) and with AT (B) differ, ``-`` where there are no results."""
    sets, budgets = [], []
    for at in bench.at_options:
        cell = bench.summaries[method].cell(dataset, propensity, at, bench.metrics[0])
        sets.append(cell.params if cell is not None else "-")
        if cell is None:
            budgets.append("-")
            continue
        source = cell.params
        budgets.append(bench.budgets.get((dataset, method, propensity, at, cell.params))
                       or params_budget(source, dataset, config_key(propensity, at, method),
                                        tables, bench.protocol))
    return tuple(" / ".join(dict.fromkeys(v)) if len(set(v)) == 1 else " / ".join(v)
                 for v in (sets, budgets))


def propensity_uses_mcar(name: str) -> bool:
    """Whether propensity ``name`` reads MCAR labels (False for one the registry lacks)."""
    try:
        return bool(PROPENSITIES.get(name).uses_mcar)
    except AtrecError:
        return False


def _method_info(name: str, propensities_seen: set[str], registry=METHODS,
                 protocol: str | None = None) -> MethodInfo:
    """A row's method: ``name`` is a method key (its options named in its label)."""
    try:
        cls, label = method_class(name, protocol), method_label(name, protocol)
    except AtrecError:
        uses = bool(propensities_seen - {NO_PROPENSITY}) or not propensities_seen
        return MethodInfo(name, name, uses, False, False)
    return MethodInfo(name, label, bool(cls.uses_propensity), bool(cls.uses_mcar), True)


def _method_order(name: str, registry=METHODS) -> tuple:
    """Registration order of a key's method, then the key (a method's forms side by side)."""
    names, base = registry.names(), parse_method(name)[0]
    return (names.index(base) if base in names else len(names), name)


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
    registry, baseline = registry_for(protocol), baseline_for(protocol)
    order = lambda name: _method_order(name, registry)
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
        bad = [m for m in methods
               if m not in seen and parse_method(m)[0] not in registry.names()]
        if bad:
            raise AtrecError(f"unknown method '{bad[0]}': choose from "
                             f"{', '.join(sorted({*registry.names(), *seen}, key=order))}")
        chosen = list(dict.fromkeys(methods))
    else:
        chosen = sorted(seen, key=order)
    infos = tuple(_method_info(m, seen.get(m, set()), registry, protocol) for m in chosen)
    # each configuration's results come from the first listed parameter set that has them
    summaries = {m: merge_summaries([summarize(records, params=lab, datasets=folders,
                                               expected_seeds=expected_seeds, method=m)
                                     for lab in labels])
                 for m in dict.fromkeys([*chosen, baseline])}
    label = ", ".join(dict.fromkeys(lab for m in summaries for lab in labels
                                    if any(c.params == lab for c in summaries[m].cells.values())))
    label = label or labels[0]
    if datasets:
        shown = tuple(sorted(dict.fromkeys(datasets), key=dataset_order))
    else:
        shown = tuple(d for d in DATASETS if any(summaries[m].has_results(d) for m in chosen))
        shown = tuple(sorted(shown, key=dataset_order))
    if not any(summaries[m].has_results(d) for m in chosen for d in shown):
        empty = replace(summaries[baseline], datasets=tuple(datasets or ()))
        raise no_results_error(empty, root, exit_code=3, protocol=protocol)
    used = {p for m in chosen for p in seen.get(m, set())} - {NO_PROPENSITY}
    propensities = sorted({*table1_propensities(), *used},
                          key=lambda p: (propensity_order(p), p))
    rows = tuple((d, m.name, p) for d in shown for m in infos
                 for p in (propensities if m.uses_propensity else [NO_PROPENSITY]))
    binary = is_binary(protocol)
    # binary: the AT options the records hold; MF is paired with the same propensity (none)
    at_options = tuple(sorted({k[2] for m in chosen for k in summaries[m].cells} or {False})) \
        if binary else AT_OPTIONS
    tests = method_tests(summaries, rows, metrics, baseline=baseline,
                         pair=(lambda p: p) if binary else baseline_propensity)
    second = ()
    if binary and SECOND_BINARY_BASELINE in summaries:
        second = tuple(method_tests(summaries, [r for r in rows if r[1] != baseline], metrics,
                                    baseline=SECOND_BINARY_BASELINE, pair=lambda p: p))
    budgets = {}
    for r in records:
        # a record made before budgets were known per protocol may say "-": read the file then
        if (isinstance(r, dict) and record_label(r) in labels
                and r.get("params_budget") not in (None, "", "-")):
            budgets.setdefault((r["dataset"], base_method(r), str(r.get("propensity")),
                                bool(r.get("with_at")), record_label(r)), r["params_budget"])
    # a row's flags are those of the parameter set it shows, never of the sets together
    shown_sets = {(k[0], m, str(k[1])): c.params
                  for m in chosen for k, c in summaries[m].cells.items()}
    flagged = {k: v for k, v in flagged_runs(records, labels, shown_sets).items()
               if k[1] in chosen}
    bench = Benchmark(label, shown, infos, summaries, rows, metrics, tuple(tests), (),
                      budgets, baseline, at_options, protocol, second, flagged)
    notices = _notices(bench, chosen, protocol) + flag_notices(flagged, bench_label(bench))
    return replace(bench, notices=tuple(notices))


def bench_label(bench: Benchmark):
    """``method -> its label in bench`` (:func:`label_of` bound to ``bench``)."""
    return lambda method: label_of(bench, method)


def _notices(bench: Benchmark, chosen: list[str], protocol: str | None) -> list[str]:
    notes = []
    for m in chosen:
        notes += [f"{bench.info(m).label}: {w}" for w in bench.summaries[m].warnings]
    for dataset in bench.datasets:
        for info in bench.methods:
            gaps = [f"{propensity_label(p) if p != NO_PROPENSITY else 'no propensity'}"
                    f" {'w/ AT' if at else 'w/o AT'}"
                    for d, m, p in bench.rows if (d, m) == (dataset, info.name)
                    for at in bench.at_options
                    if any(bench.mean(d, m, p, at, k) is None for k in bench.metrics)]
            if gaps:
                notes.append(f"no results for {dataset_label(dataset)} {info.label}: "
                             f"{', '.join(gaps)} (run {train_hint(dataset, method=info.name, protocol=protocol)})")
    if not bench.summaries[bench.baseline].has_results():
        notes.append(f"no paired tests: no {label_of(bench, bench.baseline)} results of params "
                     f"'{bench.params}'")
    dropped = {}
    for t in bench.tests:
        if t.dropped:
            key = (t.dataset, t.method, t.propensity, t.baseline_propensity, t.with_at)
            dropped.setdefault(key, set()).update(t.dropped)
    for (dataset, method, prop, base_prop, at), seeds in dropped.items():
        base = label_of(bench, bench.baseline)
        notes.append(f"paired test of {label_of(bench, method)} against "
                     f"{base} on {config_label(dataset, prop, at)}"
                     f"{'' if prop == base_prop else f' ({base} {base_prop})'}"
                     f": seed"
                     f"{'s' if len(seeds) > 1 else ''} {', '.join(map(str, sorted(seeds)))} "
                     f"only on one side, left out")
    return notes


def label_of(bench: Benchmark, method: str) -> str:
    """The label of ``method`` in ``bench`` (its registered label, or its name)."""
    try:
        return bench.info(method).label
    except StopIteration:
        return _method_info(method, set(), registry_for(bench.protocol)).label
