"""Gradient flow of the corrected DR forms (issue 60): the DR term trains the predictor alone,
the imputation is trained by its own loss and the propensity by its own (ESCM2-DR, Multi-DR,
DT-DR, DR-JL); the code's forms keep the DR term training all three (atrec.methods.binary)."""

import numpy as np
import pytest

from atrec.learners import losses
from atrec.methods.binary import dr, dt, escm2, multi
from atrec.runtime import tf
from test_binary_escm_dt import MF3, OBS, _labels_all, batch, state_of

IMP = ("imp_W", "imp_H")
PROP = ("prop_W", "prop_H")
COMMON = {"gamma": 0.05, "direct_scale": 3.0}


def _grads(loss_fn, state, names):
    return state.gradients(names, loss_fn)[1]


def _norm(grads):
    return sum(float(tf.reduce_sum(tf.abs(g))) for g in grads.values())


# with the imputation's weight theta and the propensity's losses' weights (alpha, beta) at 0,
# the total loss is the DR term alone: corrected, it gives the imputation and the propensity
# no gradient; coded, it gives both one
@pytest.mark.parametrize("make", [lambda s, b, c: escm2.escm2_dr_loss(s, b, c, {}),
                                  lambda s, b, c: dt.dr_loss(s, b, c)], ids=["escm2-dr", "dt-dr"])
def test_the_corrected_dr_term_trains_neither_imputation_nor_propensity(make):
    hp = {**COMMON, "alpha": 0.0, "beta": 0.0, "theta": 0.0}
    for corrected in (True, False):
        state = state_of(MF3, hp, _labels_all())
        grads = _grads(make(state, batch(**OBS), corrected), state, IMP + PROP + ("pred_W",))
        imp, prop = _norm({n: grads[n] for n in IMP}), _norm({n: grads[n] for n in PROP})
        assert _norm({"p": grads["pred_W"]}) > 0
        if corrected:
            assert imp == 0 and prop == 0
        else:
            assert imp > 0 and prop > 0


def _own_imputation_loss(p, b, weights, scale=1.0, mean=False):
    """``sum_O w (BCE_eps(sg q, y) - BCE_eps(sg q, q_hat))^2`` (``mean``: over O), written
    here apart from the methods."""
    def prob(prefix, u, i):
        return tf.sigmoid(tf.reduce_sum(tf.gather(p[f"{prefix}_W"], u, batch_dims=1)
                                        * tf.gather(p[f"{prefix}_H"], i, batch_dims=1), -1))
    q = tf.stop_gradient(prob("pred", b.users, b.items))
    e = losses.bce_eps(q, b.labels) - losses.bce_eps(q, prob("imp", b.users, b.items))
    agg = tf.reduce_mean if mean else tf.reduce_sum
    return agg(tf.stop_gradient(weights) * tf.square(e), -1) * scale


@pytest.mark.parametrize("which", ["escm2-dr", "multi-dr", "dt-dr"])
def test_the_imputation_is_trained_by_its_own_loss_alone(which):
    b = batch(**OBS)
    hp = {**COMMON, "alpha": 0.7, "beta": 0.3, "theta": 2.0}
    state = state_of(MF3, hp, _labels_all())
    p = state.params
    if which == "escm2-dr":
        loss = escm2.escm2_dr_loss(state, b, True, {})
        w = 1 / tf.clip_by_value(escm2._mf_prop(p, b.users, b.items), hp["gamma"], 1.0)
        own = lambda q: hp["theta"] * _own_imputation_loss(q, b, w)
    elif which == "multi-dr":
        loss = multi.multi_dr_loss(state, b, True, {})
        w = 1 / tf.clip_by_value(multi._multi_dr_prop(p, b.users, b.items), hp["gamma"], 1.0)
        own = lambda q: _own_imputation_loss(q, b, w, scale=1 / len(OBS["all_users"]))
    else:
        loss = dt.dr_loss(state, b, True)
        w = 1 / tf.clip_by_value(dt.propensity(p, b.users, b.items), hp["gamma"], 1.0)
        own = lambda q: hp["theta"] * _own_imputation_loss(q, b, w, mean=True)
    got, want = _grads(loss, state, IMP), _grads(own, state, IMP)
    assert _norm(want) > 0
    for name in IMP:
        np.testing.assert_allclose(got[name].numpy(), want[name].numpy(), rtol=1e-9)


def test_multi_dr_corrected_propensity_is_trained_by_its_observation_loss_alone():
    b = batch(**OBS)
    state = state_of(MF3, COMMON)
    got = _grads(multi.multi_dr_loss(state, b, True, {}), state, PROP)
    want = _grads(lambda p: multi._observation(p, b, multi._multi_dr_prop), state, PROP)
    for name in PROP:
        np.testing.assert_allclose(got[name].numpy(), want[name].numpy(), rtol=1e-9)


def test_dr_jl_steps_the_imputation_by_its_own_loss_and_the_predictor_by_the_dr_term():
    # DR-JL's corrected step: the predictor's loss reads q_hat detached, and the imputation's
    # step minimises its own loss (checked by hand in test_binary_dr); here: the predictor's
    # DR loss gives the imputation no gradient
    b = batch(**OBS)
    state = state_of(MF3, COMMON)

    def pred_loss(params):
        q_hat = tf.stop_gradient(dr.bm.mf_prob(params, "imp", b.users, b.items))
        q_hat_d = tf.stop_gradient(dr.bm.mf_prob(params, "imp", b.all_users, b.all_items))
        return dr.dr_loss(dr.bm.mf_prob(params, "pred", b.users, b.items), b.labels,
                          dr.bm.mf_prob(params, "pred", b.all_users, b.all_items),
                          tf.ones_like(b.labels), q_hat, q_hat_d, True, 3.0)
    assert _norm(_grads(pred_loss, state, IMP)) == 0
    assert _norm(_grads(pred_loss, state, ("pred_W",))) > 0
