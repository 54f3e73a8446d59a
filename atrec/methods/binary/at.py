"""Asymmetric tri-training under the binary protocols (docs/protocols.md, "The binary
protocols").

The ICDE 2024 collection has an AT class (``MF_ASIPS``) that no script runs. As there: A1 and
A2 are two predictors the method trains (IPS-trained MFs for ``mf-ips``) from different
initialisations, sharing one propensity model; then A3, a fresh MF, learns by cross-entropy on
A1's predicted probability over pairs drawn from all users x items (:data:`AT_RATIO` times the
batch size per observed batch, distinct within an epoch, as the reference code's ``G = 4``), on
the pairs where A1 and A2 agree. The reference code keeps a pair when ``q1 - q2 < tau``, without
the absolute value; atrec keeps it when ``|q1 - q2| <= epsilon`` (AT's own rule; the
``epsilon`` hyperparameter). A3 trains under the protocol's rule (the
reference rule on its summed loss, or early stopping on its validation criterion) and is what
is evaluated.
"""

from __future__ import annotations

from atrec.learners import binary_models as bm
from atrec.learners import losses
from atrec.learners.epochs import Group, Stage
from atrec.methods.base import FitProblem, MethodResult
from atrec.methods.binary.base import BinaryMethod, Trained
from atrec.methods.binary.propensity import inverse_propensity
from atrec.runtime import tf

AT_RATIO = 4          # MF_ASIPS.fit's default G: sampled pairs per observed pair
A3_SALT = 2000
_A3 = Group(("pred_W", "pred_H"), lr="lr", wd="lam")
A3_HP = ("lr", "lam", "epsilon")    # what A3's step reads (its Adam, its agreement threshold)


def _a3_step(state, b):
    c = state.consts
    q1 = bm.mf_prob(c, "a1", b.all_users, b.all_items)
    q2 = bm.mf_prob(c, "a2", b.all_users, b.all_items)
    keep = tf.cast(tf.abs(q1 - q2) <= state.hp["epsilon"], tf.float32)
    count = tf.maximum(tf.reduce_sum(keep, axis=-1), 1.0)

    def loss(p):
        e = losses.bce(bm.mf_prob(p, "pred", b.all_users, b.all_items), q1)
        return tf.reduce_sum(keep * e, axis=-1) / count
    return state.minimize("pred", loss)


def fit_binary_at(method: BinaryMethod, problem: FitProblem, params: dict,
                  settings) -> MethodResult:
    """Train ``method`` as A1 and A2 and A3 on their agreement (module doc); A3 evaluated."""
    if not method.serves_in_at:
        raise ValueError(f"method {method.name} cannot serve in AT under a binary protocol")
    run = method.start(problem, params, settings)
    first, second, prop, stages = method.predictors(run)
    consts = {**(prop or {}),
              **{k.replace("pred", "a1"): v for k, v in first.items()},
              **{k.replace("pred", "a2"): v for k, v in second.items()}}
    weights = None
    if prop:
        gamma = float(run.values["gamma"])
        weights = lambda u, i: inverse_propensity(prop, u, i, gamma)
    run.init_salt = A3_SALT
    stage = Stage("at", _a3_step, {"pred": _A3}, method.at_batch_size(run), extra=AT_RATIO)
    hp = {k: v for k, v in run.hp().items() if k in A3_HP}   # A3's loop alike for every method
    res = run.main(stage, run.tables("pred"), hp, consts,
                   run.criterion(lambda p, u, i: bm.mf_prob(p, "pred", u, i), weights))
    return method.result(run, Trained(res.params, res, stages))
