"""The method contract as checks: :func:`check_method` runs every one on a method class.

On a small synthetic MNAR data set (:func:`small_data`), with few steps: the result's shapes,
the same seeds giving the same numbers bit for bit, a seed's record the same bits whichever
seeds it is trained with, the record a run writes (its options among what it says ran),
hyperparameter checks that name the bad value, and the class's declarations; a class with
options is checked once per option value (:func:`~atrec.methods.options.option_cases`). A
method that declares ``serves_in_at`` is checked inside asymmetric tri-training (as A1 and A2)
too. A binary method gets the binary contract instead
(:mod:`atrec.testing.binary`).

:class:`MethodChecks` holds the checks one by one, sharing the fits they need, so that a test
suite can run each as its own test (atrec's own does, over every registered method).
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import numpy as np

from atrec.data.ratings import RatingData
from atrec.experiments.driver import run_config
from atrec.experiments.inputs import stack_inputs
from atrec.experiments.spec import RunSpec
from atrec.learners import layout
from atrec.learners.base import Learner
from atrec.methods.base import FitProblem, Method, MethodResult, validate_method_class
from atrec.methods.binary.base import VIEW
from atrec.methods.options import case_id, method_key, option_cases, resolve_options
from atrec.methods.registry import METHODS, record_method
from atrec.methods.tri_training import fit_with_at
from atrec.names import NO_PROPENSITY
from atrec.run_settings import ATSettings, TrainSettings
from atrec.params.lookup import HyperParams
from atrec.results.records import SCHEMA, load_record, record_path
from atrec.testing.binary import check_binary_method
from atrec.testing.data import check_declarations, registered, run_checks, small_data
from atrec.testing.params import (
    HyperparameterChecks,
    check_hyperparameter_declarations,
    small_params,
)

SEEDS = (0, 1, 2)
SETTINGS = TrainSettings(steps=30, batch_size=64)
AT_SETTINGS = ATSettings(pre_steps=10, iterations=2, steps_per_iteration=3, batch_size=64)
FIELDS = ("mae", "mse", "best_step", "best_val_loss", "selection_trace", "scores")
METRIC_TYPES = {"mae": float, "mse": float, "ndcg3_paper": float, "ndcg3_standard": float,
                "best_step": int, "best_val_loss": float}


def propensity_for(cls: type[Method]) -> str:
    """``item`` (weights that vary) for a method that uses propensities, as the runner does."""
    return "item" if cls.uses_propensity else NO_PROPENSITY


def fit_problem(data: RatingData, cls: type[Method], seeds) -> FitProblem:
    """The problem the runner builds for ``seeds`` (``atrec.experiments.fitting._fit``)."""
    inputs = stack_inputs(data, propensity_for(cls), list(seeds))
    full = inputs.splits[0].test_full
    return FitProblem(data.num_users, data.num_items, tuple(seeds), inputs.train, inputs.val,
                      inputs.test, {"user": full.user, "item": full.item, "rating": full.rating},
                      inputs.splits)


def fit(data: RatingData, cls: type[Method], with_at: bool, seeds=SEEDS,
        options: dict | None = None) -> MethodResult:
    """``cls`` with ``options`` fitted on ``seeds`` together with its smallest parameters,
    alone or inside AT."""
    method = cls(**(options or {}))
    params = small_params(cls, with_at)
    if with_at:
        return fit_with_at(method, fit_problem(data, cls, seeds), params, AT_SETTINGS)
    return method.fit(fit_problem(data, cls, seeds), params, SETTINGS)


def assert_same(a: MethodResult, b: MethodResult, fields=FIELDS) -> None:
    """Bit for bit (NaN equal to NaN, as an AT step without pseudo-labels records it)."""
    for f in fields:
        x, y = np.asarray(getattr(a, f)), np.asarray(getattr(b, f))
        assert x.dtype == y.dtype and x.shape == y.shape, f
        np.testing.assert_array_equal(x, y, err_msg=f, strict=True)


@contextlib.contextmanager
def _stack_width(stack: int):
    """The runner's canonical width set to ``stack`` seeds for the block, so that a run has the
    shape of :meth:`MethodChecks.stacked`'s fit and reuses its compiled loop (a loop of the
    full width per method costs minutes)."""
    saved = layout.STACK
    layout.STACK = stack
    try:
        yield
    finally:
        layout.STACK = saved


class MethodChecks(HyperparameterChecks):
    """The checks of one method class on ``data`` (default :func:`small_data`). Each method is
    one check and raises ``AssertionError`` when the class breaks it; fits are made once and
    shared between the checks that need them."""

    def __init__(self, cls: type[Method], data: RatingData | None = None,
                 options: dict | None = None) -> None:
        self.cls = cls
        self.data = data if data is not None else small_data()
        self.options = dict(options or {})     # the case checked (atrec.methods.options)
        self._stacked: dict[bool, MethodResult] = {}

    @property
    def key(self) -> str:
        """The method key of the case (``dr-jl+weighting=mrdr``), as runs file it."""
        return method_key(self.cls, resolve_options(self.cls, self.options))

    @property
    def at_options(self) -> tuple[bool, ...]:
        """``(False,)``, and ``True`` when the class declares ``serves_in_at``."""
        return (False, True) if self.cls.serves_in_at else (False,)

    def stacked(self, with_at: bool) -> MethodResult:
        """The fit of :data:`SEEDS` together (made once)."""
        if with_at not in self._stacked:
            self._stacked[with_at] = fit(self.data, self.cls, with_at, options=self.options)
        return self._stacked[with_at]

    # --- what the class declares ---------------------------------------------------------------

    def declares_the_contract(self) -> None:
        cls = self.cls
        check_declarations(cls, validate_method_class,
                           ("uses_propensity", "uses_mcar", "serves_in_at"))
        check_hyperparameter_declarations(cls)
        assert isinstance(cls.reference_params, dict), "reference_params"
        for configs in cls.reference_params.values():
            for key, values in configs.items():
                cls.check_params(values, with_at=key.endswith("-at"))

    def learner_serves_in_at(self) -> None:
        """A class that declares ``serves_in_at`` gives AT a learner with ``init`` and
        ``scores`` for the problem it trains on."""
        if not self.cls.serves_in_at:
            return
        problem = fit_problem(self.data, self.cls, SEEDS[:1])
        learner = self.cls(**self.options).learner(small_params(self.cls, True), problem)
        assert isinstance(learner, Learner), f"learner() gave {learner!r}, not a Learner"
        assert learner.init is not None and learner.scores is not None, "init and scores"

    # --- what a fit returns --------------------------------------------------------------------

    def result_shapes(self, with_at: bool) -> None:
        res = self.stacked(with_at)
        res.check(len(SEEDS), len(self.data.test))
        for f in ("mae", "mse", "best_val_loss"):
            assert np.isfinite(getattr(res, f)).all(), f
        assert (np.asarray(res.mae) >= 0).all() and (np.asarray(res.mse) >= 0).all()
        steps = np.shape(res.selection_trace)[0]
        assert steps == (AT_SETTINGS.pl_steps if with_at else SETTINGS.steps), steps
        best = np.asarray(res.best_step)
        assert np.issubdtype(best.dtype, np.integer), best.dtype
        assert ((0 <= best) & (best < steps)).all(), best
        # the selected step is the first one of lowest validation loss, and its loss is reported
        trace = np.asarray(res.selection_trace)
        for k in range(len(SEEDS)):
            assert best[k] == np.nanargmin(trace[:, k]), (k, best[k])
            assert res.best_val_loss[k] == trace[best[k], k], k
        assert np.isfinite(res.scores).all(), "scores"
        for key, values in res.traces.items():
            assert np.shape(values) == (steps, len(SEEDS)), key

    def same_seeds_same_numbers(self, with_at: bool) -> None:
        again = fit(self.data, self.cls, with_at, options=self.options)
        first = self.stacked(with_at)
        assert_same(first, again)
        assert first.traces.keys() == again.traces.keys()
        for key in first.traces:
            np.testing.assert_array_equal(first.traces[key], again.traces[key], err_msg=key)

    def record_same_bits_whichever_seeds(self, with_at: bool, root: Path | None = None) -> None:
        """README's promise, kept the way ``atrec train`` keeps it: seed s's record (metrics,
        traces, everything but the provenance) is the same bits whether s is trained with the
        other seeds of :data:`SEEDS` or alone (its slot's neighbours padded with copies).

        This is also the stacking contract: a method whose replicas leaked into one another
        would give s other numbers beside other seeds than beside copies of itself. Fits of
        different widths are not compared bit for bit: XLA compiles a loop per width, and on
        some CPUs (AVX-512) how a width's vector loops split a reduction moves the last bit of
        a few parameters, which is why the runner fits every seed at one canonical width in a
        fixed slot (:mod:`atrec.learners.layout`)."""
        if root is None:
            with tempfile.TemporaryDirectory(prefix="atrec-check-") as tmp:
                return self.record_same_bits_whichever_seeds(with_at, Path(tmp))
        together = self._train(with_at, SEEDS, root / "together")
        for seed in SEEDS:
            apart = self._train(with_at, (seed,), root / f"seed-{seed}")
            assert apart[seed] == together[seed], (
                f"seed {seed}'s record differs trained alone and with seeds {SEEDS}")
        return None

    def _train(self, with_at: bool, seeds, root: Path) -> dict:
        """``{seed: record without provenance}`` as ``atrec train`` makes them."""
        cls, data = self.cls, self.data
        params = HyperParams.from_values(small_params(cls, with_at))
        spec = RunSpec(data.name, propensity_for(cls), with_at, params, "published",
                       tuple(seeds), SETTINGS, AT_SETTINGS if with_at else None, method=self.key)
        with registered(METHODS, cls), _stack_width(len(SEEDS)):
            outcome = run_config(data, spec, root)
        assert outcome.trained == list(seeds), outcome.trained
        out = {}
        for seed in seeds:
            record = load_record(record_path(data.name, spec.key, spec.label, seed, root))
            out[seed] = {k: v for k, v in record.items() if k != "provenance"}
        return out

    # --- the record a run writes ---------------------------------------------------------------

    def run_writes_a_record(self, with_at: bool, root: Path | None = None) -> None:
        """``run_config`` of the class (registered for it if it is not) writes one record per
        seed, of the schema, holding what the method's own fit gives."""
        if root is None:
            with tempfile.TemporaryDirectory(prefix="atrec-check-") as tmp:
                return self.run_writes_a_record(with_at, Path(tmp))
        cls, data = self.cls, self.data
        params = HyperParams.from_values(small_params(cls, with_at))
        spec = RunSpec(data.name, propensity_for(cls), with_at, params, "published", SEEDS,
                       SETTINGS, AT_SETTINGS if with_at else None, method=self.key)
        with registered(METHODS, cls), _stack_width(len(SEEDS)):
            outcome = run_config(data, spec, root)
        assert outcome.trained == list(SEEDS), outcome.trained
        res = self.stacked(with_at)
        for k, seed in enumerate(SEEDS):
            rec = load_record(record_path(data.name, spec.key, spec.label, seed, root))
            trace_key = "trace" if with_at else "val_loss_trace"
            assert {"schema", "dataset", "propensity", "with_at", "method", "seed", "params",
                    "params_source", "metrics", "protocol", "provenance", trace_key} <= set(rec)
            assert ("val_loss_trace" if with_at else "trace") not in rec
            assert rec["schema"] == SCHEMA
            assert rec["dataset"] == data.name and rec["propensity"] == spec.propensity
            assert rec["with_at"] is with_at
            assert rec["method"] == record_method(cls.name, with_at)
            assert rec["options"] == resolve_options(cls, self.options)   # what ran
            assert rec["method_key"] == self.key
            assert rec["seed"] == seed and isinstance(rec["seed"], int)
            assert rec["params"] == params.as_dict()
            assert rec["params_source"] == "published"
            assert set(rec["metrics"]) == set(METRIC_TYPES)
            for metric, kind in METRIC_TYPES.items():
                assert type(rec["metrics"][metric]) is kind, (metric, rec["metrics"][metric])
            for ndcg in ("ndcg3_paper", "ndcg3_standard"):
                assert 0 <= rec["metrics"][ndcg] <= 1, ndcg
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
        return None


def check_method(cls: type[Method], data: RatingData | None = None) -> None:
    """Check that method class ``cls`` keeps atrec's method contract; one line in a plug-in's
    tests: ``check_method(MyMethod)``. A binary method (``view = "binary"``) is checked
    against the binary contract (:func:`~atrec.testing.binary.check_binary_method`).

    Parameters
    ----------
    cls:
        A :class:`~atrec.methods.base.Method` subclass, registered or not (a check that runs
        it through atrec's runner registers it for that check).
    data:
        The data set to fit on; default :func:`small_data` (60 users x 40 items).

    Raises
    ------
    AssertionError
        Naming the class and the first check it fails (``check 'result_shapes' (with AT)``),
        with the failure's message.
    """
    if getattr(cls, "view", None) == VIEW:
        check_binary_method(cls, data)
        return
    steps = []
    for k, options in enumerate(option_cases(cls)):   # each option value, one run each
        checks = MethodChecks(cls, data, options)
        where = "" if not options else f" ({case_id(options)})"
        if k == 0:
            steps += [("declares_the_contract", checks.declares_the_contract),
                      ("parameters_must_be_a_mapping", checks.parameters_must_be_a_mapping),
                      ("bad_hyperparameters", checks.bad_hyperparameters)]
        steps.append((f"learner_serves_in_at{where}", checks.learner_serves_in_at))
        per_at = ["result_shapes", "same_seeds_same_numbers",
                  "record_same_bits_whichever_seeds", "run_writes_a_record"]
        steps += [(f"{name}{where}{' (with AT)' if with_at else ''}",
                   _bound(getattr(checks, name), with_at))
                  for with_at in checks.at_options for name in per_at]
    run_checks(f"method class {cls.__name__}", steps)


def _bound(check, with_at: bool):
    return lambda: check(with_at)
