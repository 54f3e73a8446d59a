"""ESCM2-IPS, ESCM2-DR (Wang et al. SIGIR 2022) and ESMM, as the ICDE 2024 collection trains
them (``ESCM2-IPS.py``, ``ESCM2-DR.py``, ``ESMM.py``; docs/protocols.md, "The binary methods").

Each trains a propensity model and the predictor together, one backward per batch, on a
batch of ``B`` observed pairs ``O`` and ``G B`` pairs ``D`` from all ``users x items`` (ESMM:
batches of ``prop_batch`` pairs from all, no observed batch). With ``c = clip(p_hat, gamma,
1)`` and ``w = 1 / c`` (NOT detached: the IPS terms train the propensity too):

- the observation ("CTR") loss ``prop = mean_D BCE(c_D, o_D)`` and the "CTCVR" loss
  ``ctcvr = mean_D BCE(c_D q_D, o_D y_D)`` (``y`` is 0 at unobserved pairs), PyTorch's
  clamped form;
- ESCM2-IPS (NCF propensity): ``alpha prop + beta ctcvr + theta sum_O w BCE_eps(q, y)``, the
  rule summing ``sum_O w BCE_eps``;
- ESCM2-DR (three MFs): ``alpha prop + beta ctcvr + theta imp + dr``, ``dr = [sum_O w
  BCE_eps(q, y) - sum_O BCE_eps(q, q_hat) + sum_D BCE_eps(q_D, q_hat_D)] / (G B)``, ``imp =
  sum_O w (BCE_eps(sg q, y) - BCE_eps(sg q, q_hat))^2``; three Adams (``lam``, ``imp_lam``,
  ``prop_lam``); the rule sums ``sum_O w BCE_eps``;
- ESMM (two MFs, all pairs): ``alpha prop + ctcvr``, two Adams (``lam``, ``prop_lam``); the
  rule sums the total loss.

The test set is scored by ``q`` alone. Bugs kept under ``binary-icde24`` (docs/protocols.md, "The
reference code's traps"), corrected under ``binary-clean`` and by ``form=corrected``
(``form=coded`` keeps them under either protocol):

- ESCM2-IPS builds TWO Adams over ALL parameters (both with weight decay ``lam``) that both
  step after one backward: every parameter gets two Adam updates per batch, the second's
  weight decay reading the parameters the first has moved. Corrected: one Adam step;
- ESCM2-DR's correction ``sum_O BCE_eps(q, q_hat)`` is not weighted. Corrected: weighted by
  ``w``, with the direct term ``sum_D`` scaled by ``N / (G n)``
  (:meth:`~atrec.methods.binary.base.BinaryRun.direct_scale`), so ``dr`` is the textbook DR
  estimate times ``N / (G n)``, the scale of the code's IPS term (docs/protocols.md,
  "Corrected DR forms");
- ESCM2-DR's DR term reads the propensity and the imputation live, so it trains them too (it
  pushes ``q_hat`` away from ``q``), and its imputation loss trains the propensity. Corrected:
  both detached there (the DR term trains the predictor alone, the imputation loss the
  imputation alone), and the imputation MF starts small
  (:meth:`~atrec.methods.binary.base.BinaryRun.imputation_tables`).

ESMM has none to correct. Under ``binary-clean`` the validation criterion is the
self-normalised cross-entropy weighted by the method's own ``w`` (ESMM: the plain mean
cross-entropy, it has no IPS estimate).
"""

from __future__ import annotations

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.learners.epochs import Group, Stage
from atrec.methods.binary.at import AT_RATIO
from atrec.methods.binary.base import (
    BINARY_DIM,
    BINARY_LAM,
    COMMON,
    FORM,
    GAMMA,
    IMP_LR,
    LR,
    PROP_BATCH,
    PROP_LAM,
    clip_weight,
)
from atrec.methods.binary.ips import SOURCE, reference_table
from atrec.methods.binary.joint import (
    ALPHA,
    IMP_LAM,
    THETA,
    UNIFORM_RATIO,
    JointMethod,
    dr_eps,
    ips_term_step,
    joint_step,
    labels_at,
    observed_mean,
)
from atrec.methods.binary.propensity import PROP_NAMES
from atrec.methods.hyperparameters import Hyperparameter
from atrec.runtime import tf

BETA = Hyperparameter("beta", "float", 0.01, 10.0, log=True, maximum=100.0,
                      help="weight of the CTCVR loss")
PRED = ("pred_W", "pred_H")
MF_PROP = ("prop_W", "prop_H")
IMP = ("imp_W", "imp_H")


def ctr_ctcvr(c_d, q_d, o_d, y_d, mean=None):
    """``(mean_D BCE(c, o), mean_D BCE(c q, o y))``, ``[R]`` each (clamped form); ``mean``:
    the average over D (default the plain mean; the corrected form's leaves the validation
    pairs out, :func:`~atrec.methods.binary.joint.observed_mean`)."""
    mean = mean or (lambda x: tf.reduce_mean(x, -1))
    return mean(losses.bce(c_d, o_d)), mean(losses.bce(c_d * q_d, o_d * y_d))


def _all_terms(state, p, b, prop_fn):
    """``c_D``, ``q_D`` and the two all-pair losses of a batch."""
    c_d = tf.clip_by_value(prop_fn(p, b.all_users, b.all_items), state.hp["gamma"], 1.0)
    q_d = bm.mf_prob(p, "pred", b.all_users, b.all_items)
    y_d = labels_at(state.consts["labels_all"], b.all_users, b.all_items,
                    tf.shape(p["pred_H"])[1], q_d.dtype)
    return (q_d,) + ctr_ctcvr(c_d, q_d, b.all_o, y_d, _mean(state, b.all_users, b.all_items))


def _mean(state, users, items):
    """The mean over the pairs of the observation and CTCVR losses (:func:`ctr_ctcvr`)."""
    if "obs_keep" not in state.consts:
        return None
    return lambda x: observed_mean(x, state, users, items)


def _ncf(p, users, items):
    return bm.ncf_prob(p, users, items)


def _mf_prop(p, users, items):
    return bm.mf_prob(p, "prop", users, items)


def escm2_ips_loss(state, b, out: dict):
    """ESCM2-IPS's total loss of the parameters; ``out["ips"]`` receives ``sum_O w BCE_eps``
    (the term the rule sums)."""
    hp = state.hp

    def loss(p):
        w = clip_weight(_ncf(p, b.users, b.items), hp["gamma"])
        out["ips"] = tf.reduce_sum(
            w * losses.bce_eps(bm.mf_prob(p, "pred", b.users, b.items), b.labels), -1)
        _, prop, ctcvr = _all_terms(state, p, b, _ncf)
        return hp["alpha"] * prop + hp["beta"] * ctcvr + hp["theta"] * out["ips"]
    return loss


def escm2_ips_twice(state, b):
    """ESCM2-IPS as coded: one backward, two Adam steps of all parameters."""
    return ips_term_step(state, lambda out: escm2_ips_loss(state, b, out), ("pred", "prop"))


def escm2_ips_once(state, b):
    """ESCM2-IPS corrected: one backward, one Adam step."""
    return ips_term_step(state, lambda out: escm2_ips_loss(state, b, out), ("all",))


def escm2_dr_loss(state, b, weighted: bool, out: dict):
    """ESCM2-DR's total loss of the parameters; ``out["ips"]`` receives ``sum_O w BCE_eps``.
    ``weighted`` (the corrected form) also detaches the propensity and the imputation in the
    DR term and the propensity in the imputation loss: the DR term trains the predictor alone,
    the imputation is trained by its own loss, the propensity by CTR and CTCVR (module doc)."""
    hp = state.hp
    sg = tf.stop_gradient if weighted else (lambda x: x)

    def loss(p):
        w = clip_weight(_mf_prop(p, b.users, b.items), hp["gamma"])
        q = bm.mf_prob(p, "pred", b.users, b.items)
        q_hat = bm.mf_prob(p, "imp", b.users, b.items)
        q_d, prop, ctcvr = _all_terms(state, p, b, _mf_prop)
        q_hat_d = bm.mf_prob(p, "imp", b.all_users, b.all_items)
        dr = dr_eps(q, b.labels, sg(q_hat), sg(w), q_d, sg(q_hat_d), weighted,
                    direct_scale=hp["direct_scale"])
        fixed = tf.stop_gradient(q)
        imp = tf.reduce_sum(sg(w) * tf.square(losses.bce_eps(fixed, b.labels)
                                              - losses.bce_eps(fixed, q_hat)), -1)
        out["ips"] = tf.reduce_sum(w * losses.bce_eps(q, b.labels), -1)
        return hp["alpha"] * prop + hp["beta"] * ctcvr + hp["theta"] * imp + dr
    return loss


DR_ORDER = ("pred", "imp", "prop")     # the code's order of the three optimisers' steps


def escm2_dr_unweighted(state, b):
    return ips_term_step(state, lambda out: escm2_dr_loss(state, b, False, out), DR_ORDER)


def escm2_dr_weighted(state, b):
    return ips_term_step(state, lambda out: escm2_dr_loss(state, b, True, out), DR_ORDER)


def esmm_step(state, b):
    """ESMM on a batch of all pairs (``b.users``, ``b.items``, ``b.labels`` = ``o``)."""
    hp = state.hp

    def loss(p):
        c = tf.clip_by_value(_mf_prop(p, b.users, b.items), hp["gamma"], 1.0)
        q = bm.mf_prob(p, "pred", b.users, b.items)
        y = labels_at(state.consts["labels_all"], b.users, b.items, tf.shape(p["pred_H"])[1],
                      q.dtype)
        prop, ctcvr = ctr_ctcvr(c, q, b.labels, y, _mean(state, b.users, b.items))
        return hp["alpha"] * prop + ctcvr
    return joint_step(state, loss, ("pred", "prop"))


class BinaryESCM2IPS(JointMethod):
    """ESCM2-IPS (``ESCM2-IPS.py``): MF predictor and NCF propensity trained together by the
    CTR, CTCVR and IPS losses (module doc). Under ``binary-icde24`` two Adam steps of every
    parameter per batch, as coded; under ``binary-clean`` (and with ``form=corrected``) one."""

    name = "escm2-ips"
    label = "ESCM2-IPS"
    description = "ESCM2 with the IPS regulariser: CTR, CTCVR and IPS losses trained together"
    reference = SOURCE + "ESCM2-IPS.py"
    reference_forms = "two Adam steps of every parameter per batch"
    options = (FORM,)
    all_labels = True
    hyperparameters = COMMON + (GAMMA, UNIFORM_RATIO, ALPHA, BETA, THETA)
    reference_params = reference_table(
        "escm2-ips", {"dim": 4, "lam": 1e-4, "lr": 0.01, "batch_size": 128, "gamma": 0.05,
                      "uniform_ratio": 1, "alpha": 1.0, "beta": 1.0, "theta": 1e-3},
        {"dim": 32, "lam": 1e-5, "lr": 0.005, "batch_size": 4096, "gamma": 0.05,
         "uniform_ratio": 1, "alpha": 1.0, "beta": 1.0, "theta": 1e-4})

    def _init(self, run) -> dict:
        return {**run.tables("pred"), **bm.ncf_params(run.seeds, run.num_users, run.num_items,
                                                      int(run.values["dim"]))}

    def _stage(self, run, init: dict) -> Stage:
        every = PRED + PROP_NAMES
        if run.corrected:
            step, groups = escm2_ips_once, {"all": Group(every)}
        else:
            step, groups = escm2_ips_twice, {"pred": Group(every), "prop": Group(every)}
        return Stage(self.name, step, groups, int(run.values["batch_size"]),
                     extra=int(run.values["uniform_ratio"]))

    def _propensity(self, p, users, items):
        return _ncf(p, users, items)


class BinaryESCM2DR(BinaryESCM2IPS):
    """ESCM2-DR (``ESCM2-DR.py``): predictor, imputation and propensity MFs trained together
    by the CTR, CTCVR, DR and imputation losses (module doc). Under ``binary-icde24`` the DR
    correction unweighted, as coded; under ``binary-clean`` (and with ``form=corrected``)
    weighted by ``w`` and the direct term scaled by ``N / (G n)``: the textbook DR
    estimate."""

    name = "escm2-dr"
    label = "ESCM2-DR"
    description = "ESCM2 with the DR regulariser: CTR, CTCVR, DR and imputation losses"
    reference = SOURCE + "ESCM2-DR.py"
    reference_forms = "the DR correction not weighted by 1/p"
    dr_direct = True
    hyperparameters = COMMON + (GAMMA, UNIFORM_RATIO, ALPHA, BETA, THETA, PROP_LAM, IMP_LAM)
    corrected_hyperparameters = (IMP_LR,)   # imp_lam: the imputation's decay in both forms
    reference_params = reference_table(
        "escm2-dr", {"dim": 8, "lam": 1e-3, "lr": 0.01, "batch_size": 128, "gamma": 0.01,
                     "uniform_ratio": 1, "alpha": 1.0, "beta": 1.0, "theta": 1.0,
                     "prop_lam": 1e-3, "imp_lam": 1e-3},
        {"dim": 32, "lam": 1e-5, "lr": 0.01, "batch_size": 4096, "gamma": 0.05,
         "uniform_ratio": 1, "alpha": 1.0, "beta": 1.0, "theta": 1e-4, "prop_lam": 1e-2,
         "imp_lam": 1e-5})

    def _init(self, run) -> dict:
        return {**run.tables("pred"), **run.imputation_tables(), **run.tables("prop")}

    def _stage(self, run, init: dict) -> Stage:
        step = escm2_dr_weighted if run.corrected else escm2_dr_unweighted
        groups = {"pred": Group(PRED), "imp": run.imputation_group(IMP, wd="imp_lam"),
                  "prop": Group(MF_PROP, wd="prop_lam")}
        return Stage(self.name, step, groups, int(run.values["batch_size"]),
                     extra=int(run.values["uniform_ratio"]))

    def _propensity(self, p, users, items):
        return _mf_prop(p, users, items)


class BinaryESMM(JointMethod):
    """ESMM (``ESMM.py``): predictor and propensity MFs trained on all pairs by the CTR and
    CTCVR losses (module doc). Kept as the code computes it (nothing to correct); the
    ``batch_size`` of observed pairs is not used, ``prop_batch`` is the batch."""

    name = "esmm"
    label = "ESMM"
    description = "ESMM: CTR and CTCVR losses over all pairs"
    reference = SOURCE + "ESMM.py"
    hyperparameters = (BINARY_DIM, BINARY_LAM, LR, PROP_BATCH, GAMMA, ALPHA, PROP_LAM)
    reference_params = reference_table(
        "esmm", {"dim": 8, "lam": 1e-5, "lr": 0.01, "prop_batch": 1024, "gamma": 0.05,
                 "alpha": 2.0, "prop_lam": 1e-3},
        {"dim": 32, "lam": 1e-6, "lr": 0.005, "prop_batch": 32764, "gamma": 0.05,
         "alpha": 1.0, "prop_lam": 1e-6})

    weighted_criterion = False
    all_labels = True

    def _init(self, run) -> dict:
        return {n: v for prefix in ("pred", "prop") for n, v in run.tables(prefix).items()}

    def _stage(self, run, init: dict) -> Stage:
        return Stage(self.name, esmm_step,
                     {"pred": Group(PRED), "prop": Group(MF_PROP, wd="prop_lam")},
                     int(run.values["prop_batch"]), source="all")

    def at_batch_size(self, run) -> int:
        """ESMM has no batch of observed pairs: AT's third model takes ``prop_batch`` pairs from
        all users x items per step, as ESMM does (``prop_batch / AT_RATIO`` observed ones)."""
        return max(1, int(run.values["prop_batch"]) // AT_RATIO)

    def _source_size(self, run) -> int:
        return run.num_users * run.num_items
