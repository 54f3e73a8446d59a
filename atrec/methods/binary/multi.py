"""Multi-IPS and Multi-DR (multi-task IPS and DR, Zhang et al. WWW 2020), as the ICDE 2024
collection trains them (``Multi-IPS.py``, ``Multi-DR.py``; docs/protocols.md, "The binary methods").

- Multi-IPS: shared user and item embeddings (``k``), concatenated (``2k``), feed two towers
  ``MLP(2k -> k, no bias, ReLU, -> 1 with bias, sigmoid)``, the propensity ``p_hat`` and the
  prediction ``q``; loss ``sum_O w BCE_eps(q, y)``, ``w = 1 / clip(p_hat, gamma, 1)``; one Adam
  over everything (``lam``); batches of ``batch_size`` observed pairs (the script's
  ``batch_size_prop``); the rule sums the loss.
- Multi-DR: three MFs of size ``k`` (propensity, prediction, imputation);
  ``[sum_O w BCE_eps(q, y) - sum_O BCE_eps(q_hat, q) + sum_D BCE_eps(q_hat_D, q_D)] / (G B)``,
  the imputation terms reversed (the imputation model's output in the prediction's place);
  three Adams (``prop_lam``, ``lam``, ``imp_lam``), one backward, nothing detached; the rule
  sums ``sum_O w BCE_eps``.

The test set is scored by ``q`` alone. Bugs kept under ``binary-icde24`` (docs/protocols.md, "The
reference code's traps"), corrected under ``binary-clean`` and by ``form=corrected``
(``form=coded`` keeps them under either protocol):

- the propensity has NO observation loss: ``w`` is live, so the only gradient the propensity
  gets pushes ``w`` down (``p_hat -> 1``). Corrected: ``mean_D BCE(p_hat_D, o_D)`` over ``G B``
  pairs from all (Multi-IPS draws them only in this form) is added, and ``w`` is detached in
  the IPS and DR terms (the propensity is fitted to ``o`` only);
- Multi-DR's correction ``sum_O BCE_eps(q_hat, q)`` is not weighted. Corrected: weighted by
  ``w``, with the direct term ``sum_D`` scaled by ``N / (G n)``
  (:meth:`~atrec.methods.binary.base.BinaryRun.direct_scale`), so the DR loss is the textbook
  DR estimate times ``N / (G n)``, the scale of the code's IPS term (docs/protocols.md,
  "Corrected DR forms");
- the DR term reads the imputation live, in the reversed order (``BCE_eps(q_hat, q)``): it is
  the imputation model's only training signal, so the term that should train the predictor
  fits the imputation to it. Corrected: the textbook order ``BCE_eps(q, q_hat)`` with the
  imputation detached there (the DR term trains the predictor alone), and the imputation
  trained by its own loss, ``sum_O w (BCE_eps(q, y) - BCE_eps(q, q_hat))^2`` with ``q`` and
  ``w`` detached, divided by ``|D|`` as the DR term is; the imputation MF starts small
  (:meth:`~atrec.methods.binary.base.BinaryRun.imputation_tables`).

Under ``binary-clean`` the validation criterion is the self-normalised cross-entropy weighted
by the method's own ``w``.
"""

from __future__ import annotations

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.learners.epochs import Group, Stage
from atrec.methods.binary.base import COMMON, FORM, GAMMA, IMP_LR, PROP_LAM, clip_weight
from atrec.methods.binary.ips import SOURCE, reference_table
from atrec.methods.binary.joint import (
    IMP_LAM,
    UNIFORM_RATIO,
    JointMethod,
    dr_eps,
    ips_term_step,
    observed_mean,
)
from atrec.runtime import tf

SHARE_SALT = 53      # the shared embeddings' stream (binary_models.SALTS holds the MFs')
TOWERS = ("predtower", "proptower")
TOWER_SALTS = {"predtower": 59, "proptower": 61}


def tower_params(seeds, prefix: str, dim: int) -> dict:
    """One tower's layers: ``{prefix1_a: [R, 2k, k]}`` (no bias) and ``{prefix2_a: [R, k],
    prefix2_b: [R]}``, ``nn.Linear``'s default initialisation."""
    salt = TOWER_SALTS[prefix]
    first = bm.linear(seeds, prefix + "1", 2 * dim, dim, salt=salt)
    second = bm.linear(seeds, prefix + "2", dim, 1, salt=salt + 1000)
    return {prefix + "1_a": first[prefix + "1_a"], **second}


def tower(p, prefix: str, users, items):
    """``sigmoid(a2 . relu([W_u ; H_i] A1) + b2)`` of the shared embeddings of the pairs, ``[R,
    n]``.

    ``[W_u ; H_i] A1 = W_u A1_top + H_i A1_bottom``: each table is multiplied by its half of
    ``A1`` first and the pairs gather the rows of those products, as
    :func:`atrec.learners.binary_models.ncf_logit` does for the NCF propensity. Coat's tables
    hold 290 and 300 rows against a batch's 1,024 pairs, so the products and their gradients
    are about three times smaller, and the training stage of 20 seeds takes about a quarter
    less CPU (docs/performance.md); the sums are the same, in another order."""
    a1 = p[prefix + "1_a"]
    k = a1.shape[1] // 2
    by_user = tf.matmul(p["share_W"], a1[:, :k])
    by_item = tf.matmul(p["share_H"], a1[:, k:])
    h = tf.nn.relu(bm.rows(by_user, users) + bm.rows(by_item, items))
    return tf.sigmoid(tf.reduce_sum(h * p[prefix + "2_a"][:, None, :], -1)
                      + p[prefix + "2_b"][:, None])


def _observation(p, b, prop_fn, state=None):
    """The corrected form's observation loss over the batch's pairs from all (the validation
    pairs left out when ``state`` holds their mask, :func:`joint.observed_mean`)."""
    e = losses.bce(prop_fn(p, b.all_users, b.all_items), b.all_o)
    if state is None:
        return tf.reduce_mean(e, -1)
    return observed_mean(e, state, b.all_users, b.all_items)


def _multi_ips_prop(p, users, items):
    return tower(p, "proptower", users, items)


def multi_ips_loss(state, b, corrected: bool, out: dict):
    """Multi-IPS's loss of the parameters (module doc); ``out["ips"]``: ``sum_O w BCE_eps``,
    the term the rule sums."""
    hp = state.hp

    def loss(p):
        w = clip_weight(tower(p, "proptower", b.users, b.items), hp["gamma"])
        if corrected:
            w = tf.stop_gradient(w)
        q = tower(p, "predtower", b.users, b.items)
        out["ips"] = tf.reduce_sum(w * losses.bce_eps(q, b.labels), -1)
        return out["ips"] + _observation(p, b, _multi_ips_prop, state) if corrected else out["ips"]
    return loss


def multi_ips_coded(state, b):
    return ips_term_step(state, lambda out: multi_ips_loss(state, b, False, out))


def multi_ips_fixed(state, b):
    return ips_term_step(state, lambda out: multi_ips_loss(state, b, True, out))


def _multi_dr_prop(p, users, items):
    return bm.mf_prob(p, "prop", users, items)


def multi_dr_loss(state, b, corrected: bool, out: dict):
    """Multi-DR's loss of the parameters (module doc); ``out["ips"]``: ``sum_O w BCE_eps``.
    ``corrected``: the DR term in the textbook order with the propensity and the imputation
    detached (it trains the predictor alone), plus the imputation's own loss
    ``sum_O w (BCE_eps(sg q, y) - BCE_eps(sg q, q_hat))^2 / |D|`` and the observation loss."""
    hp = state.hp

    def loss(p):
        w = clip_weight(_multi_dr_prop(p, b.users, b.items), hp["gamma"])
        q = bm.mf_prob(p, "pred", b.users, b.items)
        q_hat = bm.mf_prob(p, "imp", b.users, b.items)
        q_hat_d = bm.mf_prob(p, "imp", b.all_users, b.all_items)
        q_d = bm.mf_prob(p, "pred", b.all_users, b.all_items)
        if not corrected:
            out["ips"] = tf.reduce_sum(w * losses.bce_eps(q, b.labels), -1)
            return dr_eps(q, b.labels, q_hat, w, q_d, q_hat_d, weighted=False, reversed_=True,
                          direct_scale=hp["direct_scale"])
        w = tf.stop_gradient(w)
        out["ips"] = tf.reduce_sum(w * losses.bce_eps(q, b.labels), -1)
        dr = dr_eps(q, b.labels, tf.stop_gradient(q_hat), w, q_d, tf.stop_gradient(q_hat_d),
                    weighted=True, direct_scale=hp["direct_scale"])
        fixed = tf.stop_gradient(q)
        imp = tf.reduce_sum(w * tf.square(losses.bce_eps(fixed, b.labels)
                                          - losses.bce_eps(fixed, q_hat)), -1)
        size = tf.cast(tf.shape(q_d)[-1], q.dtype)
        return dr + imp / size + _observation(p, b, _multi_dr_prop, state)
    return loss


DR_ORDER = ("prop", "pred", "imp")     # the code's order of the three optimisers' steps


def multi_dr_coded(state, b):
    return ips_term_step(state, lambda out: multi_dr_loss(state, b, False, out), DR_ORDER)


def multi_dr_fixed(state, b):
    return ips_term_step(state, lambda out: multi_dr_loss(state, b, True, out), DR_ORDER)


class BinaryMultiIPS(JointMethod):
    """Multi-IPS (``Multi-IPS.py``): shared embeddings, a propensity tower and a prediction
    tower trained by IPS alone (module doc). Under ``binary-icde24`` the propensity tower has
    no observation loss, as coded; under ``binary-clean`` (and with ``form=corrected``) it
    has one and ``w`` is detached. ``uniform_ratio`` is read by the corrected form only."""

    name = "multi-ips"
    # its predictor is a tower on shared embeddings, not the MF whose probabilities AT's third
    # model learns (atrec.methods.binary.at)
    serves_in_at = False
    label = "Multi-IPS"
    description = "multi-task IPS: shared embeddings, propensity and prediction towers"
    reference = SOURCE + "Multi-IPS.py"
    reference_forms = "the propensity tower has no observation loss"
    options = (FORM,)
    hyperparameters = COMMON + (GAMMA, UNIFORM_RATIO)
    reference_params = reference_table(
        "multi-ips", {"dim": 16, "lam": 1e-4, "lr": 0.01, "batch_size": 1024, "gamma": 0.05,
                      "uniform_ratio": 1},
        {"dim": 256, "lam": 1e-2, "lr": 0.005, "batch_size": 32764, "gamma": 0.05,
         "uniform_ratio": 1})

    def predict(self, params, users, items):
        return tower(params, "predtower", users, items)

    def _propensity(self, p, users, items):
        return _multi_ips_prop(p, users, items)

    def _init(self, run) -> dict:
        k = int(run.values["dim"])
        out = bm.normal_tables(run.seeds, "share", run.num_users, run.num_items, k,
                               salt=SHARE_SALT + run.init_salt)
        for prefix in TOWERS:
            out.update(tower_params(run.seeds, prefix, k))
        return out

    def _stage(self, run, init: dict) -> Stage:
        names = tuple(sorted(init))
        step = multi_ips_fixed if run.corrected else multi_ips_coded
        extra = int(run.values["uniform_ratio"]) if run.corrected else 0
        return Stage(self.name, step, {"all": Group(names)}, int(run.values["batch_size"]),
                     extra=extra)


class BinaryMultiDR(BinaryMultiIPS):
    """Multi-DR (``Multi-DR.py``): three MFs trained jointly by the DR loss with reversed
    imputation terms (module doc). Under ``binary-icde24`` the propensity has no observation
    loss and the correction is unweighted, as coded; under ``binary-clean`` (and
    with ``form=corrected``) both corrected (the textbook DR estimate: the correction weighted,
    the direct term scaled by ``N / (G n)``) and ``w`` detached."""

    name = "multi-dr"
    serves_in_at = True      # its predictor is the MF called pred
    label = "Multi-DR"
    description = "multi-task DR: propensity, prediction and imputation MFs trained jointly"
    reference = SOURCE + "Multi-DR.py"
    reference_forms = "no observation loss on the propensity; unweighted DR correction"
    dr_direct = True
    hyperparameters = COMMON + (GAMMA, UNIFORM_RATIO, PROP_LAM, IMP_LAM)
    corrected_hyperparameters = (IMP_LR,)   # imp_lam: the imputation's decay in both forms
    reference_params = reference_table(
        "multi-dr", {"dim": 8, "lam": 1e-4, "lr": 0.01, "batch_size": 128, "gamma": 0.05,
                     "uniform_ratio": 4, "prop_lam": 1e-4, "imp_lam": 1e-2},
        {"dim": 16, "lam": 1e-6, "lr": 0.05, "batch_size": 4096, "gamma": 0.05,
         "uniform_ratio": 4, "prop_lam": 1e-5, "imp_lam": 1e-4})

    def predict(self, params, users, items):
        return bm.mf_prob(params, "pred", users, items)

    def _propensity(self, p, users, items):
        return _multi_dr_prop(p, users, items)

    def _init(self, run) -> dict:
        return {**run.tables("prop"), **run.tables("pred"), **run.imputation_tables()}

    def _stage(self, run, init: dict) -> Stage:
        step = multi_dr_fixed if run.corrected else multi_dr_coded
        groups = {"prop": Group(("prop_W", "prop_H"), wd="prop_lam"),
                  "pred": Group(("pred_W", "pred_H")),
                  "imp": run.imputation_group(wd="imp_lam")}
        return Stage(self.name, step, groups, int(run.values["batch_size"]),
                     extra=int(run.values["uniform_ratio"]))
