"""The binary method contract as checks: :func:`check_binary_method` runs every one on a binary
method class (a :class:`~atrec.methods.binary.base.BinaryMethod`, ``view = "binary"``).

On small synthetic data split by each binary protocol, with a few epochs: the class's
declarations (its reference values for Coat and Yahoo! R3 among them), a fit under each
protocol's settings (``binary-icde24``: the reference rule; ``binary-clean``: early
stopping on validation), in each of the class's forms (each distinct run once:
:func:`fit_cases`), giving a result of the contract's shapes and
probabilities in (0, 1), each seed's numbers the same bits beside another seed as beside a copy
of itself, asymmetric tri-training for a class that declares ``serves_in_at``, and
hyperparameter checks that name the bad value.

Fits are shared between the checks, and the two protocols' problems are cut to the same
training size, so that a method's compiled epoch loops (one per stage, form and shape) are
compiled once for both protocols and all seeds: XLA's compilations are what such checks cost.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from atrec.data.ratings import RatingData
from atrec.experiments.inputs import stack_inputs
from atrec.methods.base import FitProblem, MethodResult
from atrec.methods.binary.at import fit_binary_at
from atrec.methods.binary.base import BATCH, COMMON, FORM, BinaryMethod
from atrec.methods.binary.registry import validate_binary_method_class
from atrec.methods.options import case_id, option_cases
from atrec.names import NO_PROPENSITY, config_key
from atrec.protocols import get_protocol
from atrec.testing.data import check_declarations, run_checks, small_data
from atrec.testing.params import (
    HyperparameterChecks,
    bad_hyperparameter_cases,
    check_hyperparameter_declarations,
    small_params,
)

PROTOCOLS = ("binary-icde24", "binary-clean")
"""Each check that fits runs under each of these protocols' epoch settings."""
MAX_EPOCHS = 3
PATIENCE = 1
SEEDS = (0, 1)
"""A fit of ``(s, t)``; the independence check fits ``(s, s)`` beside it, at the same width."""
AT_PROTOCOL = "binary-icde24"
REFERENCE_DATASETS = ("coat", "yahoo")
BINARY_FLAGS = ("uses_propensity", "uses_mcar", "serves_in_at", "leaks")


def epoch_settings(protocol: str):
    """``protocol``'s epoch settings (stopping rule and forms) with :data:`MAX_EPOCHS` and
    :data:`PATIENCE`."""
    return dataclasses.replace(get_protocol(protocol).epochs, max_epochs=MAX_EPOCHS,
                               patience=PATIENCE)


def protocol_data(data: RatingData) -> dict[str, RatingData]:
    """The data each protocol splits: ``binary-clean`` all of ``data``, ``binary-icde24`` its
    first training ratings, as many as ``binary-clean`` trains on, so that both protocols'
    training arrays (and so the compiled loops) have one shape."""
    n = len(get_protocol("binary-clean").split(data, SEEDS[0]).train)
    cut = dataclasses.replace(data, train=data.train.take(np.arange(n)))
    return {"binary-icde24": cut, "binary-clean": data}


def fit_problem(data: RatingData, protocol: str, seeds) -> FitProblem:
    """The problem the runner builds for ``seeds`` under ``protocol`` (its splits, the part the
    metrics rank; no propensity weights: binary methods learn their own)."""
    proto = get_protocol(protocol)
    inputs = stack_inputs(data, NO_PROPENSITY, list(seeds), split=proto.split)
    full = getattr(inputs.splits[0], proto.ranking_part)
    return FitProblem(inputs.splits[0].num_users, inputs.splits[0].num_items, tuple(seeds),
                      inputs.train, inputs.val, inputs.test,
                      {"user": full.user, "item": full.item, "rating": full.rating},
                      inputs.splits)


def _last_finite(column: np.ndarray) -> int:
    return int(np.flatnonzero(np.isfinite(column))[-1])


class BinaryMethodChecks(HyperparameterChecks):
    """The checks of one binary method class on ``data`` (default :func:`small_data`). Each
    method is one check and raises ``AssertionError`` when the class breaks it; fits are made
    once and shared between the checks that need them."""

    def __init__(self, cls: type[BinaryMethod], data: RatingData | None = None) -> None:
        self.cls = cls
        self.data = protocol_data(data if data is not None else small_data())
        self._fits: dict[tuple, MethodResult] = {}
        self._at: tuple | None = None

    @property
    def params(self) -> dict:
        """The smallest parameters of the class (:func:`small_params`); with AT's ``epsilon``
        where it serves in AT, which is how AT's A1 and A2 are trained: a stage's compiled
        loop is keyed by the names of its hyperparameters, so its plain fits and AT then share
        their loops (a method's stages do not read ``epsilon``)."""
        return small_params(self.cls, self.cls.serves_in_at)

    def fit(self, protocol: str, seeds=SEEDS, options: dict | None = None) -> MethodResult:
        """The class with ``options`` (default: its defaults, the protocol's form) fitted on
        ``seeds`` with :attr:`params` under ``protocol``'s settings (made once)."""
        options = dict(options or {})
        key = (protocol, tuple(seeds), tuple(sorted(options.items())))
        if key not in self._fits:
            problem = fit_problem(self.data[protocol], protocol, seeds)
            method = self.cls(**options)
            settings = epoch_settings(protocol)
            if FORM.name in options:      # what ran is what the settings as applied say
                assert method.applied(settings).forms == options[FORM.name], (
                    f"{case_id(options)}: the settings as applied say "
                    f"{method.applied(settings).forms}")
            self._fits[key] = method.fit(problem, self.params, settings)
        return self._fits[key]

    # --- what the class declares ---------------------------------------------------------------

    def declares_the_contract(self) -> None:
        """The registry's checks and ``view = "binary"``; the common ``dim``, ``lam`` and
        ``lr``, and ``batch_size`` where the class serves in AT with the default
        ``at_batch_size`` (A3 is batched by it; a method trained on batches of all pairs, as
        ESMM, has no batch of observed pairs and sizes A3's itself); a known ``form``;
        ``uses_mcar`` where it ``leaks``; ``train`` written; the ``form`` option where the
        class says how its reference code's form differs (``reference_forms``)."""
        cls = self.cls
        check_declarations(cls, validate_binary_method_class, BINARY_FLAGS)
        check_hyperparameter_declarations(cls)
        names = [h.name for h in cls.hyperparameters]
        batched_at = cls.serves_in_at and cls.at_batch_size is BinaryMethod.at_batch_size
        # a class that trains nothing (``trains = False``: the popularity score) needs only
        # the method contract's dim and lam
        common = COMMON if getattr(cls, "trains", True) else COMMON[:2]
        missing = [h.name for h in common if h.name not in names
                   and (h.name != BATCH.name or batched_at)]
        assert not missing, f"hyperparameters lack the common {missing}"
        assert isinstance(cls.reference_forms, str), "reference_forms: a string"
        has_form = any(o.name == FORM.name for o in cls.options)
        assert has_form == bool(cls.reference_forms), (
            "a class whose reference code has a form to correct (reference_forms) declares "
            "the form option, and only such a class")
        assert not cls.leaks or cls.uses_mcar, "a method that leaks declares uses_mcar"
        assert cls.train is not BinaryMethod.train, "train() is not implemented"

    def reference_values(self, datasets=REFERENCE_DATASETS) -> None:
        """``reference_params`` holds, for each of ``datasets``, the method's entry (and its
        AT entry exactly when it serves in AT), and every entry passes ``check_params``."""
        cls = self.cls
        table = cls.reference_params
        assert isinstance(table, dict), "reference_params: a dict"
        plain, at = (config_key(NO_PROPENSITY, w, cls.name) for w in (False, True))
        for dataset in datasets:
            assert plain in table.get(dataset, {}), f"no reference values for {dataset}"
        for dataset, entries in table.items():
            for key, values in entries.items():
                assert key == plain or (key == at and cls.serves_in_at), (
                    f"reference_params[{dataset!r}] has entry {key!r}: {plain!r}"
                    + (f" or {at!r}" if cls.serves_in_at else ""))
                cls.check_params(values, with_at=key == at)
            if cls.serves_in_at:
                assert at in entries, f"no AT reference values for {dataset}"

    def bad_cases(self) -> list[tuple]:
        """:func:`~atrec.testing.params.bad_hyperparameter_cases`, AT's ``epsilon`` only for a
        class that serves in AT."""
        return [case for case in bad_hyperparameter_cases(self.cls)
                if self.cls.serves_in_at or not case[1]]

    # --- what a fit returns --------------------------------------------------------------------

    def result_shapes(self, protocol: str, options: dict | None = None) -> None:
        """The fit's result (the class with ``options``) has the contract's shapes,
        probabilities in (0, 1), finite errors, and the epoch it reports is the rule's: the
        last one trained under the reference rule, the first of lowest validation criterion
        under early stopping."""
        res = self.fit(protocol, options=options)
        n_full = len(fit_problem(self.data[protocol], protocol, SEEDS[:1]).test_full["user"])
        res.check(len(SEEDS), n_full)
        scores = np.asarray(res.scores)
        assert np.isfinite(scores).all(), "scores: not all finite"
        assert ((scores > 0) & (scores < 1)).all(), (
            f"scores: probabilities in (0, 1), got [{scores.min()}, {scores.max()}]")
        for f in ("mae", "mse"):
            value = np.asarray(getattr(res, f))
            assert np.isfinite(value).all() and ((0 <= value) & (value <= 1)).all(), (f, value)
        trace = np.asarray(res.selection_trace)
        assert 1 <= trace.shape[0] <= MAX_EPOCHS, f"{trace.shape[0]} epochs"
        best = np.asarray(res.best_step)
        assert np.issubdtype(best.dtype, np.integer), best.dtype
        validation = epoch_settings(protocol).stopping == "validation"
        for k in range(len(SEEDS)):
            column = trace[:, k]
            expect = np.nanargmin(column) if validation else _last_finite(column)
            what = "first epoch of lowest validation criterion" if validation else "last epoch"
            assert best[k] == expect, f"replica {k}: best_step {best[k]}, the {what} is {expect}"
            assert res.best_val_loss[k] == column[best[k]], f"replica {k}: best_val_loss"
        if validation:
            assert "val_loss" in res.traces, "no val_loss trace under early stopping"
        for name, values in res.traces.items():
            assert np.ndim(values) == 2 and np.shape(values)[1] == len(SEEDS), (
                f"trace {name}: shape {np.shape(values)}")

    def replicas_are_independent(self, protocol: str, options: dict | None = None) -> None:
        """Seed ``s``'s numbers are the same bits in a fit of ``(s, t)`` as in a fit of
        ``(s, s)`` (so as in any other fit of that width: determinism too), and the two
        replicas of ``(s, s)`` are the same bits. A method whose replicas read one another's
        data or parameters fails this."""
        s = SEEDS[0]
        mixed, alone = self.fit(protocol, options=options), self.fit(protocol, (s, s), options)
        for name in ("scores", "mae", "mse", "best_step", "best_val_loss"):
            a, b = np.asarray(getattr(mixed, name)), np.asarray(getattr(alone, name))
            np.testing.assert_array_equal(a[0], b[0], strict=True,
                                          err_msg=f"seed {s}'s {name} beside seed {SEEDS[1]} "
                                                  f"and beside itself")
            np.testing.assert_array_equal(b[0], b[1], strict=True,
                                          err_msg=f"{name} of two replicas of seed {s}")
        ran = _last_finite(np.asarray(alone.selection_trace)[:, 0]) + 1
        np.testing.assert_array_equal(np.asarray(mixed.selection_trace)[:ran, 0],
                                      np.asarray(alone.selection_trace)[:ran, 0],
                                      err_msg=f"seed {s}'s selection trace")

    # --- asymmetric tri-training ---------------------------------------------------------------

    def at_fit(self) -> tuple:
        """``(predictors(run) as AT received them, the AT result)`` under
        :data:`AT_PROTOCOL` (made once)."""
        if self._at is None:
            method, seen = self.cls(), []
            own = method.predictors

            def recorded(run):   # what fit_binary_at gets, kept for the checks
                seen.append(own(run))
                return seen[-1]

            method.predictors = recorded
            problem = fit_problem(self.data[AT_PROTOCOL], AT_PROTOCOL, SEEDS)
            result = fit_binary_at(method, problem, self.params, epoch_settings(AT_PROTOCOL))
            assert len(seen) == 1, f"AT called predictors() {len(seen)} times"
            self._at = (seen[0], result)
        return self._at

    def serves_in_at(self) -> None:
        """A class that declares ``serves_in_at`` gives AT two MF predictors (``pred_W``
        ``[R, users, k]``, ``pred_H`` ``[R, items, k]``, finite, from different
        initialisations), constants and stages as dicts; AT's result has the contract's shapes
        and finite probabilities."""
        if not self.cls.serves_in_at:
            return
        out, res = self.at_fit()
        assert isinstance(out, tuple) and len(out) == 4, (
            "predictors() gives (A1 params, A2 params, constants, stages)")
        first, second, consts, stages = out
        assert isinstance(consts, dict) and isinstance(stages, dict), "constants and stages"
        problem = fit_problem(self.data[AT_PROTOCOL], AT_PROTOCOL, SEEDS[:1])
        sizes = {"pred_W": problem.num_users, "pred_H": problem.num_items}
        for label, params in (("A1", first), ("A2", second)):
            for name, rows in sizes.items():
                assert name in params, f"{label} has no {name}"
                shape = np.shape(params[name])
                assert len(shape) == 3 and shape[:2] == (len(SEEDS), rows), (
                    f"{label}'s {name} has shape {shape}")
                assert np.isfinite(np.asarray(params[name])).all(), f"{label}'s {name}"
        assert not np.array_equal(np.asarray(first["pred_W"]), np.asarray(second["pred_W"])), (
            "A1 and A2 are the same predictor")
        res.check(len(SEEDS), len(problem.test_full["user"]))
        scores = np.asarray(res.scores)
        assert np.isfinite(scores).all() and ((scores > 0) & (scores < 1)).all(), (
            "AT's scores: finite probabilities in (0, 1)")
        assert np.isfinite(res.mse).all() and np.isfinite(res.mae).all(), "AT's mse, mae"


def check_binary_method(cls: type[BinaryMethod], data: RatingData | None = None) -> None:
    """Check that binary method class ``cls`` keeps atrec's binary method contract; one line in
    a plug-in's tests: ``check_binary_method(MyMethod)`` (``check_method`` comes here for a
    class whose ``view`` is ``binary``).

    Parameters
    ----------
    cls:
        A :class:`~atrec.methods.binary.base.BinaryMethod` subclass, registered or not.
    data:
        The data set the protocols split; default :func:`small_data` (60 users x 40 items).

    Raises
    ------
    AssertionError
        Naming the class and the first check it fails (``check 'result_shapes'
        (binary-clean)``), with the failure's message.
    """
    checks = BinaryMethodChecks(cls, data)
    steps = [("declares_the_contract", checks.declares_the_contract),
             ("reference_values", checks.reference_values),
             ("parameters_must_be_a_mapping", checks.parameters_must_be_a_mapping),
             ("bad_hyperparameters", checks.bad_hyperparameters)]
    for protocol, options in fit_cases(cls):
        steps += [(f"{name} ({protocol}, {case_id(options)})",
                   _bound(getattr(checks, name), protocol, options))
                  for name in ("result_shapes", "replicas_are_independent")]
    steps.append(("serves_in_at", checks.serves_in_at))
    run_checks(f"binary method class {cls.__name__}", steps)


def fit_cases(cls: type) -> list[tuple[str, dict]]:
    """``(protocol, options)`` of each distinct run the checks fit: every protocol of
    :data:`PROTOCOLS`, with each case of :func:`~atrec.methods.options.option_cases` (a method
    with a ``form``: both forms under both protocols)."""
    return [(protocol, options) for protocol in PROTOCOLS for options in option_cases(cls)]


def _bound(check, protocol: str, options: dict):
    return lambda: check(protocol, options)
