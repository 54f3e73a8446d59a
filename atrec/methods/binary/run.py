"""One binary fit's inputs and stages (:class:`BinaryRun`) and what a method's training returns
(:class:`Trained`): the replicas' tables, training and validation arrays, NumPy streams and
hyperparameters; the pre-training and main stages under the protocol's rule; and the main
stage's validation criterion, under ``binary-clean`` one rule for every method (``1 -`` the
pooled AUC of the MCAR slice, :meth:`BinaryRun.mcar_criterion`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.learners.epochs import Group, Patience, ReferenceRule, Stage, StageResult, run_stage
from atrec.methods.base import FitProblem
from atrec.methods.binary.hyperparameters import CORRECTED, IMP_LR, IMPUTATION_INIT_SCALE
from atrec.methods.binary.nuisance import auc
from atrec.run_settings import MAX_EPOCHS
from atrec.runtime import tf
from atrec.runtime.threads import one_thread_per_op


@dataclass
class Trained:
    """What :meth:`BinaryMethod.train` returns: the predictor's parameters, the main stage's
    result (epochs, losses, validation trace) and the pre-training stages' epochs by name."""

    params: dict
    main: StageResult
    stages: dict
    nuisance: list = field(default_factory=list)   # per replica (atrec.methods.binary.nuisance)


class BinaryRun:
    """One fit's inputs for a binary method's stages: replicas, tables, training and validation
    arrays on the device, per-replica NumPy streams, hyperparameters and the protocol's
    settings (``settings.forms``: ``coded`` or ``corrected``, the form that runs)."""

    def __init__(self, problem: FitProblem, params: dict, settings, leaks: bool) -> None:
        one_thread_per_op()   # before the first op, where it can (atrec.runtime.threads)
        self.problem, self.values, self.settings = problem, dict(params), settings
        self.seeds = list(problem.seeds)
        self.replicas = len(self.seeds)
        self.num_users, self.num_items = problem.num_users, problem.num_items
        self.rngs = [np.random.RandomState(s) for s in self.seeds]
        self.init_salt = 0   # added to each model's salt: AT's A2 and A3 start elsewhere
        if leaks and settings.stopping == "reference":
            for r in self.rngs:   # the slice was the stream's first draw (protocols.binary)
                r.permutation(len(problem.test_full["user"]))
        train = problem.train
        self.n_train = train["user"].shape[1]
        self.consts = {"train_user": tf.constant(train["user"], tf.int32),
                       "train_item": tf.constant(train["item"], tf.int32),
                       "train_label": tf.constant(train["rating"], tf.float32)}
        self.val = {k: tf.constant(problem.val[k]) for k in ("user", "item")}
        self.val["label"] = tf.constant(problem.val["rating"], tf.float32)
        self.select = self._selection_slice() if self.selects_on_mcar else None

    @property
    def selects_on_mcar(self) -> bool:
        """Whether the main stage selects on the MCAR slice (selection ``mcar-auc``)."""
        return self.clean and self.settings.selection == "mcar-auc"

    def _selection_slice(self) -> dict:
        """Each replica's MCAR slice (``split.test_prior``: under ``binary-clean`` the 5% cut
        once and removed from the test set), as ``[R, m]`` tensors and the labels in NumPy."""
        slices = [sp.test_prior for sp in self.problem.splits]
        if not slices or any(len(s) == 0 for s in slices):
            raise ValueError("selection mcar-auc needs the protocol's MCAR slice (test_prior)")
        if len({len(s) for s in slices}) != 1:
            raise ValueError("selection mcar-auc needs MCAR slices of one size across seeds")
        return {"user": tf.constant(np.stack([s.user for s in slices]), tf.int32),
                "item": tf.constant(np.stack([s.item for s in slices]), tf.int32),
                "label": np.stack([np.asarray(s.rating) for s in slices])}

    @property
    def corrected(self) -> bool:
        return self.settings.forms == CORRECTED

    @property
    def clean(self) -> bool:
        return self.settings.stopping == "validation"

    def direct_scale(self, ratio: int = 1) -> float:
        """The factor on a DR loss's direct term (its sum over the ``G B`` pairs drawn from all
        ``N = num_users x num_items``, divided by ``G B``): 1 in the code's form; in the
        corrected form ``N / (ratio n)`` (``n`` the training pairs), ``ratio`` = 1 for a loss
        that divides its observed sums by ``B`` and ``G`` for one that divides them by ``G B``.
        The observed sums, weighted by ``1 / p_hat`` (about ``N / n`` on average), then keep
        their scale and the direct term takes the textbook DR estimate's weight against them:
        the loss is that estimate times ``N / (ratio n)``, the factor the code's IPS term
        carries (docs/protocols.md, "Corrected DR forms")."""
        if not self.corrected:
            return 1.0
        return self.num_users * self.num_items / (ratio * self.n_train)

    def tables(self, prefix: str, dim: int | None = None) -> dict:
        """N(0, 1) MF tables ``{prefix_W, prefix_H}`` of every replica (``dim``: default the
        method's ``dim``), drawn from the replica's seed, the model's salt and
        :attr:`init_salt`."""
        dim = int(self.values["dim"]) if dim is None else dim
        return bm.normal_tables(self.seeds, prefix, self.num_users, self.num_items, dim,
                                bm.SALTS.get(prefix, 0) + self.init_salt)

    def imputation_tables(self, dim: int | None = None) -> dict:
        """The imputation MF's initial tables ``{imp_W, imp_H}``: in the code's form N(0, 1)
        as :meth:`tables` (logits of sd about ``sqrt(k)``: saturated noise at the start); in
        the corrected form the same draws times :data:`IMPUTATION_INIT_SCALE` (logits near
        0, the imputation starting near 1/2)."""
        out = self.tables("imp", dim)
        if self.corrected:
            out = {k: v * np.float32(IMPUTATION_INIT_SCALE) for k, v in out.items()}
        return out

    def imputation_group(self, names: tuple = ("imp_W", "imp_H"), wd: str = "lam") -> Group:
        """The imputation MF's optimiser: in the code's form the predictor's ``lr`` and the
        weight decay ``wd`` (the predictor's ``lam``, or a method's ``imp_lam``); in the
        corrected form its own, ``imp_lr`` and ``imp_lam`` (:data:`IMP_LR`)."""
        if self.corrected:
            return Group(tuple(names), lr=IMP_LR.name, wd="imp_lam")
        return Group(tuple(names), lr="lr", wd=wd)

    def hp(self, **extra) -> dict:
        """The scalar hyperparameters a stage's step reads, with ``extra`` ones."""
        return {k: float(v) for k, v in {**self.values, **extra}.items()}

    def observed(self) -> np.ndarray:
        """``[R, nu * ni]`` uint8: 1 at each replica's observed training pairs (for a stage
        that regresses ``o`` over all pairs; the epoch loop casts what it gathers: at Yahoo's
        size a quarter of the float32 table's bytes, and a gather in it that many fewer cache
        misses)."""
        cells = self.num_users * self.num_items
        out = np.zeros((self.replicas, cells), np.uint8)
        t = self.problem.train
        for k in range(self.replicas):
            out[k, t["user"][k].astype(np.int64) * self.num_items + t["item"][k]] = 1.0
        return out

    def leak_mean(self) -> np.ndarray:
        """``[R]``: the mean label of each replica's 5% MCAR slice (``y_bar``, ``P(y = 1)``)."""
        return np.asarray([sp.test_prior.rating.mean() for sp in self.problem.splits],
                          np.float32)

    def pretrain(self, stage: Stage, params: dict, hp: dict, consts: dict | None = None,
                 source_size: int | None = None, rule=None) -> StageResult:
        """A pre-training stage with the reference rule (or ``rule``) on its own loss."""
        n = self.n_train if source_size is None else source_size
        return run_stage(stage, params, hp, {**self.consts, **(consts or {})}, self.rngs, n,
                         self.num_users, self.num_items, rule or ReferenceRule(self.replicas),
                         max_epochs=min(self.settings.max_epochs, MAX_EPOCHS))

    def main(self, stage: Stage, params: dict, hp: dict, consts: dict | None,
             criterion: Callable, rule=None, source_size: int | None = None) -> StageResult:
        """The main stage: the reference rule (or ``rule``), or under ``binary-clean`` early
        stopping on ``criterion(params) -> [R]`` (the best epoch's parameters kept).
        ``source_size``: the primary source's size when it is not the training pairs (a stage
        with ``source="all"``: ``num_users * num_items``)."""
        consts = {**self.consts, **(consts or {})}
        n = self.n_train if source_size is None else source_size
        steps = max(1, n // stage.batch_size)      # optimiser steps per epoch
        cap = self.settings.max_epochs
        if self.clean:
            in_steps = self.settings.unit == "steps"
            rule = Patience(self.replicas, self.settings.patience, steps if in_steps else 1)
            cap = self.settings.main_cap(steps) if in_steps else cap
        res = run_stage(stage, params, hp, consts, self.rngs, n, self.num_users,
                        self.num_items, rule or ReferenceRule(self.replicas),
                        validate=criterion, max_epochs=cap)
        if isinstance(rule, Patience):   # stopped by the cap, not the rule: flagged
            res.extras["capped"] = (res.epochs >= cap) & (rule.wait < rule.patience)
        return res

    def criterion(self, predict: Callable, weights: Callable | None = None,
                  live: bool = False) -> Callable:
        """The validation criterion of ``predict(params, users, items) -> q``: the mean
        cross-entropy on the validation part, self-normalised with ``weights(users, items) ->
        1/p`` when given; with ``live``, ``weights(params, users, items)`` reads the
        parameters being trained (a propensity model trained with the predictor).

        Under selection ``mcar-auc`` every method gets the same criterion instead
        (:meth:`mcar_criterion`), whatever ``weights`` it offers."""
        if self.selects_on_mcar:
            return self.mcar_criterion(predict)
        val = self.val

        @tf.function(jit_compile=True, autograph=False)
        def value(params):
            u, i = val["user"], val["item"]
            e = losses.bce(predict(params, u, i), val["label"])
            if weights is None:
                return tf.reduce_mean(e, axis=-1)
            return losses.self_normalised(e, weights(params, u, i) if live else weights(u, i))

        return value

    def mcar_criterion(self, predict: Callable) -> Callable:
        """``params -> [R]``: ``1 -`` the pooled AUC (ties counting half) of ``predict`` on
        each replica's MCAR slice; 0.5 is a constant or random predictor's value."""
        sel = self.select

        @tf.function(jit_compile=True, autograph=False)
        def scores(params):
            return predict(params, sel["user"], sel["item"])

        def value(params):
            q = np.asarray(scores(params), np.float64)
            return np.asarray([1.0 - auc(q[k], sel["label"][k]) for k in range(len(q))])

        return value
