"""DT-IPS and DT-DR, the ICDE 2024 paper's methods (``DT-IPS.py``, ``DT-DR.py`` with
``matrix_factorization_DT.py`` of the collection; docs/protocols.md, "The binary methods").

Two MFs share the propensity: the prediction MF ``(U1, V1)`` of size ``k1`` (``dim1``) gives
``q = sigmoid<U1_u, V1_i>``, and with a second MF ``(U2, V2)`` of size ``k`` (``dim``) the
propensity ``p_hat = sigmoid(<U1_u, V1_i> + <U2_u, V2_i>)``, the inner product of the
concatenated embeddings. Each batch holds ``B`` observed pairs ``O`` and ``G B`` pairs ``D``
drawn from all ``users x items`` (``G`` = ``uniform_ratio``). The loss, one backward, one
PyTorch Adam per MF (``prop_lam``, ``lam``; DT-DR ``imp_lam``), and the stopping rule sums it:

- DT-IPS: ``mean_O w BCE_eps(q, y) + alpha mean_D BCE(p_hat_D, o_D) + beta (R_D + R_O)``;
- DT-DR: ``dr + theta imp + alpha mean_D BCE(p_hat_D, o_D) + beta (R_D + R_O)``, with an
  imputation MF ``(U3, V3)`` of size ``k1``, ``dr = [sum_O w BCE_eps(q, y) - sum_O w
  BCE_eps(q, q_hat) + sum_D BCE_eps(q_D, q_hat_D)] / (G B)`` (the correction weighted) and
  ``imp = mean_O w (BCE_eps(q, y) - BCE_eps(q, q_hat))^2``;

``w = 1 / clip(p_hat_O, gamma, 1)`` is NOT detached and nothing else is: every term trains
every model it reads. ``R_S = mean((U1_S^T U2_S)^2) + mean((V1_S^T V2_S)^2) + mean([U1;
U2]_S^2) + mean([V1; V2]_S^2)`` over the batch's embedding rows. ``BCE`` is PyTorch's clamped
form, ``BCE_eps`` the hand-written one, each where the code uses it. The test set is scored by
``q`` alone.

DT-IPS is kept as the code computes it under both protocols. DT-DR has two forms (``form``):
``coded`` (``binary-icde24``'s default) as above, its direct term unscaled; ``corrected``
(``binary-clean``'s default) trains each model by its own loss: the DR term reads ``w`` and the
imputation detached, so it trains the predictor alone (live, it pushes ``q_hat`` away from
``q`` and moves the propensity); the imputation loss reads ``q`` and ``w`` detached; the
propensity keeps its observation loss and the penalty; the direct term is scaled by ``N / (G
n)`` as the other corrected DR forms scale theirs (docs/protocols.md, "Corrected DR forms"),
and the imputation MF starts small
(:meth:`~atrec.methods.binary.base.BinaryRun.imputation_tables`). Under ``binary-clean`` the
validation criterion is the self-normalised cross-entropy weighted by the method's own
propensity ``w``.
"""

from __future__ import annotations

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.learners.epochs import Group, Stage
from atrec.methods.binary import joint
from atrec.methods.binary.base import COMMON, FORM, GAMMA, IMP_LR, PROP_LAM, clip_weight
from atrec.methods.binary.ips import SOURCE, reference_table
from atrec.methods.hyperparameters import Hyperparameter
from atrec.runtime import tf

DIM1 = Hyperparameter("dim1", "int", 2, 64, step=2, maximum=1024,
                      help="k1: the prediction MF's size (the propensity adds dim)")
BETA = Hyperparameter("beta", "float", 1e-6, 1.0, log=True, maximum=100.0,
                      help="weight of DT's orthogonality and norm penalty")
PRED = ("pred_W", "pred_H")
PROP = ("prop_W", "prop_H")
IMP = ("imp_W", "imp_H")


def _embeddings(p, users, items):
    """``(U1, V1, U2, V2)`` rows of the pairs, each ``[R, n, k]``."""
    return (bm.rows(p["pred_W"], users), bm.rows(p["pred_H"], items),
            bm.rows(p["prop_W"], users), bm.rows(p["prop_H"], items))


def penalty(u1, v1, u2, v2):
    """``R_S``: the squared cross products of the two MFs' embeddings of the pairs plus the
    mean square of the concatenated embeddings, ``[R]``."""
    def cross(a, b):
        return tf.reduce_mean(tf.square(tf.einsum("rni,rnj->rij", a, b)), axis=[1, 2])

    def square(a, b):
        return tf.reduce_mean(tf.square(tf.concat([a, b], axis=-1)), axis=[1, 2])

    return cross(u1, u2) + cross(v1, v2) + square(u1, u2) + square(v1, v2)


def dt_terms(p, b, gamma, state=None):
    """What both DT losses read: ``q_O``, ``w_O``, ``q_D``, the observation loss and the
    penalty ``R_D + R_O``."""
    u1, v1, u2, v2 = _embeddings(p, b.users, b.items)
    s1 = tf.reduce_sum(u1 * v1, -1)
    q = tf.sigmoid(s1)
    w = clip_weight(tf.sigmoid(s1 + tf.reduce_sum(u2 * v2, -1)), gamma)
    du1, dv1, du2, dv2 = _embeddings(p, b.all_users, b.all_items)
    d1 = tf.reduce_sum(du1 * dv1, -1)
    prop_d = tf.sigmoid(d1 + tf.reduce_sum(du2 * dv2, -1))
    e = losses.bce(prop_d, b.all_o)
    obs = (tf.reduce_mean(e, -1) if state is None or "obs_keep" not in state.consts
           else joint.observed_mean(e, state, b.all_users, b.all_items))
    reg = penalty(du1, dv1, du2, dv2) + penalty(u1, v1, u2, v2)
    return q, w, tf.sigmoid(d1), obs, reg


def ips_loss(state, b):
    """DT-IPS's total loss as a function of the parameters (module doc)."""
    hp = state.hp

    def loss(p):
        q, w, _, obs, reg = dt_terms(p, b, hp["gamma"], state)
        e = tf.reduce_mean(w * losses.bce_eps(q, b.labels), -1)
        return e + hp["alpha"] * obs + hp["beta"] * reg
    return loss


def dr_loss(state, b, corrected: bool = False):
    """DT-DR's total loss as a function of the parameters (module doc). ``corrected``: the DR
    term with ``w`` and the imputation detached (it trains the predictor alone) and its direct
    term scaled by ``hp["direct_scale"]``; the imputation loss with ``q`` and ``w`` detached
    (it trains the imputation alone)."""
    hp = state.hp
    sg = tf.stop_gradient if corrected else (lambda x: x)

    def loss(p):
        q, w, q_d, obs, reg = dt_terms(p, b, hp["gamma"], state)
        q_hat = bm.mf_prob(p, "imp", b.users, b.items)
        q_hat_d = bm.mf_prob(p, "imp", b.all_users, b.all_items)
        if corrected:
            dr = joint.dr_eps(q, b.labels, sg(q_hat), sg(w), q_d, sg(q_hat_d), weighted=True,
                              direct_scale=hp["direct_scale"])
        else:
            dr = joint.dr_eps(q, b.labels, q_hat, w, q_d, q_hat_d, weighted=True)
        fixed = sg(q)
        e, e_hat = losses.bce_eps(fixed, b.labels), losses.bce_eps(fixed, q_hat)
        imp = tf.reduce_mean(sg(w) * tf.square(e - e_hat), -1)
        return dr + hp["theta"] * imp + hp["alpha"] * obs + hp["beta"] * reg
    return loss


def _ips_step(state, b):
    return joint.joint_step(state, ips_loss(state, b))


def _dr_step(state, b):
    return joint.joint_step(state, dr_loss(state, b))


def _dr_step_corrected(state, b):
    return joint.joint_step(state, dr_loss(state, b, corrected=True))


def propensity(p, users, items):
    """DT's propensity ``sigmoid(<U1, V1> + <U2, V2>)`` at the pairs."""
    u1, v1, u2, v2 = _embeddings(p, users, items)
    return tf.sigmoid(tf.reduce_sum(u1 * v1, -1) + tf.reduce_sum(u2 * v2, -1))


class BinaryDTIPS(joint.JointMethod):
    """DT-IPS (``DT-IPS.py``): the prediction MF and a second MF whose sum is the propensity,
    trained jointly by IPS, the observation loss and the disentangling penalty (module doc).
    Kept as the code computes it (nothing to correct)."""

    name = "dt-ips"
    label = "DT-IPS"
    description = "DT-IPS: propensity from the predictor's and a second MF's embeddings"
    reference = SOURCE + "DT-IPS.py"
    hyperparameters = COMMON + (DIM1, GAMMA, joint.UNIFORM_RATIO, joint.ALPHA, BETA,
                                    PROP_LAM)
    reference_params = reference_table(
        "dt-ips", {"dim": 8, "dim1": 8, "lam": 1e-4, "lr": 0.01, "batch_size": 128,
                   "gamma": 0.05, "uniform_ratio": 6, "alpha": 0.5, "beta": 1e-2,
                   "prop_lam": 1e-2},
        {"dim": 16, "dim1": 16, "lam": 1e-5, "lr": 0.01, "batch_size": 4096, "gamma": 0.05,
         "uniform_ratio": 4, "alpha": 0.5, "beta": 1e-3, "prop_lam": 1e-4})
    step = staticmethod(_ips_step)

    def _init(self, run) -> dict:
        k, k1 = int(run.values["dim"]), int(run.values["dim1"])
        return {**run.tables("pred", k1), **run.tables("prop", k)}

    def _groups(self, run) -> dict:
        return {"prop": Group(PROP, wd="prop_lam"), "pred": Group(PRED)}

    def _stage(self, run, init: dict) -> Stage:
        return Stage(self.name, type(self).step, self._groups(run), int(run.values["batch_size"]),
                     extra=int(run.values["uniform_ratio"]))

    def _propensity(self, params, users, items):
        return propensity(params, users, items)


class BinaryDTDR(BinaryDTIPS):
    """DT-DR (``DT-DR.py``): DT-IPS's propensity with an imputation MF of size ``k1`` and the
    DR loss with a WEIGHTED correction plus ``theta`` times the imputation loss, nothing
    detached (module doc): its ``coded`` form (``binary-icde24``'s default). The ``corrected``
    form (``binary-clean``'s) detaches the propensity and the imputation in the DR term and
    ``q`` and ``w`` in the imputation loss, so that the DR term trains the predictor alone and
    the imputation its own loss, scales the direct term by ``N / (G n)`` as the other corrected
    DR forms do, and starts the imputation small."""

    name = "dt-dr"
    label = "DT-DR"
    description = "DT-DR: DT's propensity, a jointly trained imputation MF, weighted DR"
    reference = SOURCE + "DT-DR.py"
    hyperparameters = BinaryDTIPS.hyperparameters + (joint.THETA, joint.IMP_LAM)
    corrected_hyperparameters = (IMP_LR,)   # imp_lam: the imputation's decay in both forms
    reference_params = reference_table(
        "dt-dr", {"dim": 8, "dim1": 8, "lam": 1e-4, "lr": 0.01, "batch_size": 128,
                  "gamma": 0.05, "uniform_ratio": 4, "alpha": 0.5, "beta": 0.1, "theta": 1.0,
                  "prop_lam": 1e-3, "imp_lam": 1e-4},
        {"dim": 16, "dim1": 16, "lam": 1e-5, "lr": 0.01, "batch_size": 4096, "gamma": 0.05,
         "uniform_ratio": 4, "alpha": 0.5, "beta": 1e-5, "theta": 1.0, "prop_lam": 1e-3,
         "imp_lam": 1e-1})
    step = staticmethod(_dr_step)
    options = (FORM,)
    reference_forms = ("the DR term trains the propensity and the imputation; corrected: both "
                       "detached there, the imputation trained by its own loss alone")
    dr_direct = True

    def _init(self, run) -> dict:
        return {**super()._init(run), **run.imputation_tables(int(run.values["dim1"]))}

    def _stage(self, run, init: dict) -> Stage:
        step = _dr_step_corrected if run.corrected else _dr_step
        return Stage(self.name, step, self._groups(run), int(run.values["batch_size"]),
                     extra=int(run.values["uniform_ratio"]))

    def _groups(self, run) -> dict:
        return {**super()._groups(run), "imp": run.imputation_group(IMP, wd="imp_lam")}
