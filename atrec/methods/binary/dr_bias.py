"""DR-BIAS and DR-MSE (Dai et al., KDD 2022) as the ICDE 2024 collection trains them
(``DR-BIAS.py``, ``DR-MSE.py``, classes ``MF_DR_BIAS`` and ``MF_DR_MSE``; docs/protocols.md,
"The binary methods").

A predictor MF and an imputation MF, both of size ``k`` (4, the class default the scripts do not
override), each with its own PyTorch Adam (``lr``, weight decay ``lam``). The propensity is the
fixed naive-Bayes one of :mod:`atrec.methods.binary.naive_bayes` (``P(y = 1)`` read from the 5%
MCAR slice; not clipped), each observed pair weighted by its own label's class. Per batch of
``B`` observed pairs ``O`` and ``G B`` pairs ``D`` from the epoch's distinct pairs of all
users x items (:mod:`atrec.learners.draws`):

1. predictor (imputation frozen, ``q_hat`` its probability):
   ``(1/B)[sum_O w BCE(q, y) - sum_O c BCE(q, q_hat)] + (1/(G B)) sum_D BCE(q, q_hat)``;
2. imputation (predictor frozen; ``q`` recomputed AFTER step 1, detached):
   ``sum_O (e - e_hat)^2 v`` with ``e = BCE(q, y)``, ``v = lambda w^3 (1 - 1/w)^2 + (1 - lambda)
   w^2 (1 - 1/w)`` (DR-BIAS: ``lambda = 1``; DR-MSE: ``mse_lambda``, the scripts' ``gamma``).

The reference rule sums ``sum_O w BCE(q, y)`` over the epoch (``stop`` 5).

Forms. The reference code (kept under ``binary-icde24``: ``dr-bias``, ``dr-mse``) leaves the DR
correction unweighted (``c = 1``) and reverses the imputed error's cross-entropy,
``e_hat = BCE(q_hat, q) = -[q log q_hat + (1 - q) log(1 - q_hat)]``. The corrected form (the
default under ``binary-clean``; ``form=corrected`` under either protocol) weights the
correction (``c = w``) and takes ``e_hat = BCE(q, q_hat)``, the predictor's loss were ``q_hat`` the label, and scales the direct term by ``N / n``
(:meth:`~atrec.methods.binary.base.BinaryRun.direct_scale`, ``N = num_users x num_items``,
``n`` the training pairs), as every corrected DR form does: the loss is the textbook DR
estimate ``(1/N)[sum_all e_hat + sum_O w (e - e_hat)]`` times ``N / n``, the scale of the
code's IPS term (docs/protocols.md, "Corrected DR forms"). Both forms keep the code's clamped
cross-entropy and its recomputed ``q``. ``form=coded`` runs the code's form under either
protocol. Under ``binary-clean`` the validation criterion is the self-normalised naive-Bayes
weighted cross-entropy (:func:`~atrec.methods.binary.naive_bayes.label_weighted_criterion`).
"""

from __future__ import annotations

from typing import ClassVar

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.learners.epochs import Stage
from atrec.methods.base import Hyperparameter
from atrec.methods.binary import naive_bayes as nb
from atrec.methods.binary.base import (
    COMMON,
    FORM,
    IMPUTATION_OWN,
    BinaryMethod,
    Trained,
    predictor_tables,
)
from atrec.methods.binary.ips import PRED, SOURCE, reference_table
from atrec.methods.binary.nuisance import diagnose
from atrec.runtime import tf

UNIFORM_RATIO = Hyperparameter("uniform_ratio", "int", 1, 8, maximum=64,
                               help="G: pairs drawn from all users x items per observed pair")
MSE_LAMBDA = Hyperparameter("mse_lambda", "float", 0.0, 1.0, maximum=1.0,
                            help="DR-MSE's mix of the bias (1) and MRDR variance (0) losses")


def imputation_weight(w, lam):
    """``lam w^3 (1 - 1/w)^2 + (1 - lam) w^2 (1 - 1/w)`` (DR-MSE; DR-BIAS is ``lam = 1``)."""
    return lam * w ** 3 * (1.0 - 1.0 / w) ** 2 + (1.0 - lam) * w ** 2 * (1.0 - 1.0 / w)


def predictor_loss(q, y, q_hat, w, q_d, q_hat_d, corrected: bool, direct_scale=1.0):
    """The predictor's DR loss ``[R]`` and the stopping term ``sum_O w BCE(q, y)`` (module doc);
    ``q_hat`` and ``q_hat_d`` are the frozen imputation's probabilities; ``direct_scale``
    multiplies the direct term (``N / n`` in the corrected form, 1 in the code's)."""
    xent = tf.reduce_sum(w * losses.bce(q, y), axis=-1)
    c = w if corrected else tf.ones_like(w)
    correction = tf.reduce_sum(c * losses.bce(q, q_hat), axis=-1)
    batch = tf.cast(tf.shape(q)[-1], q.dtype)
    direct = tf.reduce_mean(losses.bce(q_d, q_hat_d), axis=-1)
    return (xent - correction) / batch + direct_scale * direct, xent


def imputed_error(q, q_hat, corrected: bool):
    """``e_hat``: ``BCE(q, q_hat)`` corrected, ``BCE(q_hat, q)`` (reversed) as the code has it."""
    return losses.bce(q, q_hat) if corrected else losses.bce(q_hat, q)


def imputation_loss(q, y, q_hat, v, corrected: bool):
    """``sum_O v (e - e_hat)^2`` with ``q`` the (detached) predictor's probability."""
    e = losses.bce(q, y)
    return tf.reduce_sum(v * tf.square(e - imputed_error(q, q_hat, corrected)), axis=-1)


def _step(state, b, corrected: bool):
    c = state.consts
    p1, p0 = nb.propensities(c)
    w = nb.weights(p1, p0, b.labels)
    prob = lambda p, prefix, u, i: bm.mf_prob(p, prefix, u, i)
    q_hat = tf.stop_gradient(prob(state.params, "imp", b.users, b.items))
    q_hat_d = tf.stop_gradient(prob(state.params, "imp", b.all_users, b.all_items))
    out = {}

    def pred_loss(p):
        loss, out["xent"] = predictor_loss(prob(p, "pred", b.users, b.items), b.labels, q_hat, w,
                                           prob(p, "pred", b.all_users, b.all_items), q_hat_d,
                                           corrected, state.hp["direct_scale"])
        return loss

    state.minimize("pred", pred_loss)
    q = tf.stop_gradient(prob(state.params, "pred", b.users, b.items))
    v = imputation_weight(w, state.hp["mse_lambda"])
    state.minimize("imp", lambda p: imputation_loss(q, b.labels, prob(p, "imp", b.users, b.items),
                                                    v, corrected))
    return out["xent"]


def _reference_step(state, b):
    return _step(state, b, corrected=False)


def _corrected_step(state, b):
    return _step(state, b, corrected=True)


DR_BIAS_COAT = {"dim": 4, "lam": 1e-3, "lr": 0.05, "batch_size": 128, "uniform_ratio": 1}
DR_BIAS_YAHOO = {"dim": 4, "lam": 1e-4, "lr": 0.05, "batch_size": 2048, "uniform_ratio": 1}
DR_MSE_COAT = {**DR_BIAS_COAT, "mse_lambda": 0.5}
DR_MSE_YAHOO = {**DR_BIAS_YAHOO, "mse_lambda": 0.5}


class DRBias(BinaryMethod):
    """DR-BIAS (``DR-BIAS.py``): module doc. The reference form (unweighted correction,
    reversed ``e_hat``) under ``binary-icde24``; the corrected form under ``binary-clean``
    (``form`` chooses either). Its predictor serves as A1 and A2 of AT."""

    name = "dr-bias"
    label = "DR-BIAS"
    description = "DR-BIAS, naive-Bayes propensity from the MCAR slice (binary protocols)"
    reference = SOURCE + "DR-BIAS.py"
    reference_forms = "unweighted DR correction, reversed e_hat cross-entropy"
    options = (FORM,)
    leaks = True
    uses_mcar = True
    serves_in_at = True
    hyperparameters = COMMON + (UNIFORM_RATIO,)
    corrected_hyperparameters = IMPUTATION_OWN
    mse_lambda: ClassVar[float | None] = 1.0   # None: a hyperparameter (DR-MSE)
    reference_params = reference_table("dr-bias", DR_BIAS_COAT, DR_BIAS_YAHOO)

    def _predictor(self, run):
        step = _corrected_step if run.corrected else _reference_step
        stage = Stage(self.name, step, {"pred": PRED, "imp": run.imputation_group()},
                      int(run.values["batch_size"]), extra=int(run.values["uniform_ratio"]))
        extra = {} if self.mse_lambda is None else {"mse_lambda": self.mse_lambda}
        extra["direct_scale"] = run.direct_scale()   # the observed sums are over B
        predict = lambda p, u, i: bm.mf_prob(p, "pred", u, i)
        init = {**run.tables("pred"), **run.imputation_tables()}
        return run.main(stage, init, run.hp(**extra), nb.counts(run), nb.label_weighted_criterion(run, predict))

    def train(self, run) -> Trained:
        res = self._predictor(run)
        return Trained(predictor_tables(res.params), res, {},
                       diagnose(run, None, res.params, by_label=nb.fitted(run)))


class DRMSE(DRBias):
    """DR-MSE (``DR-MSE.py``): DR-BIAS with the imputation weight mixing the bias and MRDR
    losses by ``mse_lambda`` (module doc); forms as DR-BIAS."""

    name = "dr-mse"
    label = "DR-MSE"
    description = "DR-MSE, naive-Bayes propensity from the MCAR slice (binary protocols)"
    reference = SOURCE + "DR-MSE.py"
    hyperparameters = COMMON + (UNIFORM_RATIO, MSE_LAMBDA)
    mse_lambda = None
    reference_params = reference_table("dr-mse", DR_MSE_COAT, DR_MSE_YAHOO)
