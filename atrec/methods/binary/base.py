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
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.learners.epochs import Group, Patience, ReferenceRule, Stage, StageResult, run_stage
from atrec.methods.binary.nuisance import auc
from atrec.methods.base import DIM, LAM, FitProblem, Hyperparameter, Method, MethodResult
from atrec.methods.options import Option
from atrec.runtime import tf
from atrec.run_settings import MAX_EPOCHS
from atrec.runtime.threads import one_thread_per_op

VIEW = "binary"

# the hyperparameters every binary method shares (the reference code's k, weight decay, lr, B)
BINARY_DIM = Hyperparameter("dim", "int", 2, 64, step=2, maximum=1024,
                            help="embedding size k (N(0, 1) entries)")
BINARY_LAM = Hyperparameter("lam", "float", 1e-7, 1e-1, log=True, maximum=10.0,
                            help="the predictor's weight decay (PyTorch's Adam, coupled L2)")
LR = Hyperparameter("lr", "float", 1e-3, 1e-1, log=True, maximum=10.0, positive=True,
                    help="the predictor's Adam learning rate")
BATCH = Hyperparameter("batch_size", "int", 64, 4096, step=64, maximum=65536,
                       help="observed pairs per batch")
GAMMA = Hyperparameter("gamma", "float", 0.01, 0.3, maximum=1.0, positive=True,
                       help="lower clip of the propensity")
PROP_BATCH = Hyperparameter("prop_batch", "int", 256, 32768, step=256, maximum=1 << 20,
                            help="all-pairs per batch of the propensity model")
PROP_LAM = Hyperparameter("prop_lam", "float", 1e-7, 1.0, log=True, maximum=10.0,
                          help="the propensity model's weight decay")
PROP_LR = Hyperparameter("prop_lr", "float", 1e-3, 1e-1, log=True, maximum=10.0, positive=True,
                         help="the propensity model's Adam learning rate")
COMMON = (BINARY_DIM, BINARY_LAM, LR, BATCH)
# The forms of a method whose reference code computes something other than its paper's
# estimator: the code's (binary-icde24's default) or the corrected one (binary-clean's). The
# protocol supplies the default (EpochSettings.forms); a run may choose the other.
CODED, CORRECTED = "coded", "corrected"
FORM = Option("form", ((CODED, "as the reference code computes it (its deviations kept)"),
                       (CORRECTED, "the corrected form (the paper's estimator)")), None,
              "which form of the method runs: the reference code's or the corrected one")
# the corrected form's imputation MF starts at its N(0, 1) draws times this (entries of sd
# 0.01; issue 60 measured DR-JL's imputation AUC 0.52 from N(0, 1) at k about 50, 0.62 at 0.1,
# 0.65 at 0.01)
IMPUTATION_INIT_SCALE = 0.01
# The corrected form's imputation MF has its own Adam: these two hyperparameters (the code's
# form trains it with the predictor's lr and lam, or the method's imp_lam). Each defaults to
# the predictor's value, so that a parameter set without them (the reference values, a file
# tuned before they existed) runs as the corrected form ran before they were added.
IMP_LR = Hyperparameter("imp_lr", "float", 1e-3, 1e-1, log=True, maximum=10.0, positive=True,
                        default="lr", help="corrected form: the imputation MF's Adam learning "
                                           "rate (default: lr)")
IMP_LAM_OWN = Hyperparameter("imp_lam", "float", 1e-7, 1e-1, log=True, maximum=10.0,
                             default="lam", help="corrected form: the imputation MF's weight "
                                                 "decay (default: lam)")
IMPUTATION_OWN = (IMP_LR, IMP_LAM_OWN)   # corrected_hyperparameters where the code has no imp_lam
AT_EPSILON = 0.1   # |q1 - q2| threshold of the reference AT entries (atrec's choice)
PREDICT_CHUNK = 1 << 18   # test pairs per predict call (every real test set fits in one)
AT_SALT = 1000     # A2 starts from other draws than A1 (atrec.methods.binary.at)
assert DIM.name == BINARY_DIM.name and LAM.name == BINARY_LAM.name


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
        return self.clean and getattr(self.settings, "selection", "method") == "mcar-auc"

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
            in_steps = getattr(self.settings, "unit", "epochs") == "steps"
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
