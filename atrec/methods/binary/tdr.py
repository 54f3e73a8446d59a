"""TDR and TDR-JL under the binary protocols (``TDR_.py`` and ``TDR-JL.py`` with
``TDR_based.py``, classes ``MF_TDR`` and ``MF_TDR_JL``; docs/protocols.md, "The binary methods").

**Propensity, fixed before training** (:func:`fit_logistic_propensity`): (1) an MF of size
``k`` on the observed labels (mean BCE, Adam lr 0.05, weight decay 0, batch ``B``, the reference
rule with stop 5); (2) each pair's feature ``[W_u ; H_i]`` of that MF; (3) a logistic regression
on all ``users x items`` pairs, target ``o``, mean BCE, SGD lr 1e-3 with momentum 0.9, batch
``B``, stopped by :class:`LastBatchRule`; (4) ``p_hat = sigmoid(.)``, values below ``gamma`` set
to ``gamma``, ``w = 1 / p_hat``.

**Training** (``q`` the predictor's probability, ``G B`` uniform pairs ``D`` per batch):

- ``tdr-jl``: DR-JL's two steps, the reference rule with stop 1 on ``sum_O w BCE(q, y)``:
  (1) predictor, ``[sum_O w BCE(q, y) - sum_O BCE(q, q_hat) + sum_D BCE(q, q_hat)] / (G B)``;
  (2) imputation MF, ``q`` recomputed after (1) and detached, ``sum_O w (e - e_hat)^2`` with
  ``e = BCE(q, y)`` and ``e_hat = BCE(q_hat, q)`` (arguments reversed);
- ``tdr``: predictor only, DR with the constant imputation ``y_bar`` (mean label of the 5% MCAR
  slice): ``[sum_O w BCE(q, y) - sum_O BCE(q, y_bar) + sum_D BCE(q, y_bar)] / (G B)``, stop 5.

**The targeted step**, once the rule has fired: ``eps = sum alpha beta / sum beta^2`` over the
LAST batch (``beta = w - 1``; TDR-JL: ``alpha = e - e_hat`` with ``q`` after that batch's
predictor update and ``q_hat`` before its imputation update; TDR: ``alpha = BCE(q, y) -
BCE(q, y_bar)`` with ``q`` before the update), ``e_hat_T = eps (w - 1)``; then ONE predictor
step, Adam's state continued, on a fresh batch of ``B`` observed and ``G B`` uniform pairs:
``[sum_O w BCE(q, y)^2 - sum_O (e_hat + e_hat_T)^2 + sum_D (e_hat + e_hat_T)^2] / (G B)`` with
``e_hat = BCE(q, q_hat)`` (TDR: ``BCE(q, y_bar)``). The epoch loop carries the last batch's two
sums as parameters no optimiser moves (``tmle_ab``, ``tmle_bb``), so they are exact; the step
itself runs eagerly after :meth:`~atrec.methods.binary.base.BinaryRun.main` returns, on the
returned parameters and Adam state (under ``binary-clean``: the selected epoch's). It applies
to every replica, also one that reached the epoch cap without its rule firing (the code would
skip it there; Coat never gets near 1,000 epochs).

**Forms.** ``coded`` (the default under ``binary-icde24``) keeps the code's behaviours: the
observed pairs' weights ``1/p_hat`` and targeted terms are taken in row-major order of the observed cells but indexed by position in the training list
(aligned when that list is in row-major order, as Coat's is under ``binary-icde24``; misaligned
for a shuffled list: Yahoo in the code, and every ``binary-clean`` split); the DR correction
``sum_O BCE(q, .)`` is NOT weighted by ``w``; TDR-JL's imputation error reverses BCE's
arguments. ``corrected`` (the default under ``binary-clean``; ``form=corrected`` under
either protocol, ``form=coded`` the reference form) indexes the weights by the pair itself, weights the correction by ``w`` and scales the direct term
``sum_D`` by ``N / (G n)`` (:meth:`~atrec.methods.binary.base.BinaryRun.direct_scale`; both
in the targeted step too), so its loss is the textbook DR estimate times ``N / (G n)``, the scale of
the code's IPS term (docs/protocols.md, "Corrected DR forms"), and computes ``e_hat = BCE(q,
q_hat)``. Kept in both forms: the squared losses of the targeted
step, the propensity model and its rule. Under ``binary-clean`` the validation criterion is the
self-normalised cross-entropy weighted by this propensity.
"""

from __future__ import annotations

import numpy as np

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.learners.draws import distinct_positions
from atrec.learners.epochs import Batch, Group, ReferenceRule, Stage, StepState
from atrec.methods.base import Hyperparameter
from atrec.methods.binary.base import COMMON, FORM, GAMMA, IMPUTATION_OWN, BinaryMethod, Trained
from atrec.methods.binary.ips import PRED, SOURCE, _mf_step, reference_table
from atrec.methods.binary.nuisance import diagnose, model_grid
from atrec.runtime import tf

MF_LR, MF_LAM = 0.05, 0.0             # the propensity MF's Adam (TDR_based.py's MF.fit call)
SGD_LR, SGD_MOMENTUM = 1e-3, 0.9      # the logistic propensity's SGD
LOGISTIC_PATIENCE = 5                 # last-batch losses above the best before it stops
TDR_JL_STOP = 1                       # MF_TDR_JL.fit's default stop
FEATURES = ("tprop_W", "tprop_H")     # the propensity MF's tables, the logistic model's input
LOGISTIC = ("tprop_a", "tprop_b")
TMLE = ("tmle_ab", "tmle_bb")         # the last batch's sum alpha beta and sum beta^2

UNIFORM_RATIO = Hyperparameter("uniform_ratio", "int", 1, 8, maximum=64,
                               help="G: uniform pairs per observed pair in a batch")


class LastBatchRule:
    """The logistic propensity's stopping rule (``_compute_IPS`` of ``TDR_based.py``), per
    replica: fed the LAST batch's loss of each epoch (a stage with ``reduce="last"``), it counts
    an epoch whose loss exceeds the best so far (else that loss becomes the best; the count is
    never reset) and stops once the count reaches ``patience``."""

    def __init__(self, replicas: int, patience: int = LOGISTIC_PATIENCE) -> None:
        self.patience = patience
        self.best = np.full(replicas, 1e9)
        self.count = np.zeros(replicas, np.int64)

    def update(self, loss: np.ndarray) -> np.ndarray:
        loss = np.asarray(loss, np.float64)
        worse = loss > self.best
        self.count = self.count + worse
        self.best = np.where(worse, self.best, loss)
        return self.count >= self.patience


def sgd_momentum(state: StepState, group: str, loss_fn, lr, momentum):
    """One step of ``torch.optim.SGD(lr, momentum)`` (no dampening, no weight decay) on
    ``group``, its buffers kept in the group's first Adam moment slot; returns the loss."""
    names = state.groups[group].names
    loss, grads = state.gradients(names, loss_fn)
    buf = state.opt[group]["m"]
    for n in names:
        buf[n] = momentum * buf[n] + grads[n]     # the first step: buf = g, as PyTorch
        state.params[n] = state.params[n] - lr * buf[n]
    return loss


def _logistic_step(state, b):
    features = {n: state.consts[n] for n in FEATURES}

    def loss(p):
        q = tf.sigmoid(bm.ncf_logit_rows({**features, **p}, b.users, b.items, "tprop"))
        return tf.reduce_mean(losses.bce(q, b.labels), -1)

    return sgd_momentum(state, "logit", loss, SGD_LR, SGD_MOMENTUM)


def fit_logistic_propensity(run) -> tuple[dict, dict]:
    """The fixed propensity of every replica (module doc): its tables and logistic weights
    (tensors, a stage's constants) and the two stages' results by name."""
    dim, batch = int(run.values["dim"]), int(run.values["batch_size"])
    mf = Stage("tdr-mf", _mf_step, {"pred": Group(("pred_W", "pred_H"), "tprop_lr", "tprop_lam")},
               batch)
    init = bm.normal_tables(run.seeds, "pred", run.num_users, run.num_items, dim,
                            salt=bm.SALTS["tprop"])
    first = run.pretrain(mf, init, run.hp(tprop_lr=MF_LR, tprop_lam=MF_LAM))
    features = {"tprop_W": first.params["pred_W"], "tprop_H": first.params["pred_H"]}
    logit = Stage("tdr-logistic", _logistic_step, {"logit": Group(LOGISTIC)}, batch,
                  source="all", reduce="last")
    second = run.pretrain(logit, bm.linear(run.seeds, "tprop", 2 * dim), run.hp(),
                          {"observed": tf.constant(run.observed()), **features},
                          source_size=run.num_users * run.num_items,
                          rule=LastBatchRule(run.replicas))
    prop = {**features, **{n: second.params[n] for n in LOGISTIC}}
    return prop, {"propensity_mf": first, "propensity": second}


def propensity_probability(consts: dict, users, items):
    """``p_hat`` of the logistic propensity at the pairs (its diagnostics read it everywhere:
    :func:`atrec.methods.binary.nuisance.model_grid`)."""
    return tf.sigmoid(bm.ncf_logit(consts, users, items, "tprop"))


def inverse_propensity(consts: dict, users, items, gamma):
    """``1 / max(p_hat, gamma)`` of the logistic propensity at the pairs."""
    return 1.0 / tf.maximum(tf.sigmoid(bm.ncf_logit(consts, users, items, "tprop")), gamma)


def observed_weight(consts: dict, rows, gamma):
    """The weights of the observed batch at training-list positions ``rows``: those of the
    pairs ``(cell_user, cell_item)[rows]`` (the observed cells in row-major order: the code's
    misalignment; the training list itself: aligned)."""
    at = lambda name: tf.gather(consts[name], rows, batch_dims=1)
    return inverse_propensity(consts, at("cell_user"), at("cell_item"), gamma)


def targeted_epsilon(params: dict):
    """``eps = sum alpha beta / sum beta^2`` of the last batch, ``[R, 1]``."""
    return (params["tmle_ab"] / params["tmle_bb"])[:, None]


def _stash(state, alpha, beta):
    state.params["tmle_ab"] = tf.reduce_sum(alpha * beta, -1)
    state.params["tmle_bb"] = tf.reduce_sum(beta * beta, -1)


def dr_loss(b, w, imputed, imputed_all, corrected, shift=None, shift_all=None,
            direct_scale=1.0):
    """The predictor's DR loss as a function of the parameters: ``[sum_O w e - sum_O cw e_hat +
    s sum_D e_hat] / (G B)`` with ``e = BCE(q, y)``, ``e_hat = BCE(q, imputed)``, ``cw = 1``
    (``corrected`` 0) or ``w`` (1), ``s = direct_scale`` (1 in the code's form, ``N / (G n)`` in
    the corrected one). With ``shift`` (the targeted step) each term is squared, ``e^2`` and
    ``(e_hat + shift)^2``."""
    size = tf.cast(tf.shape(b.all_users)[-1], w.dtype)
    cw = 1.0 + corrected * (w - 1.0)

    def loss(p):
        q = bm.mf_prob(p, "pred", b.users, b.items)
        e, e_hat = losses.bce(q, b.labels), losses.bce(q, imputed)
        e_all = losses.bce(bm.mf_prob(p, "pred", b.all_users, b.all_items), imputed_all)
        if shift is not None:
            e, e_hat, e_all = tf.square(e), tf.square(e_hat + shift), tf.square(e_all + shift_all)
        return (tf.reduce_sum(w * e - cw * e_hat, -1)
                + direct_scale * tf.reduce_sum(e_all, -1)) / size

    return loss


def imputed_error(q, q_hat, corrected):
    """``e_hat``: ``BCE(q_hat, q)`` (the code's reversed form, ``corrected`` 0) or
    ``BCE(q, q_hat)`` (1)."""
    return corrected * losses.bce(q, q_hat) + (1.0 - corrected) * losses.bce(q_hat, q)


def _tdr_step(state, b):
    w = observed_weight(state.consts, b.rows, state.hp["gamma"])
    y_bar = state.consts["y_bar"][:, None]
    q = bm.mf_prob(state.params, "pred", b.users, b.items)
    term = tf.reduce_sum(w * losses.bce(q, b.labels), -1)
    _stash(state, losses.bce(q, b.labels) - losses.bce(q, y_bar * tf.ones_like(q)), w - 1.0)
    state.minimize("pred", dr_loss(b, w, y_bar * tf.ones_like(q),
                                   y_bar * tf.ones_like(tf.cast(b.all_users, q.dtype)),
                                   state.hp["corrected"], direct_scale=state.hp["direct_scale"]))
    return term


def _tdr_jl_step(state, b):
    w = observed_weight(state.consts, b.rows, state.hp["gamma"])
    q_hat = bm.mf_prob(state.params, "imp", b.users, b.items)
    q_hat_all = bm.mf_prob(state.params, "imp", b.all_users, b.all_items)
    q = bm.mf_prob(state.params, "pred", b.users, b.items)
    term = tf.reduce_sum(w * losses.bce(q, b.labels), -1)
    state.minimize("pred", dr_loss(b, w, q_hat, q_hat_all, state.hp["corrected"],
                                   direct_scale=state.hp["direct_scale"]))
    q = tf.stop_gradient(bm.mf_prob(state.params, "pred", b.users, b.items))
    e = losses.bce(q, b.labels)
    _stash(state, e - imputed_error(q, q_hat, state.hp["corrected"]), w - 1.0)

    def imputation(p):
        e_hat = imputed_error(q, bm.mf_prob(p, "imp", b.users, b.items), state.hp["corrected"])
        return tf.reduce_sum(w * tf.square(e - e_hat), -1)

    state.minimize("imp", imputation)
    return term


class BinaryTDRJL(BinaryMethod):
    """TDR-JL (``TDR-JL.py``, ``MF_TDR_JL``): the logistic propensity on MF embeddings,
    DR-JL's joint learning, then the targeted step (module doc, where the forms are)."""

    name = "tdr-jl"
    serves_in_at = True
    label = "TDR-JL"
    description = "targeted DR with joint learning, logistic propensity (binary protocols)"
    reference = SOURCE + "TDR-JL.py"
    reference_forms = ("weights misaligned with a shuffled training list, unweighted "
                       "correction, reversed imputation error")
    options = (FORM,)
    hyperparameters = COMMON + (GAMMA, UNIFORM_RATIO)
    corrected_hyperparameters = IMPUTATION_OWN
    reference_params = reference_table(
        "tdr-jl", {"dim": 4, "lam": 1e-4, "lr": 0.05, "batch_size": 128, "gamma": 0.1,
                   "uniform_ratio": 4},
        {"dim": 8, "lam": 1e-5, "lr": 0.05, "batch_size": 2048, "gamma": 0.1,
         "uniform_ratio": 3})
    joint = True

    def _rule(self, run):
        return ReferenceRule(run.replicas, stop=TDR_JL_STOP)

    def _consts(self, run, prop: dict) -> dict:
        t = run.problem.train
        users, items = t["user"], t["item"]
        if not run.corrected:      # the observed cells in row-major order
            order = np.lexsort((items, users), axis=-1)
            users = np.take_along_axis(users, order, -1)
            items = np.take_along_axis(items, order, -1)
        return {**prop, "cell_user": tf.constant(users, tf.int32),
                "cell_item": tf.constant(items, tf.int32)}

    def _init(self, run) -> dict:
        init = run.tables("pred")
        if self.joint:
            init.update(run.imputation_tables())
        return {**init, **{n: np.zeros(run.replicas, np.float32) for n in TMLE}}

    def train(self, run) -> Trained:
        prop, stages = fit_logistic_propensity(run)
        consts = self._consts(run, prop)
        if not self.joint:
            consts["y_bar"] = tf.constant(run.leak_mean())
        gamma, ratio = float(run.values["gamma"]), int(run.values["uniform_ratio"])
        hp = run.hp(corrected=float(run.corrected), direct_scale=run.direct_scale(ratio))
        groups = {"pred": PRED, **({"imp": run.imputation_group()} if self.joint else {})}
        stage = Stage(self.name, _tdr_jl_step if self.joint else _tdr_step, groups,
                      int(run.values["batch_size"]), extra=ratio)
        weights = lambda u, i: inverse_propensity(prop, u, i, gamma)
        res = run.main(stage, self._init(run), hp, consts,
                       run.criterion(self.predict, weights), rule=self._rule(run))
        params = self._targeted(run, res, groups, hp, consts, ratio)
        return Trained(params, res, stages,
                       diagnose(run, None, params if self.joint else None,
                                grid=model_grid(run, propensity_probability, prop),
                                model="logistic"))

    def _targeted(self, run, res, groups, hp, consts, ratio) -> dict:
        """The one targeted predictor step after the rule fired (module doc), eagerly."""
        batch, total = int(run.values["batch_size"]), run.num_users * run.num_items
        rows = np.stack([r.permutation(run.n_train)[:batch] for r in run.rngs]).astype(np.int32)
        pairs = np.stack([distinct_positions(r, total, ratio * batch) for r in run.rngs])
        c = {**run.consts, **consts}
        rows = tf.constant(rows)
        b = _fresh_batch(c, rows, pairs, run.num_items)
        params = dict(res.params)
        eps = targeted_epsilon(params)
        gamma = tf.constant(hp["gamma"], tf.float32)
        w = observed_weight(c, rows, gamma)
        w_all = inverse_propensity(c, b.all_users, b.all_items, gamma)
        if self.joint:
            imputed = bm.mf_prob(params, "imp", b.users, b.items)
            imputed_all = bm.mf_prob(params, "imp", b.all_users, b.all_items)
        else:
            imputed = c["y_bar"][:, None] * tf.ones_like(b.labels)
            imputed_all = c["y_bar"][:, None] * tf.ones_like(w_all)
        tf_hp = {k: tf.constant(v, tf.float32) for k, v in hp.items()}
        state = StepState(params, res.extras["opt"], groups, tf_hp, c)
        state.minimize("pred", dr_loss(b, w, imputed, imputed_all, tf_hp["corrected"],
                                       eps * (w - 1.0), eps * (w_all - 1.0),
                                       tf_hp["direct_scale"]))
        return state.params


def _fresh_batch(consts, rows, pairs, num_items):
    """The targeted step's batch: training rows ``rows`` and all-pair positions ``pairs``."""
    g = lambda name: tf.gather(consts[name], rows, batch_dims=1)
    pairs = tf.constant(pairs, tf.int32)
    return Batch(g("train_user"), g("train_item"), g("train_label"), rows,
                 pairs // num_items, pairs % num_items)


class BinaryTDR(BinaryTDRJL):
    """TDR (``TDR_.py``, ``MF_TDR``): the logistic propensity, DR with the constant imputation
    ``y_bar`` read from the 5% MCAR slice (a leak under ``binary-icde24``; under
    ``binary-clean`` the slice is cut from the test set), then the targeted step (module doc)."""

    name = "tdr"
    label = "TDR"
    description = "targeted DR, constant imputation from the MCAR slice (binary protocols)"
    reference = SOURCE + "TDR_.py"
    reference_forms = "weights misaligned with a shuffled training list, unweighted correction"
    leaks = True
    uses_mcar = True
    corrected_hyperparameters = ()    # no imputation MF: y_bar imputes
    reference_params = reference_table(
        "tdr", {"dim": 4, "lam": 1e-4, "lr": 0.05, "batch_size": 128, "gamma": 0.1,
                "uniform_ratio": 3},
        {"dim": 4, "lam": 1e-5, "lr": 0.05, "batch_size": 2048, "gamma": 0.15,
         "uniform_ratio": 3})
    joint = False

    def _rule(self, run):
        return ReferenceRule(run.replicas)
