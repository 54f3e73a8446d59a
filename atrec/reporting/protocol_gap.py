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

:func:`protocol_gap` loads a :class:`Gap`; :mod:`atrec.reporting.protocol_gap_report` renders it
in every output format and draws the figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from atrec.errors import AtrecError
from atrec.evaluation.registry import DIRECTIONS as LOWER_IS_BETTER
from atrec.evaluation.significance import MethodTest, method_tests
from atrec.methods.options import parse_method
from atrec.methods.registry import canonical, registry_for
from atrec.names import NO_PROPENSITY
from atrec.paths import results_dir
from atrec.protocols import get_protocol
from atrec.protocols.binary import BinaryClean, BinaryICDE24
from atrec.protocols.gap_steps import BinaryCleanICDE24Rule, BinaryICDE24CleanTest
from atrec.protocols.truth import BinaryTruth
from atrec.semisynthetic.truth import DATASET as TRUTH_DATASET
from atrec.reporting.benchmark import (
    BINARY_BASELINE,
    Benchmark,
    _method_order,
    label_of,
    load_benchmark,
    row_sources,
)
from atrec.reporting.common import dataset_label
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
# the runs between the two protocols that decompose the gap into its parts
# (:mod:`atrec.reporting.protocol_gap_parts`): step name -> (protocol, parameter set)
STEP_PROTOCOL = BinaryICDE24CleanTest.name
RULE_PROTOCOL = BinaryCleanICDE24Rule.name
CLEAN_REFERENCE = "clean-reference"
STEPS = {STEP_PROTOCOL: (STEP_PROTOCOL, REFERENCE), RULE_PROTOCOL: (RULE_PROTOCOL, REFERENCE),
         CLEAN_REFERENCE: (CLEAN_PROTOCOL, REFERENCE)}
STEP_SEEDS = BinaryICDE24CleanTest.seeds   # the chain's seeds: binary-icde24's


def steps_command(dataset: str) -> str:
    """The one command line that trains the chain's runs of ``dataset`` (every method in each
    form, :data:`STEP_SEEDS` seeds)."""
    return " && ".join(f"atrec train --protocol {name} --params {params} --dataset {dataset} "
                       f"--method all --option form=all --without-at --seeds {STEP_SEEDS}"
                       for name, params in STEPS.values())


def bench_key(bench: Benchmark | None, protocol: str, method: str) -> str | None:
    """The key of a row in ``bench`` (records under ``protocol``): the row itself, or the
    method's key there (:func:`~atrec.methods.registry.canonical`); ``None`` without results."""
    if bench is None:
        return None
    if method in bench.summaries:
        return method
    try:
        key = canonical(method, protocol)
    except AtrecError:
        return None
    return key if key in bench.summaries else None


@dataclass(frozen=True)
class Gap:
    """One dataset's methods under both protocols and on the truth (:data:`COLUMNS`):
    ``benches`` (protocol -> its
    :class:`~atrec.reporting.benchmark.Benchmark`, absent when it has no results), ``methods``
    (names, in registry order), ``tests`` (protocol -> the Holm-adjusted tests against MF on
    :data:`RANKED`), ``notices`` and ``steps`` (step of :data:`STEPS` -> its
    :class:`~atrec.reporting.benchmark.Benchmark`, absent when it has no results)."""

    dataset: str
    benches: dict
    methods: tuple[str, ...]
    tests: dict
    notices: tuple[str, ...]
    steps: dict = field(default_factory=dict)

    def data_of(self, protocol: str) -> str:
        """The dataset a protocol's column reads: the truth's own, else the gap's."""
        return TRUTH_DATASET if protocol == TRUTH_PROTOCOL else self.dataset

    def key(self, protocol: str, method: str) -> str | None:
        """The key under ``protocol`` of a row (module doc: a method at each protocol's
        default, or in a form named by the row), ``None`` where that protocol has no results
        of it."""
        return bench_key(self.benches.get(protocol), protocol, method)

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
    steps = load_steps(base, dataset, expected_seeds)
    if len(steps) < len(STEPS):
        notices.append(f"the gap's parts need the runs between the protocols: run "
                       f"'{steps_command(dataset)}'")
    return Gap(dataset, benches, tuple(names), tests, tuple(notices), steps)


def load_steps(base: Path, dataset: str, expected_seeds: int | None = None) -> dict:
    """The chain's runs of ``dataset`` under ``base`` (:data:`STEPS`): step -> its
    :class:`~atrec.reporting.benchmark.Benchmark`, a step without records left out."""
    steps = {}
    for step, (name, params) in STEPS.items():
        try:
            steps[step] = load_benchmark(get_protocol(name).results_root(base), [dataset], params,
                                         expected_seeds or STEP_SEEDS, protocol=name)
        except AtrecError as exc:
            if exc.exit_code != 3:
                raise
    return steps
