"""Run configurations over seeds: splits -> propensities -> learners -> per-run records.

One *configuration* is (dataset, propensity, with/without AT, parameter set). Its seeds are
trained together (stacked replicas, see :mod:`atrec.learners.mf`), in groups whose records are written as
soon as the group finishes, so an interrupted run loses at most the group in progress and a
rerun skips every seed that already has a record (``force=True`` recomputes).

Seeds: seed ``s`` shuffles the 90/10 train/validation split and initialises the model
(``model_seed = s``), as in the authors' runs (``tf.set_random_seed(s)``). The batch sampler uses
the authors' fixed seed 12345 unless ``batch_seed=None`` (per-seed streams).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field

import numpy as np

from atrec.errors import AtrecError
from atrec.evaluation.metrics import ndcg_variants
from atrec.learners import layout
from atrec.methods.base import FitProblem, MethodResult
from atrec.methods.tri_training import fit_with_at
from atrec.names import config_key
from atrec.experiments.params import HyperParams
from atrec.methods.registry import configurations, get_method, record_method
from atrec.names import DEFAULT_METHOD, NO_PROPENSITY
from atrec.propensity.registry import get_estimator
from atrec.data.ratings import RatingData
from atrec.experiments.records import (SCHEMA, load_record, params_label, provenance, record_path, save_record,
                           variant_suffix)
from atrec.data.splits import MCAR_SPLIT_SEED, Split, make_split
from atrec.protocol import AUTHORS_BATCH_SEED, TUNING_SEED, ATSettings, TrainSettings



def parse_seeds(spec: str | int) -> list[int]:
    """``20`` -> seeds 0..19; ``3-7`` -> 3..7; ``0,4,9`` -> those; mixtures of the last two."""
    text = str(spec).strip()
    if re.fullmatch(r"\d+", text):
        n = int(text)
        if n < 1:
            raise AtrecError(f"--seeds {text}: give a positive count (e.g. 20), a range 0-4 or a list 1,3")
        return list(range(n))
    seeds: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            raise AtrecError(f"--seeds {text}: give a count (20), a range (0-4) or a list (1,3,5)")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        seeds.extend(s for s in range(lo, hi + 1) if s not in seeds)
    return seeds


@dataclass(frozen=True)
class RunSpec:
    """One configuration to train: what, with which parameters, under which protocol.

    ``method``: a registered method (:mod:`atrec.methods.registry`), trained alone or, with
    ``with_at``, as A1/A2 of asymmetric tri-training.
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

    @property
    def key(self) -> str:
        return config_key(self.propensity, self.with_at, self.method)

    @property
    def variant(self) -> str:
        """How the protocol settings deviate from the authors' (``""``, ``+ips``, ...)."""
        settings = self.at_settings if self.with_at and self.at_settings else self.settings
        return variant_suffix(settings.loss, settings.batch_seed) if settings else ""

    @property
    def label(self) -> str:
        """Folder label: parameter set plus protocol variant (e.g. ``published+ips``)."""
        return params_label(self.params_source) + self.variant


@dataclass
class Inputs:
    """Stacked per-seed inputs: ``[R, n]`` train/val columns, shared ``[n]`` test columns."""

    splits: list[Split]
    train: dict
    val: dict
    test: dict
    # per split: the estimator's ``diagnostics`` after its estimate (empty when it has none)
    propensity_fit: list = field(default_factory=list)


def stack_inputs(data: RatingData, propensity: str, seeds: list[int], estimator=None) -> Inputs:
    """Build the splits of ``seeds`` and stack their columns with weights ``1 / P``.

    ``estimator`` (an object with ``estimate(split)``) replaces the estimator named ``propensity``;
    its ``diagnostics`` after each estimate, if any, are kept per split for the records;
    :data:`~atrec.names.NO_PROPENSITY` (a method that weights nothing) gives weights 1.
    """
    if estimator is None:
        estimator = get_estimator("uniform" if propensity == NO_PROPENSITY else propensity)
    splits = [make_split(data, s) for s in seeds]
    props, fits = [], []
    for sp in splits:
        props.append(estimator.estimate(sp))
        fits.append(dict(getattr(estimator, "diagnostics", None) or {}))

    def stack(part: str, weights) -> dict:
        cols = {c: np.stack([getattr(getattr(sp, part), c) for sp in splits]).astype(
            np.float32 if c == "rating" else np.int32) for c in ("user", "item", "rating")}
        cols["weight"] = np.stack([1.0 / w for w in weights]).astype(np.float32)
        return cols

    test = splits[0].test
    return Inputs(
        splits=splits,
        train=stack("train", [p.train for p in props]),
        val=stack("val", [p.val for p in props]),
        test={"user": test.user.astype(np.int32), "item": test.item.astype(np.int32),
              "rating": test.rating.astype(np.float32)},
        propensity_fit=fits,
    )


def _settings(spec: RunSpec):
    return spec.settings or TrainSettings()


def _at_settings(spec: RunSpec):
    return spec.at_settings or ATSettings()


def _fit(data: RatingData, spec: RunSpec, seeds: list[int],
         inputs: Inputs) -> tuple[MethodResult, dict]:
    """Train the seeds of one group with the spec's method (and AT); returns the result and the
    protocol settings it ran under (a dict for the records)."""
    method = get_method(spec.method)
    full = inputs.splits[0].test_full
    problem = FitProblem(data.num_users, data.num_items, tuple(seeds), inputs.train, inputs.val,
                         inputs.test, {"user": full.user, "item": full.item,
                                       "rating": full.rating}, inputs.splits)
    params = spec.params.as_dict()
    if spec.with_at:
        settings = _at_settings(spec)
        return fit_with_at(method, problem, params, settings), settings.as_dict()
    settings = _settings(spec)
    return method.fit(problem, params, settings), settings.as_dict()


def _records(data: RatingData, spec: RunSpec, seeds: list[int], inputs: Inputs,
             result: MethodResult, settings: dict, elapsed: float) -> list[dict]:
    full = inputs.splits[0].test_full
    out = []
    for k, seed in enumerate(seeds):
        ndcg = ndcg_variants(full.user, full.rating, result.scores[k], 3, ("paper", "standard"))
        metrics = {
            "mae": float(result.mae[k]), "mse": float(result.mse[k]),
            "ndcg3_paper": ndcg["paper"], "ndcg3_standard": ndcg["standard"],
            "best_step": int(result.best_step[k]), "best_val_loss": float(result.best_val_loss[k]),
        }
        record = {
            "schema": SCHEMA, "dataset": spec.dataset, "propensity": spec.propensity,
            "with_at": spec.with_at, "method": record_method(spec.method, spec.with_at),
            "seed": seed, "model_seed": seed, "batch_seed": settings.get("batch_seed"),
            "params": spec.params.as_dict(), "params_source": spec.params_source,
            "variant": spec.variant,
            "metrics": metrics,
            "protocol": {"settings": settings, "validation_fraction": 0.1,
                         "mcar_split": {"eval_fraction": 0.95, "seed": MCAR_SPLIT_SEED},
                         "num_users": data.num_users, "num_items": data.num_items,
                         "n_train": len(inputs.splits[k].train), "n_val": len(inputs.splits[k].val),
                         "n_test": len(inputs.splits[k].test), "n_test_full": len(full)},
            "provenance": provenance(data.checksums, elapsed_s=elapsed / len(seeds)),
        }
        if k < len(inputs.propensity_fit) and inputs.propensity_fit[k]:
            record["protocol"]["propensity_fit"] = inputs.propensity_fit[k]
        if spec.experiment:
            record["experiment"] = dict(spec.experiment)
        if result.traces:
            record["trace"] = {name: np.asarray(v)[:, k].tolist()
                               for name, v in result.traces.items()}
        else:
            record["val_loss_trace"] = np.asarray(result.selection_trace)[:, k].tolist()
        out.append(record)
    return out


def group_size(data: RatingData, dim: int, n_seeds: int) -> int:
    """Seeds trained (and saved) together (:func:`atrec.learners.layout.group_size`)."""
    return layout.group_size(data.num_users, data.num_items, dim, n_seeds)


@dataclass
class ConfigOutcome:
    """What :func:`run_config` did for one configuration."""

    spec: RunSpec
    records: list[dict] = field(default_factory=list)
    trained: list[int] = field(default_factory=list)
    reused: list[int] = field(default_factory=list)
    seconds: float = 0.0


def run_config(data: RatingData, spec: RunSpec, root=None, force: bool = False,
               on_group=None) -> ConfigOutcome:
    """Train the seeds of ``spec`` that have no record yet (all with ``force``) and save them.

    ``on_group(done, total)`` is called after every saved group (for progress bars).
    """
    label = spec.label
    outcome = ConfigOutcome(spec)
    todo = []
    for seed in spec.seeds:
        path = record_path(spec.dataset, spec.key, label, seed, root)
        if path.exists() and not force:
            outcome.records.append(load_record(path))
            outcome.reused.append(seed)
        else:
            todo.append(seed)
    size = group_size(data, spec.params.dim, len(todo)) if todo else 1
    for lo in range(0, len(todo), size):
        seeds = todo[lo:lo + size]
        start = time.perf_counter()
        inputs = stack_inputs(data, spec.propensity, seeds, spec.estimator)
        result, settings = _fit(data, spec, seeds, inputs)
        elapsed = time.perf_counter() - start
        outcome.seconds += elapsed
        for seed, record in zip(seeds, _records(data, spec, seeds, inputs, result, settings, elapsed)):
            save_record(record, record_path(spec.dataset, spec.key, label, seed, root))
            outcome.records.append(record)
            outcome.trained.append(seed)
        if on_group:
            on_group(len(outcome.trained), len(todo))
    outcome.records.sort(key=lambda r: r["seed"])
    return outcome


def validation_loss(data: RatingData, propensity: str, with_at: bool, params: HyperParams,
                    seed: int = TUNING_SEED, settings=None, at_settings=None,
                    estimator=None, method: str = DEFAULT_METHOD) -> float:
    """The tuning objective (PROTOCOL.md): the lowest validation loss of one run on ``seed``'s split.

    Nothing is saved. Compiled loops are cached per shape (``dim``), so trials that only change
    ``lam`` or ``epsilon`` do not recompile. ``estimator`` as in :func:`stack_inputs`.
    """
    spec = RunSpec(data.name, propensity, with_at, params, "tuning", (seed,), settings, at_settings,
                   method=method)
    inputs = stack_inputs(data, propensity, [seed], estimator)
    result, _ = _fit(data, spec, [seed], inputs)
    return float(result.best_val_loss[0])


def ensure_data(name: str, quiet: bool = False) -> RatingData:
    """The preprocessed dataset, downloading and preprocessing it first if needed.

    A download takes its source from ``ATREC_<NAME>_SOURCE`` (e.g. ``ATREC_COAT_SOURCE``,
    ``ATREC_YAHOO_SOURCE``) when set, else the official URL (Yahoo has none: see
    ``atrec download yahoo``).
    """
    from atrec.data.catalogue import raw_present
    from atrec.data.download import download, source_env
    from atrec.data.preprocess import load_data

    if not raw_present(name):
        download(name, source=os.environ.get(source_env(name)) or None, quiet=quiet)
    return load_data(name)


@dataclass
class TrainRequest:
    """The selection of ``atrec train`` / ``atrec run`` (names already validated)."""

    datasets: list[str]
    propensities: list[str]
    at_options: list[bool]
    seeds: list[int]
    params: str = "published"
    force: bool = False
    batch_seed: int | None = AUTHORS_BATCH_SEED
    loss: str = "snips"
    download: bool = False
    methods: list[str] = field(default_factory=lambda: [DEFAULT_METHOD])

    def configurations(self) -> list[tuple[str, str, bool]]:
        """``(method, propensity, with_at)`` in training order (:func:`configurations`)."""
        return configurations(self.methods, self.propensities, self.at_options)


def train(request: TrainRequest, root=None, progress=None) -> list[ConfigOutcome]:
    """Train every selected configuration; ``progress(outcome)`` after each one."""
    from atrec.experiments.params import get_params

    outcomes = []
    configs = request.configurations()
    for dataset in request.datasets:
        # resolve every parameter set first: a bad --params fails before any data is touched
        chosen = {c: get_params(request.params, dataset, c[1], c[2], c[0]) for c in configs}
        if request.download:
            data = ensure_data(dataset, quiet=True)
        else:
            from atrec.data.preprocess import load_data

            data = load_data(dataset)
        for method, propensity, with_at in configs:
            params, source = chosen[(method, propensity, with_at)]
            at_settings = (ATSettings(loss=request.loss, batch_seed=request.batch_seed)
                           if with_at else None)
            spec = RunSpec(
                dataset, propensity, with_at, params, source, tuple(request.seeds),
                TrainSettings(loss=request.loss, batch_seed=request.batch_seed), at_settings,
                method=method)
            outcome = run_config(data, spec, root, force=request.force)
            outcomes.append(outcome)
            if progress:
                progress(outcome)
    return outcomes


def outcome_rows(outcomes: list[ConfigOutcome]) -> list[dict]:
    """One summary row per configuration: mean and sd over its seeds of every metric."""
    from atrec.propensity.registry import propensity_label
    from atrec.evaluation.summary import summarize
    from atrec.names import METRICS

    rows = []
    for outcome in outcomes:
        spec = outcome.spec
        summary = summarize(outcome.records, params=spec.label,
                            expected_seeds=len(spec.seeds), method=spec.method)
        row = {"dataset": spec.dataset, "method": spec.method,
               "propensity": propensity_label(spec.propensity),
               "AT": "with" if spec.with_at else "without", "seeds": len(outcome.records)}
        for metric in METRICS:
            cell = summary.cell(spec.dataset, spec.propensity, spec.with_at, metric)
            row[metric] = f"{cell.mean:.4f} ± {cell.sd:.4f}" if cell and cell.n > 1 else (
                f"{cell.mean:.4f}" if cell else "-")
        row["trained"] = len(outcome.trained)
        row["seconds"] = round(outcome.seconds, 2)
        rows.append(row)
    return rows
