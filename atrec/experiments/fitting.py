"""Run configurations over seeds: splits -> propensities -> learners -> per-run records.

One *configuration* is (dataset, propensity, with/without AT, parameter set). Its seeds are
trained together (stacked replicas, see :mod:`atrec.learners.mf`), in groups whose records are written as
soon as the group finishes, so an interrupted run loses at most the group in progress and a
rerun skips every seed that already has a record (``force=True`` recomputes).

Two steps, shared by local runs and runs on a Dask cluster (:mod:`atrec.experiments.distributed`):
:func:`plan_config` decides which seeds are left and how they are grouped, and
:func:`compute_group` turns one group into records; whoever computed them, this process saves
them (:meth:`ConfigPlan.save`).

Seeds: seed ``s`` shuffles the 90/10 train/validation split and initialises the model
(``model_seed = s``), as in the authors' runs (``tf.set_random_seed(s)``). The batch sampler uses
the authors' fixed seed 12345 unless ``batch_seed=None`` (per-seed streams).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from atrec.data.ratings import RatingData
from atrec.evaluation.registry import AFTER_TRAINING, get_metric, ranking_values
from atrec.experiments.inputs import Inputs, stack_inputs
from atrec.experiments.locks import GroupClaim, Holder, try_claim
from atrec.experiments.reuse import load_existing
from atrec.learners import layout
from atrec.methods.base import FitProblem, MethodResult
from atrec.methods.binary.at import fit_binary_at
from atrec.methods.registry import get_method, record_method
from atrec.methods.tri_training import fit_with_at
from atrec.names import DEFAULT_METHOD, NO_PROPENSITY, config_key
from atrec.run_settings import TUNING_SEED
from atrec.protocols import Protocol, get_protocol
from atrec.results.params import HyperParams
from atrec.results.records import (
    SCHEMA,
    load_reusable,
    params_label,
    provenance,
    record_path,
    save_record,
    variant_suffix,
)
from atrec.runtime import compiled


@dataclass(frozen=True)
class RunSpec:
    """One configuration to train: what, with which parameters, under which protocol.

    ``method``: a registered method's key (:func:`atrec.methods.registry.canonical`: its name
    and the options that differ from their default, ``dr+form=coded``), trained alone or,
    with ``with_at``, as A1/A2 of asymmetric tri-training.
    """

    dataset: str
    propensity: str
    with_at: bool
    params: HyperParams
    params_source: str
    seeds: tuple[int, ...]
    settings: object = None      # mf.TrainSettings (default: the protocol's)
    at_settings: object = None   # at.ATSettings (default: the protocol's)
    # An estimator object (``estimate(split) -> PairPropensities``) used instead of the named
    # one, and a block stored as ``record["experiment"]`` (the ML-100K variance experiment).
    estimator: object = field(default=None, compare=False)
    experiment: dict | None = field(default=None, compare=False)
    method: str = DEFAULT_METHOD
    # a registered protocol (atrec.protocols), resolved once: a name is resolved here
    protocol: Protocol | str | None = None
    # how the values were made ("authors", "50 trials"; results.params.params_budget), stored
    # in each record so that a table reads it from the run, not from today's parameter file
    params_budget: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "protocol", get_protocol(self.protocol))

    @property
    def key(self) -> str:
        """The folder (and progress-line) key: ``config_key``'s; under a binary protocol every
        method's folder is its own (``mf-ips/none``; 1-5 star MF-IPS keeps its old ones)."""
        return config_key(self.propensity, self.with_at, self.method,
                          named=self.protocol.view == "binary")

    @property
    def params_key(self) -> str:
        """The configuration's key in parameter files (:func:`atrec.names.config_key`)."""
        return config_key(self.propensity, self.with_at, self.method)

    @property
    def variant(self) -> str:
        """How the protocol settings deviate from the authors' (``""``, ``+ips``, ...)."""
        settings = self.at_settings if self.with_at and self.at_settings else self.settings
        if not settings or not hasattr(settings, "loss"):   # binary protocols' EpochSettings
            return ""
        return variant_suffix(settings.loss, settings.batch_seed)

    @property
    def label(self) -> str:
        """Folder label: parameter set plus protocol variant (e.g. ``published+ips``)."""
        return params_label(self.params_source) + self.variant


def _settings(spec: RunSpec):
    return spec.settings or spec.protocol.train_settings(spec.method)


def _at_settings(spec: RunSpec):
    return spec.at_settings or spec.protocol.at_settings()


def ranking_part(spec: RunSpec, split):
    """The part of the MCAR test set the spec's protocol ranks (``test`` or ``test_full``)."""
    return getattr(split, spec.protocol.ranking_part)


def _fit(data: RatingData, spec: RunSpec, seeds: list[int],
         inputs: Inputs) -> tuple[MethodResult, dict]:
    """Train the seeds of one group with the spec's method (and AT); returns the result and the
    protocol settings it ran under (a dict for the records)."""
    method = get_method(spec.method, spec.protocol)
    full = ranking_part(spec, inputs.splits[0])
    # the split's sizes: binary-icde24 indexes Yahoo by its 1-based ids (one more row each)
    problem = FitProblem(inputs.splits[0].num_users, inputs.splits[0].num_items, tuple(seeds),
                         inputs.train, inputs.val,
                         inputs.test, {"user": full.user, "item": full.item,
                                       "rating": full.rating}, inputs.splits)
    params = spec.params.as_dict()
    binary = getattr(method, "view", None) == "binary"
    with compiled.before_fit(_loop_key(data, spec, inputs), fit_kind(data, spec)):
        if spec.with_at:
            settings = _at_settings(spec)
            if binary:    # the settings as the method applies them: the form that runs
                settings = method.applied(settings)
                return fit_binary_at(method, problem, params, settings), settings.as_dict()
            return fit_with_at(method, problem, params, settings), settings.as_dict()
        settings = method.applied(_settings(spec)) if binary else _settings(spec)
        return method.fit(problem, params, settings), settings.as_dict()


def fit_kind(data: RatingData, spec: RunSpec) -> tuple:
    """Fits whose memory grows alike (:func:`atrec.runtime.compiled.before_fit`'s ``kind``): the
    dataset and its sizes, the method, AT or not; every ``dim`` and setting of them."""
    return (data.name, data.num_users, data.num_items, spec.method, spec.with_at)


def loop_family(data: RatingData, spec: RunSpec) -> tuple:
    """What the compiled loops of a configuration's fits depend on, known before any input is
    stacked: the dataset and its sizes, the method, AT or not, the settings and ``dim``. Not the
    propensity or ``lam``, which only change values: configurations of one family share their
    loops (Yahoo's five AT configurations at dim 40 share one). The driver trains a family's
    groups together (:func:`atrec.experiments.driver.train_plans`)."""
    return (*fit_kind(data, spec),
            repr(_at_settings(spec) if spec.with_at else _settings(spec)), spec.params.dim)


def _loop_key(data: RatingData, spec: RunSpec, inputs: Inputs) -> tuple:
    """The key of a fit's compiled loops (:func:`atrec.runtime.compiled.before_fit`): its
    :func:`loop_family` and the arrays' shapes (``[R, n]``, so the replicas too). A key that
    missed something would cost memory (a compilation past the bound), never a different
    number."""
    return (*loop_family(data, spec), np.shape(inputs.train["user"]),
            np.shape(inputs.val["user"]), np.shape(inputs.test["user"]))


def _records(data: RatingData, spec: RunSpec, seeds: list[int], inputs: Inputs,
             result: MethodResult, settings: dict, elapsed: float) -> list[dict]:
    protocol = spec.protocol
    # a plug-in whose __init__ skips Method's has no options to say
    options = getattr(get_method(spec.method, spec.protocol), "option_values", {})
    full = ranking_part(spec, inputs.splits[0])
    ranked = [m for m in protocol.metrics if get_metric(m).kind in AFTER_TRAINING]
    out = []
    for k, seed in enumerate(seeds):
        metrics = {"mae": float(result.mae[k]), "mse": float(result.mse[k]),
                   **_finite(ranking_values(ranked, full.user, full.rating, result.scores[k])),
                   "best_step": int(result.best_step[k]),
                   "best_val_loss": float(result.best_val_loss[k])}
        record = {
            "schema": SCHEMA, "dataset": spec.dataset, "propensity": spec.propensity,
            "with_at": spec.with_at, "method": record_method(spec.method, spec.with_at),
            "options": dict(options), "method_key": spec.method,
            "seed": seed, "model_seed": seed, "batch_seed": settings.get("batch_seed"),
            "params": spec.params.as_dict(), "params_source": spec.params_source,
            **({"params_budget": spec.params_budget} if spec.params_budget else {}),
            "variant": spec.variant,
            "metrics": metrics,
            "protocol": {"name": protocol.name, "settings": settings, **protocol.split_record(),
                         "num_users": data.num_users, "num_items": data.num_items,
                         "n_train": len(inputs.splits[k].train), "n_val": len(inputs.splits[k].val),
                         "n_test": len(inputs.splits[k].test),
                         "n_test_full": len(inputs.splits[k].test_full),
                         "ranking_part": protocol.ranking_part},
            "provenance": provenance(data.checksums, elapsed_s=elapsed / len(seeds)),
        }
        if k < len(inputs.propensity_fit) and inputs.propensity_fit[k]:
            record["protocol"]["propensity_fit"] = inputs.propensity_fit[k]
        if spec.experiment:
            record["experiment"] = dict(spec.experiment)
        if result.traces:
            record["trace"] = {name: _trace(np.asarray(v)[:, k], protocol.view)
                               for name, v in result.traces.items()}
        else:
            record["val_loss_trace"] = np.asarray(result.selection_trace)[:, k].tolist()
        out.append(record)
    return out


def _finite(values: dict) -> dict:
    """Metric values for a record: NaN (an AUC over one class, a standard top-K metric with no
    user holding a positive) is stored as null, which records allow for a metric."""
    return {k: (None if math.isnan(v) else v) for k, v in values.items()}


def _trace(values: np.ndarray, view: str) -> list:
    """A trace for a record: under a binary protocol the epochs a replica ran (NaN after it
    stopped is dropped); as it is otherwise."""
    if view == "binary":
        values = values[~np.isnan(values)]
    return values.tolist()


def group_seeds(data: RatingData, dim: int, seeds: list[int]) -> list[tuple[int, ...]]:
    """Seeds trained (and saved) together (:func:`atrec.learners.layout.group_seeds`)."""
    return layout.group_seeds(list(seeds), _width(data, dim))


def _width(data: RatingData, dim: int) -> int:
    return layout.group_width(data.num_users, data.num_items, dim)


@dataclass
class ConfigOutcome:
    """What :func:`atrec.experiments.driver.run_config` did for one configuration."""

    spec: RunSpec
    records: list[dict] = field(default_factory=list)
    trained: list[int] = field(default_factory=list)
    reused: list[int] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class ConfigPlan:
    """What is left to do for one configuration: its seeds without a record, in the groups they
    are trained in, and the outcome so far (the records reused).

    The one plan behind both a local run (:func:`atrec.experiments.driver.run_config`) and a
    run on a Dask cluster (:mod:`atrec.experiments.distributed`), so both skip the same seeds and group them alike,
    and hence give the same numbers. Before training a group, :meth:`take` claims its seeds
    (:mod:`atrec.experiments.locks`), so that processes sharing the results folder never train
    a seed twice; :meth:`save` and :meth:`release` give the claims back.
    """

    spec: RunSpec
    root: Path | None
    groups: list[tuple[int, ...]]
    outcome: ConfigOutcome
    # records present at planning but not reused (corrupt, or --force), by seed: their mtime
    skipped: dict[int, int] = field(default_factory=dict)
    claims: dict[tuple[int, ...], GroupClaim] = field(default_factory=dict, repr=False)

    @property
    def todo(self) -> int:
        """How many seeds are to be trained."""
        return sum(len(g) for g in self.groups)

    @property
    def name(self) -> str:
        """``dataset key`` (``coat item-at``), as progress lines and messages name it. MF-IPS's
        key names no method (``item``); without a propensity (the binary protocols' IPS) that
        would leave ``none``, so the method is named there: ``coat mf-ips/none``."""
        key = self.spec.key
        if self.spec.propensity == NO_PROPENSITY and "/" not in key:
            key = f"{self.spec.method}/{key}"
        return f"{self.spec.dataset} {key}"

    def _path(self, seed: int) -> Path:
        return record_path(self.spec.dataset, self.spec.key, self.spec.label, seed, self.root)

    def take(self, seeds) -> tuple[int, ...] | Holder:
        """Claim the seeds of a group for this process before training them.

        Returns the seeds to train now (their claims are held until :meth:`save`), ``()`` when
        another process saved all of them since planning (loaded and counted as reused), or the
        :class:`~atrec.experiments.locks.Holder` of a live claim on them: come back later.
        """
        left = self._reuse_new(seeds)
        if not left:
            return ()
        got = try_claim(self._path(left[0]).parent, left)
        if isinstance(got, Holder):
            return got
        left = self._reuse_new(left)   # saved between the look and the claim
        if not left:
            got.release()
            return ()
        self.claims[tuple(left)] = got
        return tuple(left)

    def _reuse_new(self, seeds) -> list[int]:
        """Load the records of ``seeds`` written since planning; return the seeds still without."""
        have = set(self.outcome.reused) | set(self.outcome.trained)
        left = []
        for seed in seeds:
            if seed in have:
                continue
            path = self._path(seed)
            try:
                mtime = path.stat().st_mtime_ns
            except FileNotFoundError:
                mtime = None
            record = None
            if mtime is not None and self.skipped.get(seed) != mtime:
                record = load_reusable(path)
            elif mtime is None and seed not in self.skipped:
                record = load_existing(self.spec, seed, self.root)
            if record is None:
                left.append(seed)
            else:
                self.outcome.records.append(record)
                self.outcome.reused.append(seed)
        return left

    def save(self, seeds: tuple[int, ...], records: list[dict], elapsed: float) -> None:
        """Write the records of one finished group (atomically), count them as trained and give
        their claims back."""
        self.outcome.seconds += elapsed
        try:
            for seed, record in zip(seeds, records):
                save_record(record, self._path(seed))
                self.outcome.records.append(record)
                self.outcome.trained.append(seed)
        finally:
            claim = self.claims.pop(tuple(seeds), None)
            if claim:
                claim.release()

    def release(self) -> None:
        """Give back every claim still held (a run that stops early: error, Ctrl-C)."""
        for claim in self.claims.values():
            claim.release()
        self.claims.clear()

    def finish(self) -> ConfigOutcome:
        """The outcome, records in seed order."""
        self.outcome.records.sort(key=lambda r: r["seed"])
        return self.outcome


def plan_config(data: RatingData, spec: RunSpec, root=None, force: bool = False) -> ConfigPlan:
    """Load the records ``spec`` already has (none with ``force``) and group the other seeds.

    Groups follow :func:`group_seeds`, whoever trains them. The layout is canonical
    (:mod:`atrec.learners.layout`), so a seed's numbers do not depend on the grouping.
    """
    outcome = ConfigOutcome(spec)
    root = spec.protocol.results_root(root)
    todo, skipped = [], {}
    for seed in spec.seeds:
        path = record_path(spec.dataset, spec.key, spec.label, seed, root)
        record = None if force else load_existing(spec, seed, root)
        if record is not None:
            outcome.records.append(record)
            outcome.reused.append(seed)
        else:
            todo.append(seed)
            if path.exists():
                skipped[seed] = path.stat().st_mtime_ns
    groups = group_seeds(data, spec.params.dim, todo)
    return ConfigPlan(spec, root, groups, outcome, skipped)


def compute_group(data: RatingData, spec: RunSpec, seeds) -> tuple[list[dict], float]:
    """Train one group of seeds; returns their records (plain dicts, nothing saved) and seconds.

    The unit of work: run in this process by :func:`atrec.experiments.driver.run_config`, on a
    Dask worker by :mod:`atrec.experiments.distributed`, which sends the records back to be saved.
    """
    seeds = list(seeds)
    start = time.perf_counter()
    # every fit has the canonical width, seed s in slot s % width, empty slots filled with
    # copies whose results are dropped (atrec.learners.layout.group_width)
    width = _width(data, spec.params.dim)
    run = layout.slots(seeds, width)
    inputs = stack_inputs(data, spec.propensity, seeds, spec.estimator,
                          spec.protocol.split)
    if run == seeds:
        result, settings = _fit(data, spec, seeds, inputs)
    else:   # the fillers reuse their seed's inputs: no split or propensity is estimated twice
        result, settings = _fit(data, spec, run, inputs.take([seeds.index(s) for s in run]))
        result = result.select([seed % width for seed in seeds])
    elapsed = time.perf_counter() - start
    return _records(data, spec, seeds, inputs, result, settings, elapsed), elapsed


def validation_loss(data: RatingData, propensity: str, with_at: bool, params: HyperParams,
                    seed: int = TUNING_SEED, settings=None, at_settings=None,
                    estimator=None, method: str = DEFAULT_METHOD,
                    protocol: Protocol | str | None = None) -> float:
    """The tuning objective (docs/protocol.md, "Tuning"): the lowest validation loss of one run on
    ``seed``'s split.

    Nothing is saved. Compiled loops are cached per shape (``dim``), so trials that only change
    ``lam`` or ``epsilon`` do not recompile. ``estimator``: as in
    :func:`atrec.experiments.inputs.stack_inputs`.
    """
    spec = RunSpec(data.name, propensity, with_at, params, "tuning", (seed,), settings, at_settings,
                   method=method, protocol=protocol)
    inputs = stack_inputs(data, propensity, [seed], estimator, spec.protocol.split)
    result, _ = _fit(data, spec, [seed], inputs)
    return float(result.best_val_loss[0])
