"""One contract over every registered method, built-in or installed plug-in (STYLE.md item 11,
after zr-obp's ``test_all_estimators``): a method found through :data:`METHODS` gets these tests
without writing any.

For each method, without and (when its ``learner`` can serve as A1/A2) with asymmetric
tri-training: the result's shapes, the same seed giving the same numbers bit for bit, a seed's
record the same bits whether it is trained with other seeds or alone (as ``atrec train`` trains
them), the record ``run_config`` writes, and hyperparameter checks that name the bad value. Small synthetic data and few steps keep it fast.
"""

import math

import numpy as np
import pytest

from atrec.experiments.driver import run_config
from atrec.experiments.inputs import stack_inputs
from atrec.experiments.runner import RunSpec
from atrec.methods.base import EPSILON, FitProblem, MethodResult
from atrec.methods.registry import METHODS, get_method, record_method
from atrec.names import NO_PROPENSITY
from atrec.protocol import ATSettings, TrainSettings
from atrec.results.params import HyperParams
from atrec.results.records import SCHEMA, load_record, record_path

SEEDS = (0, 1, 2)
SETTINGS = TrainSettings(steps=30, batch_size=64)
AT_SETTINGS = ATSettings(pre_steps=10, iterations=2, steps_per_iteration=3, batch_size=64)
AT_EPSILON = 0.5  # wide enough that pseudo-labels pass on the small data


def small_params(cls, with_at: bool) -> dict:
    """The smallest model of a method's search space: ``low`` of an integer hyperparameter,
    the geometric middle of a float range; validated by the method itself."""
    values = {}
    for h in cls.hyperparameters:
        if h.kind == "int":
            values[h.name] = int(h.low)
        else:
            values[h.name] = math.sqrt(h.low * h.high) if h.log else (h.low + h.high) / 2
    if with_at:
        values[EPSILON.name] = AT_EPSILON
    return HyperParams.from_values(cls.check_params(values, with_at)).as_dict()


def _can_at(name: str) -> bool:
    return get_method(name).learner(small_params(METHODS.get(name), True)) is not None


# collected now: the registry loads the installed plug-ins on this first use
METHOD_NAMES = METHODS.names()
CASES = [pytest.param(name, False, id=name) for name in METHOD_NAMES] + [
    pytest.param(name, True, id=record_method(name, True)) for name in METHOD_NAMES
    if _can_at(name)]


def propensity_for(name: str) -> str:
    """``item`` (weights that vary) for a method that uses propensities, as the runner does."""
    return "item" if METHODS.get(name).uses_propensity else NO_PROPENSITY


def problem(data, name: str, seeds) -> FitProblem:
    """The problem ``atrec.experiments.runner._fit`` builds for these seeds."""
    inputs = stack_inputs(data, propensity_for(name), list(seeds))
    full = inputs.splits[0].test_full
    return FitProblem(data.num_users, data.num_items, tuple(seeds), inputs.train, inputs.val,
                      inputs.test, {"user": full.user, "item": full.item, "rating": full.rating},
                      inputs.splits)


def fit(data, name: str, with_at: bool, seeds=SEEDS) -> MethodResult:
    from atrec.methods.tri_training import fit_with_at

    method = get_method(name)
    params = small_params(type(method), with_at)
    if with_at:
        return fit_with_at(method, problem(data, name, seeds), params, AT_SETTINGS)
    return method.fit(problem(data, name, seeds), params, SETTINGS)


@pytest.fixture(scope="module")
def stacked(small_mnar):
    """``fit`` of the three seeds together, once per (method, AT) in this module."""
    cache = {}

    def get(name, with_at):
        if (name, with_at) not in cache:
            cache[name, with_at] = fit(small_mnar, name, with_at)
        return cache[name, with_at]

    return get


FIELDS = ("mae", "mse", "best_step", "best_val_loss", "selection_trace", "scores")


def assert_same(a: MethodResult, b: MethodResult, fields=FIELDS) -> None:
    """Bit for bit (NaN equal to NaN, as an AT step without pseudo-labels records it)."""
    for f in fields:
        x, y = np.asarray(getattr(a, f)), np.asarray(getattr(b, f))
        assert x.dtype == y.dtype and x.shape == y.shape, f
        np.testing.assert_array_equal(x, y, err_msg=f, strict=True)


# --- shapes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, with_at", CASES)
def test_result_has_the_contracts_shapes(name, with_at, small_mnar, stacked):
    res = stacked(name, with_at)
    n_full = len(small_mnar.test)
    res.check(len(SEEDS), n_full)
    for f in ("mae", "mse", "best_val_loss"):
        assert np.isfinite(getattr(res, f)).all(), f
    assert (np.asarray(res.mae) >= 0).all() and (np.asarray(res.mse) >= 0).all()
    steps = np.shape(res.selection_trace)[0]
    assert steps == (AT_SETTINGS.pl_steps if with_at else SETTINGS.steps)
    best = np.asarray(res.best_step)
    assert np.issubdtype(best.dtype, np.integer)
    assert ((0 <= best) & (best < steps)).all(), best
    # the selected step is the first one of lowest validation loss, and its loss is reported
    trace = np.asarray(res.selection_trace)
    for k in range(len(SEEDS)):
        assert best[k] == np.nanargmin(trace[:, k])
        assert res.best_val_loss[k] == trace[best[k], k]
    assert np.isfinite(res.scores).all()
    for key, values in res.traces.items():
        assert np.shape(values) == (steps, len(SEEDS)), key


# --- determinism and stacking ------------------------------------------------------------------

@pytest.mark.parametrize("name, with_at", CASES)
def test_the_same_seeds_give_the_same_numbers(name, with_at, small_mnar, stacked):
    again = fit(small_mnar, name, with_at)
    first = stacked(name, with_at)
    assert_same(first, again)
    assert first.traces.keys() == again.traces.keys()
    for key in first.traces:
        np.testing.assert_array_equal(first.traces[key], again.traces[key], err_msg=key)


def _train(data, name: str, with_at: bool, seeds, root) -> dict:
    """``{seed: record}`` as ``atrec train`` makes them: :func:`run_config` of ``seeds``, which
    fits them in groups of the canonical width, each seed in its slot (``seed % width``) and
    empty slots padded (:mod:`atrec.learners.layout`). The provenance (time, elapsed seconds)
    is left out: it is the one part that differs between runs by design."""
    params = HyperParams.from_values(small_params(METHODS.get(name), with_at))
    spec = RunSpec(data.name, propensity_for(name), with_at, params, "published", tuple(seeds),
                   SETTINGS, AT_SETTINGS if with_at else None, method=name)
    assert run_config(data, spec, root).trained == list(seeds)
    out = {}
    for seed in seeds:
        record = load_record(record_path(data.name, spec.key, spec.label, seed, root))
        out[seed] = {k: v for k, v in record.items() if k != "provenance"}
    return out


@pytest.fixture()
def canonical_width(monkeypatch):
    """The runner's canonical width (20 at this size) set to this module's stack of 3 seeds, so
    that its fits have the shape of ``stacked``'s and reuse those compiled loops (a width-20 loop
    per method and AT cost 4 minutes here; the width itself is tested in
    tests/experiments/test_grouping_determinism.py). No memory bound either: this process holds
    gigabytes of other tests' loops, and a release before each method's run would drop the loops
    ``stacked`` compiled (2 minutes more); the bound is tested in tests/learners/test_compiled.py.
    """
    from atrec.learners import layout

    monkeypatch.setattr(layout, "STACK", len(SEEDS))
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "0")


@pytest.mark.parametrize("name, with_at", CASES)
def test_a_seeds_record_is_the_same_bits_whichever_seeds_it_is_trained_with(
        name, with_at, small_mnar, tmp_path, canonical_width):
    """The README's promise, kept the way ``atrec train`` keeps it: seed s's record (metrics,
    traces, everything but the provenance) is the same bits whether s is trained with the other
    seeds (``--seeds 3``) or alone (``--seeds s``, its slot's neighbours padded with copies).

    This is also the stacking contract: a method whose replicas leaked into one another would
    give s other numbers beside other seeds than beside copies of itself. Fits of different
    widths (``Method.fit`` of 3 seeds, and of 1) are not compared bit for bit: XLA compiles a
    loop per width, and on some CPUs (AVX-512) how a width's vector loops split a reduction
    moves the last bit of a few parameters (an ulp at dim 5 here), which is why the runner fits
    every seed at one canonical width in a fixed slot."""
    together = _train(small_mnar, name, with_at, SEEDS, tmp_path / "together")
    for seed in SEEDS:
        apart = _train(small_mnar, name, with_at, (seed,), tmp_path / f"seed-{seed}")
        assert apart[seed] == together[seed], seed


# --- the record run_config writes --------------------------------------------------------------

METRIC_TYPES = {"mae": float, "mse": float, "ndcg3_paper": float, "ndcg3_standard": float,
                "best_step": int, "best_val_loss": float}


@pytest.mark.parametrize("name, with_at", CASES)
def test_run_config_writes_a_record_of_the_schema(name, with_at, small_mnar, stacked, tmp_path,
                                                  canonical_width):
    params = HyperParams.from_values(small_params(METHODS.get(name), with_at))
    spec = RunSpec(small_mnar.name, propensity_for(name), with_at, params, "published", SEEDS,
                   SETTINGS, AT_SETTINGS if with_at else None, method=name)
    outcome = run_config(small_mnar, spec, tmp_path)
    assert outcome.trained == list(SEEDS)
    res = stacked(name, with_at)
    for k, seed in enumerate(SEEDS):
        path = record_path(small_mnar.name, spec.key, spec.label, seed, tmp_path)
        rec = load_record(path)
        trace_key = "trace" if with_at else "val_loss_trace"
        assert {"schema", "dataset", "propensity", "with_at", "method", "seed", "params",
                "params_source", "metrics", "protocol", "provenance", trace_key} <= set(rec)
        assert ("val_loss_trace" if with_at else "trace") not in rec
        assert rec["schema"] == SCHEMA
        assert rec["dataset"] == small_mnar.name and rec["propensity"] == spec.propensity
        assert rec["with_at"] is with_at
        assert rec["method"] == (name + "+at" if with_at else name)
        assert rec["seed"] == seed and isinstance(rec["seed"], int)
        assert rec["params"] == params.as_dict()
        assert rec["params_source"] == "published"
        assert set(rec["metrics"]) == set(METRIC_TYPES)
        for metric, kind in METRIC_TYPES.items():
            assert type(rec["metrics"][metric]) is kind, (metric, rec["metrics"][metric])
        assert 0 <= rec["metrics"]["ndcg3_paper"] <= 1 and 0 <= rec["metrics"]["ndcg3_standard"] <= 1
        assert isinstance(rec["protocol"], dict) and isinstance(rec["provenance"], dict)
        assert rec["protocol"]["settings"] == (AT_SETTINGS if with_at else SETTINGS).as_dict()
        # the runner trains what the method's own fit trains (same group of seeds)
        assert rec["metrics"]["mae"] == float(res.mae[k])
        assert rec["metrics"]["mse"] == float(res.mse[k])
        assert rec["metrics"]["best_step"] == int(res.best_step[k])
        if with_at:
            assert set(rec["trace"]) == set(res.traces)
            for key, values in rec["trace"].items():
                assert isinstance(values, list) and len(values) == AT_SETTINGS.pl_steps, key
        else:
            trace = rec["val_loss_trace"]
            assert isinstance(trace, list) and len(trace) == SETTINGS.steps
            assert all(type(v) is float for v in trace)


# --- hyperparameter checks ---------------------------------------------------------------------

def _bad_cases():
    """(method, hyperparameter, with_at, replacement or MISSING, fragment of the message)."""
    out = []
    for name in METHOD_NAMES:
        cls = METHODS.get(name)
        for h, with_at in [(h, False) for h in cls.hyperparameters] + [(EPSILON, True)]:
            cases = [("negative", -3, "-3"), ("nan", float("nan"), "nan"),
                     ("missing", MISSING, f"'{h.name}'"), ("string", "ten", "'ten'")]
            if h.kind == "int":
                cases.append(("absurd", 10**9, "1000000000"))
            elif math.isfinite(h.bound):
                cases.append(("absurd", 1e300, "1e+300"))
            out += [pytest.param(name, h.name, with_at, value, fragment,
                                 id=f"{name}-{h.name}-{label}")
                    for label, value, fragment in cases]
    return out


MISSING = object()


@pytest.mark.parametrize("name, key, with_at, value, fragment", _bad_cases())
def test_bad_hyperparameters_are_value_errors_naming_the_value(name, key, with_at, value,
                                                               fragment):
    cls = METHODS.get(name)
    values = small_params(cls, with_at)
    if value is MISSING:
        del values[key]
    else:
        values[key] = value
    with pytest.raises(ValueError) as info:
        cls.check_params(values, with_at)
    message = str(info.value)
    assert key in message and fragment in message, message


@pytest.mark.parametrize("name", METHOD_NAMES)
def test_parameters_must_be_a_mapping(name):
    with pytest.raises(ValueError, match=r"\[5, 0.001\]"):
        METHODS.get(name).check_params([5, 0.001])


# --- what every registered class declares ------------------------------------------------------

@pytest.mark.parametrize("name", METHOD_NAMES)
def test_registered_class_declares_the_contract(name):
    entry = METHODS.entry(name)
    cls = entry.cls
    assert cls.name == name and isinstance(cls.label, str) and cls.label
    assert isinstance(cls.description, str) and cls.description
    assert isinstance(entry.origin, str) and entry.origin
    assert isinstance(cls.uses_propensity, bool) and isinstance(cls.uses_mcar, bool)
    for h in cls.hyperparameters:
        assert h.name != EPSILON.name
        assert h.check(h.low) == (int(h.low) if h.kind == "int" else h.low)
    assert isinstance(cls.reference_params, dict)
    for dataset, configs in cls.reference_params.items():
        for key, values in configs.items():
            cls.check_params(values, with_at=key.endswith("-at"))
