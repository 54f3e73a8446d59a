"""Stable-DR (Li et al., ICLR 2023) as the ICDE 2024 collection trains it (``Stable-DR_.py`` with
``SDR.py``, class ``MF_Stable_DR``; docs/protocols.md, "The binary methods").

A predictor MF and an imputation MF of size ``k`` returning logits (the sigmoid applied by the
caller, PyTorch's clamped cross-entropy on the probabilities), and the naive-Bayes propensity of
:mod:`atrec.methods.binary.naive_bayes` with a learned scalar smoothing ``mu`` (starts at 0;
``P(y = 1)`` read from the 5% MCAR slice; not clipped; ``w = 1 / p_hat``). Per batch of ``B``
observed pairs ``O`` and ``G B`` pairs ``D`` (``G`` = ``uniform_ratio``) from the epoch's distinct
pairs of all users x items, with ``l`` the predictor's logit and ``s`` the sigmoid:

1. imputation (own Adam, ``lr``, ``lam``): ``sum_O w (e - e_hat)^2`` with ``e = BCE(s(sg l), y)``
   and ``e_hat`` the imputed error;
2. ``mu`` (Adam, ``mu_lr``, weight decay ``lam``), both models frozen:
   ``sum_D BCE(p_hat, o) + eta (sum_D (1 - o w)(e_hat_D - mean_D e_hat_D))^2``;
3. predictor (own Adam, ``lr``, ``lam``), ``w`` recomputed at the new ``mu``: the self-normalised
   IPS ``sum_O w BCE(q, y) / sum_O w``. The imputation model never enters this loss: it shapes
   ``mu`` only. This is the paper's estimator (the constraint of step 2 is what makes the
   self-normalised IPS "stable DR"), so both forms keep it.

The reference rule sums step 3's losses over the epoch (``stop``: Coat 5, Yahoo 1).

Forms. The reference code (kept under ``binary-icde24``: ``stable-dr``) reverses the imputed
error's cross-entropy, ``e_hat = BCE(s(q_hat), s(l))``, and takes the observed pairs' weights
in row-major order of the observed cells but indexes them by position in the training list:
aligned where that list is in row-major order (Coat), and on a shuffled list (Yahoo's, which
``binary-icde24`` shuffles as the script does) each observed pair gets the weight class of a
random other pair. The corrected form (the default under ``binary-clean``;
``form=corrected`` under either protocol) weights each pair by its own label and takes
``e_hat = BCE(s(l), s(q_hat))``; ``form=coded`` runs the code's form under either
protocol. The ``D`` side is indexed by cell in both. Under
``binary-clean`` the validation criterion is the self-normalised weighted cross-entropy at the
learned ``mu`` (:func:`~atrec.methods.binary.naive_bayes.label_weighted_criterion`).
"""

from __future__ import annotations

import numpy as np

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.learners.epochs import Group, ReferenceRule, Stage
from atrec.methods.base import Hyperparameter
from atrec.methods.binary import naive_bayes as nb
from atrec.methods.binary.base import COMMON, FORM, BinaryMethod, Trained, predictor_tables
from atrec.methods.binary.dr_bias import IMPUTATION_OWN, UNIFORM_RATIO
from atrec.methods.binary.ips import PRED, SOURCE, reference_table
from atrec.methods.binary.nuisance import diagnose
from atrec.runtime import tf

MU = Group(("mu",), lr="mu_lr", wd="lam")
ETA = Hyperparameter("eta", "float", 1.0, 1e4, log=True, maximum=1e6,
                     help="weight of Stable-DR's stabilising constraint on mu")
MU_LR = Hyperparameter("mu_lr", "float", 1e-3, 1e3, log=True, maximum=1e5, positive=True,
                       help="Adam learning rate of the propensity's smoothing mu (lr1)")
STOP = Hyperparameter("stop", "int", 1, 10, maximum=100, default=5,
                      help="the reference rule's count of non-improving epochs (binary-icde24; "
                           "unread under a protocol that stops on validation, so not searched "
                           "there)")


def weight_labels(run) -> np.ndarray:
    """``[R, n]``: the label whose weight class each training row gets. Corrected: its own.
    Reference: the label of the observed cell whose rank in row-major order is the row's
    position in the training list (module doc)."""
    t = run.problem.train
    labels = np.asarray(t["rating"], np.float32)
    if run.corrected:
        return labels
    out = np.empty_like(labels)
    for k in range(run.replicas):
        cells = np.asarray(t["user"][k], np.int64) * run.num_items + t["item"][k]
        out[k] = labels[k][np.argsort(cells, kind="stable")]
    return out


def cell_states(run) -> np.ndarray:
    """``[R, nu * ni]`` uint8: 0 unobserved, 1 observed negative, 2 observed positive (a byte
    per pair, as the observed table: random gathers in a quarter of float32's bytes)."""
    out = np.zeros((run.replicas, run.num_users * run.num_items), np.uint8)
    t = run.problem.train
    for k in range(run.replicas):
        cells = np.asarray(t["user"][k], np.int64) * run.num_items + t["item"][k]
        out[k, cells] = 1 + np.asarray(t["rating"][k], np.uint8)
    return out


def imputed_error(s, s_hat, corrected: bool):
    """``e_hat``: ``BCE(s, s_hat)`` corrected, ``BCE(s_hat, s)`` (reversed) as the code has it."""
    return losses.bce(s, s_hat) if corrected else losses.bce(s_hat, s)


def imputation_loss(s, y, s_hat, w, corrected: bool):
    """``sum_O w (e - e_hat)^2``, ``s`` the predictor's (detached) probability."""
    e = losses.bce(s, y)
    return tf.reduce_sum(w * tf.square(e - imputed_error(s, s_hat, corrected)), axis=-1)


def mu_loss(p_d, o_d, e_hat_d, eta):
    """``sum_D BCE(p_hat, o) + eta (sum_D (1 - o / p_hat)(e_hat - mean e_hat))^2``, ``[R]``
    (``eta`` scalar or ``[R]``)."""
    prop = tf.reduce_sum(losses.bce(p_d, o_d), axis=-1)
    centred = e_hat_d - tf.reduce_mean(e_hat_d, axis=-1, keepdims=True)
    balance = tf.reduce_sum((1.0 - o_d / p_d) * centred, axis=-1)
    return prop + eta * tf.square(balance)


def _step(state, b, corrected: bool):
    c = state.consts
    prob = lambda p, prefix, u, i: tf.sigmoid(bm.mf_logit(p, prefix, u, i))
    weight_label = tf.gather(c["weight_label"], b.rows, batch_dims=1)

    def observed_weights(mu):
        return nb.weights(*nb.propensities(c, mu), weight_label)

    w = observed_weights(state.params["mu"])
    s = tf.stop_gradient(prob(state.params, "pred", b.users, b.items))
    state.minimize("imp", lambda p: imputation_loss(
        s, b.labels, prob(p, "imp", b.users, b.items), w, corrected))
    num_items = tf.shape(c["cell_state"])[-1] // tf.shape(state.params["pred_W"])[1]
    cell = tf.cast(tf.gather(c["cell_state"], b.all_users * num_items + b.all_items,
                             batch_dims=1), tf.float32)
    o_d = tf.cast(cell > 0.5, tf.float32)
    e_hat_d = tf.stop_gradient(imputed_error(prob(state.params, "pred", b.all_users, b.all_items),
                                             prob(state.params, "imp", b.all_users, b.all_items),
                                             corrected))

    def constraint(p):
        p1, p0 = nb.propensities(c, p["mu"])
        p_d = tf.where(cell > 1.5, p1[:, None], p0[:, None])
        return mu_loss(p_d, o_d, e_hat_d, state.hp["eta"])

    state.minimize("mu", constraint)
    w = observed_weights(state.params["mu"])
    return state.minimize("pred", lambda p: losses.self_normalised(
        losses.bce(prob(p, "pred", b.users, b.items), b.labels), w))


def _reference_step(state, b):
    return _step(state, b, corrected=False)


def _corrected_step(state, b):
    return _step(state, b, corrected=True)


STABLE_DR_COAT = {"dim": 4, "lam": 5e-5, "lr": 0.01, "batch_size": 128, "uniform_ratio": 3,
                  "eta": 100.0, "mu_lr": 0.01, "stop": 5}
STABLE_DR_YAHOO = {"dim": 8, "lam": 5e-6, "lr": 0.05, "batch_size": 8192, "uniform_ratio": 5,
                   "eta": 1000.0, "mu_lr": 150.0, "stop": 1}


class StableDR(BinaryMethod):
    """Stable-DR (``Stable-DR_.py``, ``SDR.py``): module doc. The reference form (reversed
    ``e_hat``, weights misaligned on a shuffled training list) under ``binary-icde24``; the
    corrected form under ``binary-clean`` (``form`` chooses either). Its predictor serves as
    A1 and A2 of AT."""

    name = "stable-dr"
    label = "Stable-DR"
    description = "Stable-DR, learned naive-Bayes propensity from the MCAR slice (binary)"
    reference = SOURCE + "Stable-DR_.py"
    reference_forms = "reversed e_hat cross-entropy, weights misaligned on a shuffled list"
    options = (FORM,)
    leaks = True
    uses_mcar = True
    serves_in_at = True
    hyperparameters = COMMON + (UNIFORM_RATIO, ETA, MU_LR, STOP)
    rule_hyperparameters = (STOP.name,)
    corrected_hyperparameters = IMPUTATION_OWN
    reference_params = reference_table("stable-dr", STABLE_DR_COAT, STABLE_DR_YAHOO)

    def _predictor(self, run):
        init = {**run.tables("pred"), **run.imputation_tables(),
                "mu": np.zeros(run.replicas, np.float32)}
        step = _corrected_step if run.corrected else _reference_step
        stage = Stage(self.name, step, {"pred": PRED, "imp": run.imputation_group(), "mu": MU},
                      int(run.values["batch_size"]), extra=int(run.values["uniform_ratio"]))
        consts = {**nb.counts(run), "weight_label": tf.constant(weight_labels(run)),
                  "cell_state": tf.constant(cell_states(run))}
        predict = lambda p, u, i: bm.mf_prob(p, "pred", u, i)
        return run.main(stage, init, run.hp(), consts,
                        nb.label_weighted_criterion(run, predict, lambda p: p["mu"]),
                        rule=ReferenceRule(run.replicas, stop=int(run.values["stop"])))

    def train(self, run) -> Trained:
        res = self._predictor(run)
        return Trained(predictor_tables(res.params), res, {},
                       diagnose(run, None, res.params, by_label=nb.fitted(run, res.params["mu"])))
