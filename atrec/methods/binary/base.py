"""The contract of a binary method: a :class:`~atrec.methods.base.Method` trained in epochs
(:mod:`atrec.learners.epochs`) on binary labels, under the binary protocols.

A :class:`BinaryMethod` declares its hyperparameters (``dim`` is the embedding size ``k``,
``lam`` the predictor's weight decay, ``lr`` and ``batch_size`` its Adam and batches, then its
own), its ``reference_params`` (the reference code's per-dataset constants: the parameter set
``reference`` under ``binary-icde24``) and writes :meth:`BinaryMethod.train`, which runs its
stages through a :class:`BinaryRun` and returns the predictor's parameters. The base class
evaluates them: test probabilities, MSE and MAE, the scores the ranking metrics read.

Under ``binary-clean`` the main stage stops early on a validation criterion
(:meth:`BinaryRun.criterion`), the same for every method: ``1 -`` the pooled AUC of the
predictor's scores on the MCAR slice the protocol carves from the training side (selection
``mcar-auc``), with patience and cap in optimiser steps; under a protocol whose selection is
``method``, each method's own criterion (its propensity-weighted, self-normalised
cross-entropy where it has propensities, else the plain mean cross-entropy). Pre-training
stages (a propensity model) keep the reference rule on their own loss, which reads no label.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import ClassVar

import numpy as np

from atrec.learners import binary_models as bm
from atrec.learners.epochs import StageResult
from atrec.methods.base import DIM, LAM, FitProblem, Method, MethodResult
from atrec.methods.binary.hyperparameters import (  # noqa: F401  (re-exported to the methods)
    BATCH,
    BINARY_DIM,
    BINARY_LAM,
    CODED,
    COMMON,
    CORRECTED,
    FORM,
    GAMMA,
    IMP_LAM_OWN,
    IMP_LR,
    IMPUTATION_INIT_SCALE,
    IMPUTATION_OWN,
    LR,
    PROP_BATCH,
    PROP_LAM,
    PROP_LR,
)
from atrec.methods.binary.run import BinaryRun, Trained  # noqa: F401  (re-exported)
from atrec.runtime import tf

VIEW = "binary"

AT_EPSILON = 0.1   # |q1 - q2| threshold of the reference AT entries (atrec's choice)
PREDICT_CHUNK = 1 << 18   # test pairs per predict call (every real test set fits in one)
AT_SALT = 1000     # A2 starts from other draws than A1 (atrec.methods.binary.at)
assert DIM.name == BINARY_DIM.name and LAM.name == BINARY_LAM.name


class BinaryMethod(Method):
    """Base class of binary methods (module doc)."""

    view: ClassVar[str] = VIEW
    hyperparameters = COMMON
    uses_propensity = False    # takes no --propensity estimator ...
    # ... but weights by a propensity of its own (learned in the run, or from the MCAR slice)
    own_propensity: ClassVar[bool] = True
    leaks: ClassVar[bool] = False      # reads the 5% MCAR slice under binary-icde24
    # how the reference code's form differs from the corrected one; a method that has one
    # declares options = (FORM,) (:data:`FORM`: the protocol supplies the default)
    reference_forms: ClassVar[str] = ""
    # hyperparameters read only by the reference stopping rule: under a protocol that stops on
    # validation they keep their default and are not searched (atrec.tuning.space)
    rule_hyperparameters: ClassVar[tuple[str, ...]] = ()
    # the hyperparameters the corrected form adds (its nuisance models' own optimisers), each
    # with a default: searched and recorded in that form only, so the code's form's records
    # and reference values keep their keys (:meth:`hyperparameters_for`)
    corrected_hyperparameters: ClassVar[tuple] = ()

    @classmethod
    def hyperparameters_for(cls, form: str | None = None) -> tuple:
        """:attr:`hyperparameters`, and in the corrected form
        :attr:`corrected_hyperparameters` too."""
        extra = cls.corrected_hyperparameters if form == CORRECTED else ()
        return cls.hyperparameters + tuple(extra)

    @classmethod
    def every_hyperparameter(cls) -> tuple:
        return cls.hyperparameters_for(CORRECTED)

    def with_defaults(self, params: dict, form: str | None) -> dict:
        """``params`` with the defaults of ``form``'s hyperparameters it lacks (a fit called
        with the reference values alone, from Python)."""
        out = dict(params)
        for h in self.hyperparameters_for(form):
            if h.name not in out and h.default is not None:
                out[h.name] = out[h.default] if isinstance(h.default, str) else h.default
        return out

    def train(self, run: BinaryRun) -> Trained:  # pragma: no cover - abstract
        raise NotImplementedError

    def predict(self, params: dict, users, items):
        """The probabilities the predictor scores (default: the MF called ``pred``)."""
        return bm.mf_prob(params, "pred", users, items)

    def fit(self, problem: FitProblem, params: dict, settings) -> MethodResult:
        run = self.start(problem, params, settings)
        return self.result(run, self.train(run))

    def applied(self, settings):
        """The protocol's ``settings`` as this method runs under them: ``forms`` the form its
        ``form`` option chose (the protocol's when none was), so that a record stores the form
        that ran."""
        form = getattr(self, "option_values", {}).get(FORM.name)
        return replace(settings, forms=form) if form and settings.forms != form else settings

    def start(self, problem: FitProblem, params: dict, settings) -> BinaryRun:
        """The :class:`BinaryRun` of a fit, under the settings as applied (:meth:`applied`)."""
        settings = self.applied(settings)
        return BinaryRun(problem, self.with_defaults(params, settings.forms), settings,
                         self.leaks or self.uses_mcar)

    def at_batch_size(self, run: BinaryRun) -> int:
        """Observed pairs per batch of AT's third model (its all-pairs draws are a multiple of
        it, :data:`atrec.methods.binary.at.AT_RATIO`): the method's ``batch_size``."""
        return int(run.values["batch_size"])

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.serves_in_at:      # a method that serves in AT has reference values for it
            cls.reference_params = with_at(cls.reference_params)

    def predictors(self, run: BinaryRun) -> tuple:
        """For a method that serves in AT: ``(A1 params, A2 params, constants, stages)``, two
        predictors trained by the method from different initialisations, the frozen constants
        they share (a propensity model) and the pre-training stages' results by name.

        This default trains the whole method twice, the second time from other initial draws
        (:data:`AT_SALT`), and hands AT each fit's predictor, the MF called ``pred`` (what
        :meth:`predict` scores and what AT's third model learns from): right for a method
        whose models all train together (its propensity too), which then share nothing. A
        method that pre-trains a propensity once gives both predictors that one model
        instead (``mf-ips``, the DR family)."""
        first, second = trained_twice(run, self.train)
        return (predictor_tables(first.params), predictor_tables(second.params), {},
                {**first.stages, "A1": first.main, "A2": second.main})

    def result(self, run: BinaryRun, out: Trained) -> MethodResult:
        """Evaluate the predictor of a fit on the test set: probabilities, MSE and MAE at the
        evaluated epoch (the last, or the best under binary-clean), the scores ranked."""
        problem = run.problem
        test = problem.test
        if len(problem.test_full["user"]) != len(test["user"]):
            raise ValueError("binary methods rank the evaluated test set (ranking_part 'test')")
        q = self.test_probabilities(out.params, run.replicas, test["user"], test["item"])
        y = np.asarray(test["rating"], np.float64)[None, :]
        main = out.main
        if main.val is not None:
            best_step, best_val, trace = main.best_epoch, main.best_val, main.val
        else:
            best_step = main.epochs - 1
            best_val = np.asarray([main.losses[e, k] for k, e in enumerate(best_step)])
            trace = main.losses
        traces = {"train_loss": main.losses}
        if main.val is not None:
            traces["val_loss"] = main.val
        for name, stage in out.stages.items():   # how long each pre-training stage ran
            traces[f"epochs_{name}"] = np.asarray(stage.epochs, np.float64)[None, :]
        err = y - q.astype(np.float64)
        return MethodResult(np.mean(np.abs(err), axis=1), np.mean(err ** 2, axis=1),
                            np.asarray(best_step), np.asarray(best_val, np.float64), trace, q,
                            traces, {**self.validation_scores(run, out.params),
                                     **self.cap_flags(out.main)}, list(out.nuisance))

    @staticmethod
    def cap_flags(main: StageResult) -> dict:
        """``{"capped": [R] bool}`` where the main stage's cap, not its rule, stopped a replica
        (:meth:`BinaryRun.main`); empty when the stage had no validation rule."""
        capped = main.extras.get("capped")
        return {} if capped is None else {"capped": np.asarray(capped, bool)}

    def validation_scores(self, run: BinaryRun, params: dict) -> dict:
        """``{"val_scores": [R, n_val]}``: the evaluated predictor's probabilities on each
        replica's validation pairs, which the failed-fit rules read (no test label:
        :mod:`atrec.evaluation.fits`); empty without a validation part."""
        if np.shape(run.problem.val["user"])[-1] == 0:
            return {}
        return {"val_scores": np.asarray(self.predict(params, run.val["user"], run.val["item"]),
                                         np.float64)}


    def test_probabilities(self, params: dict, replicas: int, users, items) -> np.ndarray:
        """``[R, n]`` float32: :meth:`predict` at the test pairs, in one call up to
        :data:`PREDICT_CHUNK` pairs, in chunks of it beyond (the semi-synthetic truth's every
        cell: one call would gather ``R x n x dim`` embeddings at once)."""
        out = []
        for lo in range(0, len(users), PREDICT_CHUNK):
            u, i = users[lo:lo + PREDICT_CHUNK], items[lo:lo + PREDICT_CHUNK]
            shape = (replicas, len(u))
            out.append(np.asarray(self.predict(
                params, tf.constant(np.broadcast_to(u, shape), tf.int32),
                tf.constant(np.broadcast_to(i, shape), tf.int32)), np.float32))
        return out[0] if len(out) == 1 else np.concatenate(out, axis=1)


def trained_twice(run: BinaryRun, fit_one: Callable) -> tuple:
    """``fit_one(run)`` twice, the second from other initial draws (:data:`AT_SALT`): AT's A1
    and A2."""
    first = fit_one(run)
    run.init_salt = AT_SALT
    try:
        second = fit_one(run)
    finally:
        run.init_salt = 0
    return first, second


def reference_values(cls: type, dataset: str) -> dict:
    """A class's ``reference`` values on ``dataset`` without AT (its one entry that is not an
    ``-at`` one)."""
    return next(v for k, v in cls.reference_params[dataset].items() if not k.endswith("-at"))


def predictor_tables(params: dict) -> dict:
    """The predictor's tables (``pred_W``, ``pred_H``) among a fit's parameters."""
    return {k: v for k, v in params.items() if k.startswith("pred_")}


def with_at(table: dict) -> dict:
    """``table`` (``dataset -> config key -> values``) with an AT entry ``<key>-at`` for each
    entry that has none: the same values and ``epsilon`` = :data:`AT_EPSILON` (no script of the
    collection runs AT, so this threshold is atrec's)."""
    return {d: {**entries, **{f"{k}-at": {**v, "epsilon": AT_EPSILON}
                              for k, v in entries.items()
                              if not k.endswith("-at") and f"{k}-at" not in entries}}
            for d, entries in table.items()}


def clip_weight(p, gamma):
    """``1 / clip(p, gamma, 1)`` (the reference code's lower clip)."""
    return 1.0 / tf.clip_by_value(p, gamma, 1.0)
