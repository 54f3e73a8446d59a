"""Fitting a run: a group of a configuration's seeds trained (splits -> propensities -> learners)
and turned into per-run records (:func:`compute_group`), and the tuning objective
(:func:`validation_loss`).

:func:`compute_group` is the unit of work of local runs and of runs on a Dask cluster
(:mod:`atrec.experiments.distributed`): whoever computed a group, the process that planned it
saves its records (:meth:`atrec.experiments.groups.ConfigPlan.save`). What a run is:
:mod:`atrec.experiments.spec`; which seeds are left and how they are grouped:
:mod:`atrec.experiments.groups`.

Seeds: seed ``s`` shuffles the 90/10 train/validation split and initialises the model
(``model_seed = s``), as in the authors' runs (``tf.set_random_seed(s)``). The batch sampler uses
the authors' fixed seed 12345 unless ``batch_seed=None`` (per-seed streams).
"""

from __future__ import annotations

import math
import time
import numpy as np

from atrec.data.ratings import RatingData
from atrec.evaluation.binary_metrics import global_auc
from atrec.evaluation.bootstrap import BOOTSTRAP_SEED, RESAMPLES, resampled_metrics
from atrec.evaluation.fits import fit_diagnostics
from atrec.evaluation.registry import AFTER_TRAINING, get_metric, ranking_values
from atrec.experiments.inputs import Inputs, stack_inputs
from atrec.experiments.groups import data_group_width
from atrec.experiments.spec import RunSpec
from atrec.learners import layout
from atrec.methods.base import FitProblem, MethodResult
from atrec.methods.binary.at import fit_binary_at
from atrec.methods.registry import get_method, record_method
from atrec.methods.tri_training import fit_with_at
from atrec.names import DEFAULT_METHOD
from atrec.protocols import Protocol
from atrec.params.lookup import HyperParams
from atrec.results.records import SCHEMA, provenance
from atrec.run_settings import TUNING_SEED
from atrec.runtime import compiled


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
        if protocol.view == "binary":   # failed-fit rules 1 to 3 (atrec.evaluation.fits)
            val = result.diagnostics.get("val_scores")
            capped = result.diagnostics.get("capped")
            record["diagnostics"] = fit_diagnostics(
                result.scores[k], float(result.best_val_loss[k]),
                settings.get("stopping") == "validation",
                None if val is None else global_auc(inputs.splits[k].val.user,
                                                    inputs.splits[k].val.rating, val[k]),
                settings.get("selection"), bool(capped is not None and capped[k]))
            record["bootstrap"] = {   # the test-user resamples (atrec.evaluation.bootstrap)
                "unit": "test user", "resamples": RESAMPLES, "seed": BOOTSTRAP_SEED,
                "metrics": resampled_metrics(full.user, full.rating, result.scores[k],
                                             protocol.metrics)}
        if result.nuisance:
            record["nuisance"] = result.nuisance[k]
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


def compute_group(data: RatingData, spec: RunSpec, seeds) -> tuple[list[dict], float]:
    """Train one group of seeds; returns their records (plain dicts, nothing saved) and seconds.

    The unit of work: run in this process by :func:`atrec.experiments.driver.run_config`, on a
    Dask worker by :mod:`atrec.experiments.distributed`, which sends the records back to be saved.
    """
    seeds = list(seeds)
    start = time.perf_counter()
    # every fit has the canonical width, seed s in slot s % width, empty slots filled with
    # copies whose results are dropped (atrec.learners.layout.group_width)
    width = data_group_width(data, spec.params.dim)
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
