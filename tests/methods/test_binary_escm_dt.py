"""DT-IPS, DT-DR, ESCM2-IPS, ESCM2-DR, ESMM, Multi-IPS and Multi-DR against hand computations
on tiny cases, their gradients against finite differences, ESCM2-IPS's two Adam steps per
batch on one scalar, and which form each protocol runs (atrec.methods.binary.dt, escm2,
multi)."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from atrec.learners.epochs import Batch, Group, StepState, new_opt
from atrec.methods.binary import dt, escm2, joint, multi
from atrec.methods.binary.base import BinaryRun
from atrec.methods.binary.registry import BINARY_METHODS
from atrec.protocols import get_protocol
from atrec.runtime import tf

F64 = tf.float64


def sig(x):
    return 1.0 / (1.0 + math.exp(-x))


def ce_eps(q, t):
    """The hand-written cross-entropy, by hand."""
    return -(t * math.log(q + 1e-6) + (1 - t) * math.log(1 - q + 1e-6))


def ce(q, t):
    return -(t * math.log(q) + (1 - t) * math.log(1 - q))


def t64(x):
    return tf.constant(np.asarray(x, np.float64)[None], F64)


def state_of(params, hp, consts=None, groups=None):
    params = {k: t64(v) for k, v in params.items()}
    hp = {k: tf.constant(v, F64) for k, v in hp.items()}
    groups = groups or {}
    return StepState(params, new_opt(params, groups) if groups else {}, groups, hp,
                     consts or {})


def batch(users, items, labels, all_users=None, all_items=None, all_o=None):
    i32 = lambda x: None if x is None else tf.constant([x], tf.int32)
    return Batch(i32(users), i32(items), t64(labels), i32(users), i32(all_users),
                 i32(all_items), None if all_o is None else t64(all_o))


# two users, two items, embeddings of size 1: numbers chosen away from every clip
A, B = [0.5, -0.3], [0.2, 0.8]          # prediction MF (U1, V1)
C, D = [0.1, 0.4], [-0.6, 0.3]          # DT's second MF (U2, V2), or a propensity MF
E, F = [0.7, -0.2], [0.9, 0.4]          # imputation MF
MF3 = {"pred_W": [[a] for a in A], "pred_H": [[b] for b in B],
       "prop_W": [[c] for c in C], "prop_H": [[d] for d in D],
       "imp_W": [[e] for e in E], "imp_H": [[f] for f in F]}
# one observed pair (0, 1) with y = 1; D = (1, 0) unobserved and (0, 1) observed
OBS = {"users": [0], "items": [1], "labels": [1.0], "all_users": [1, 0], "all_items": [0, 1],
       "all_o": [0.0, 1.0]}


def test_dt_ips_loss_by_hand():
    hp = {"gamma": 0.05, "alpha": 0.5, "beta": 0.1}
    got = dt.ips_loss(state_of(MF3, hp), batch(**OBS))(state_of(MF3, hp).params).numpy()[0]
    q = sig(A[0] * B[1])
    w = 1 / sig(A[0] * B[1] + C[0] * D[1])
    obs = (ce(sig(A[1] * B[0] + C[1] * D[0]), 0) + ce(sig(A[0] * B[1] + C[0] * D[1]), 1)) / 2
    # R_D: D's user rows (1, 0), item rows (0, 1); 1x1 cross products, 2x2 concatenations
    r_d = ((A[1] * C[1] + A[0] * C[0]) ** 2 + (B[0] * D[0] + B[1] * D[1]) ** 2
           + (A[1] ** 2 + C[1] ** 2 + A[0] ** 2 + C[0] ** 2) / 4
           + (B[0] ** 2 + D[0] ** 2 + B[1] ** 2 + D[1] ** 2) / 4)
    r_o = ((A[0] * C[0]) ** 2 + (B[1] * D[1]) ** 2 + (A[0] ** 2 + C[0] ** 2) / 2
           + (B[1] ** 2 + D[1] ** 2) / 2)
    assert got == pytest.approx(w * ce_eps(q, 1) + 0.5 * obs + 0.1 * (r_d + r_o), rel=1e-9)


def test_dt_dr_loss_by_hand():
    hp = {"gamma": 0.05, "alpha": 0.5, "beta": 0.1, "theta": 2.0}
    s = state_of(MF3, hp)
    got = dt.dr_loss(s, batch(**OBS))(s.params).numpy()[0]
    ips = dt.ips_loss(s, batch(**OBS))(s.params).numpy()[0]
    q, q_hat = sig(A[0] * B[1]), sig(E[0] * F[1])
    w = 1 / sig(A[0] * B[1] + C[0] * D[1])
    e, e_hat = ce_eps(q, 1), ce_eps(q, q_hat)
    direct = ce_eps(sig(A[1] * B[0]), sig(E[1] * F[0])) + ce_eps(q, q_hat)
    dr = (w * e - w * e_hat + direct) / 2           # the correction weighted, / (G B) = 2
    imp = w * (e - e_hat) ** 2
    # DT-DR = DT-IPS with dr + theta imp in place of the IPS mean
    assert got == pytest.approx(ips - w * e + dr + 2.0 * imp, rel=1e-9)


def test_dr_forms_by_hand():
    q, y, qh, w = t64([0.7, 0.2]), t64([1.0, 0.0]), t64([0.6, 0.3]), t64([2.0, 4.0])
    qd, qhd = t64([0.5, 0.4, 0.9]), t64([0.1, 0.8, 0.5])
    e = ce_eps(0.7, 1) * 2 + ce_eps(0.2, 0) * 4
    plain = [ce_eps(0.7, 0.6), ce_eps(0.2, 0.3)]
    back = [ce_eps(0.6, 0.7), ce_eps(0.3, 0.2)]            # reversed: q_hat in q's place
    direct = sum(ce_eps(a, b) for a, b in zip([0.5, 0.4, 0.9], [0.1, 0.8, 0.5]))
    direct_back = sum(ce_eps(b, a) for a, b in zip([0.5, 0.4, 0.9], [0.1, 0.8, 0.5]))
    # (weighted, reversed, direct_scale): the code's forms, then the corrected ones with the
    # direct term scaled (N / (G n), say 2.5)
    cases = [(False, False, 1.0, e - sum(plain) + direct),
             (False, True, 1.0, e - sum(back) + direct_back),
             (True, False, 1.0, e - 2 * plain[0] - 4 * plain[1] + direct),
             (True, False, 2.5, e - 2 * plain[0] - 4 * plain[1] + 2.5 * direct),
             (True, True, 2.5, e - 2 * back[0] - 4 * back[1] + 2.5 * direct_back)]
    for weighted, rev, scale, expect in cases:
        got = joint.dr_eps(q, y, qh, w, qd, qhd, weighted, rev, scale).numpy()[0]
        assert got == pytest.approx(expect / 3, rel=1e-9)


def test_ctr_and_ctcvr_by_hand():
    prop, ctcvr = escm2.ctr_ctcvr(t64([0.5, 0.2]), t64([0.4, 0.9]), t64([1.0, 0.0]),
                                  t64([1.0, 0.0]))
    assert prop.numpy()[0] == pytest.approx((-math.log(0.5) - math.log(0.8)) / 2)
    assert ctcvr.numpy()[0] == pytest.approx((-math.log(0.2) - math.log(1 - 0.18)) / 2)


def _labels_all():
    # y over all 2 x 2 pairs: the observed (0, 1) is positive
    return {"labels_all": t64([0.0, 1.0, 0.0, 0.0])}


def test_escm2_dr_loss_by_hand_in_both_forms():
    hp = {"gamma": 0.05, "alpha": 1.5, "beta": 0.5, "theta": 3.0, "direct_scale": 1.0}
    s = state_of(MF3, hp, _labels_all())
    out = {}
    got = escm2.escm2_dr_loss(s, batch(**OBS), False, out)(s.params).numpy()[0]
    q, q_hat = sig(A[0] * B[1]), sig(E[0] * F[1])
    w = 1 / sig(C[0] * D[1])
    qd = [sig(A[1] * B[0]), q]
    cd = [sig(C[1] * D[0]), sig(C[0] * D[1])]
    prop = (ce(cd[0], 0) + ce(cd[1], 1)) / 2
    ctcvr = (ce(cd[0] * qd[0], 0) + ce(cd[1] * qd[1], 1)) / 2
    dr = (w * ce_eps(q, 1) - ce_eps(q, q_hat) + ce_eps(qd[0], sig(E[1] * F[0]))
          + ce_eps(q, q_hat)) / 2
    imp = w * (ce_eps(q, 1) - ce_eps(q, q_hat)) ** 2
    assert got == pytest.approx(1.5 * prop + 0.5 * ctcvr + 3.0 * imp + dr, rel=1e-9)
    assert out["ips"].numpy()[0] == pytest.approx(w * ce_eps(q, 1), rel=1e-9)
    # corrected: the correction weighted by w, the direct term scaled (N / (G n), say 6.5)
    s = state_of(MF3, {**hp, "direct_scale": 6.5}, _labels_all())
    fixed = escm2.escm2_dr_loss(s, batch(**OBS), True, {})(s.params).numpy()[0]
    dr = (w * ce_eps(q, 1) - w * ce_eps(q, q_hat)
          + 6.5 * (ce_eps(qd[0], sig(E[1] * F[0])) + ce_eps(q, q_hat))) / 2
    assert fixed == pytest.approx(1.5 * prop + 0.5 * ctcvr + 3.0 * imp + dr, rel=1e-9)


def test_escm2_ips_and_esmm_losses_by_hand():
    ncf = {"pred_W": MF3["pred_W"], "pred_H": MF3["pred_H"], "prop_W": [[0.3], [-0.5]],
           "prop_H": [[0.2], [0.6]], "prop_a": [0.4, -0.7], "prop_b": [0.1]}
    hp = {"gamma": 0.05, "alpha": 1.0, "beta": 2.0, "theta": 1e-1}
    s = state_of(ncf, hp, _labels_all())
    got = escm2.escm2_ips_loss(s, batch(**OBS), {})(s.params).numpy()[0]
    p = lambda u, i: sig(0.4 * [0.3, -0.5][u] - 0.7 * [0.2, 0.6][i] + 0.1)
    q = lambda u, i: sig(A[u] * B[i])
    prop = (ce(p(1, 0), 0) + ce(p(0, 1), 1)) / 2
    ctcvr = (ce(p(1, 0) * q(1, 0), 0) + ce(p(0, 1) * q(0, 1), 1)) / 2
    assert got == pytest.approx(prop + 2.0 * ctcvr + 0.1 / p(0, 1) * ce_eps(q(0, 1), 1),
                                rel=1e-9)
    # ESMM on a batch of all pairs, labels = o; y read from the label matrix
    s = state_of({k: MF3[k] for k in ("pred_W", "pred_H", "prop_W", "prop_H")},
                 {"gamma": 0.5, "alpha": 2.0, "lr": 0.0, "lam": 0.0, "prop_lam": 0.0},
                 _labels_all(), {"pred": Group(escm2.PRED), "prop": Group(escm2.MF_PROP)})
    got = escm2.esmm_step(s, batch([1, 0], [0, 1], [0.0, 1.0])).numpy()[0]
    c = [max(sig(C[1] * D[0]), 0.5), sig(C[0] * D[1])]
    expect = (2.0 * (ce(c[0], 0) + ce(c[1], 1))
              + ce(c[0] * sig(A[1] * B[0]), 0) + ce(c[1] * sig(A[0] * B[1]), 1)) / 2
    assert c[0] == 0.5 and got == pytest.approx(expect, rel=1e-9)   # the lower clip is live


def test_multi_tower_and_losses_by_hand():
    p = {"share_W": [[0.5], [-1.0]], "share_H": [[0.8], [0.3]],
         "proptower1_a": [[0.6], [0.9]], "proptower2_a": [1.2], "proptower2_b": 0.5,
         "predtower1_a": [[-0.4], [1.1]], "predtower2_a": [-0.8], "predtower2_b": 0.2}
    s = state_of(p, {"gamma": 0.05})
    tower = lambda a1, a2, b2, u, i: sig(a2 * max(0.0, [0.5, -1.0][u] * a1[0]
                                                  + [0.8, 0.3][i] * a1[1]) + b2)
    prop = lambda u, i: tower([0.6, 0.9], 1.2, 0.5, u, i)
    pred = lambda u, i: tower([-0.4, 1.1], -0.8, 0.2, u, i)
    users, items = tf.constant([[1, 0]]), tf.constant([[1, 1]])
    np.testing.assert_allclose(multi.BinaryMultiIPS().predict(s.params, users, items)[0],
                               [pred(1, 1), pred(0, 1)], rtol=1e-12)
    b = batch([0, 1], [1, 0], [1.0, 0.0], [1, 0], [0, 0], [0.0, 0.0])
    got = multi.multi_ips_loss(s, b, False, {})(s.params).numpy()[0]
    ips = ce_eps(pred(0, 1), 1) / prop(0, 1) + ce_eps(pred(1, 0), 0) / prop(1, 0)
    assert got == pytest.approx(ips, rel=1e-9)
    fixed = multi.multi_ips_loss(s, b, True, {})(s.params).numpy()[0]
    assert fixed - got == pytest.approx((ce(prop(1, 0), 0) + ce(prop(0, 0), 0)) / 2, rel=1e-9)


def test_multi_dr_loss_by_hand():
    s = state_of(MF3, {"gamma": 0.05, "direct_scale": 1.0})
    got = multi.multi_dr_loss(s, batch(**OBS), False, {})(s.params).numpy()[0]
    q, q_hat, w = sig(A[0] * B[1]), sig(E[0] * F[1]), 1 / sig(C[0] * D[1])
    direct = ce_eps(sig(E[1] * F[0]), sig(A[1] * B[0])) + ce_eps(q_hat, q)   # reversed
    assert got == pytest.approx((w * ce_eps(q, 1) - ce_eps(q_hat, q) + direct) / 2, rel=1e-9)


def _check_gradients(loss, params, names, idxs):
    s = state_of(params, {})
    base = {n: v for n, v in s.params.items()}
    _, grads = s.gradients(names, loss)
    h = 1e-6
    for name in names:
        for idx in idxs:
            up, down = base[name].numpy().copy(), base[name].numpy().copy()
            up[(0,) + idx] += h
            down[(0,) + idx] -= h
            num = (tf.reduce_sum(loss({**base, name: tf.constant(up)}))
                   - tf.reduce_sum(loss({**base, name: tf.constant(down)}))).numpy() / (2 * h)
            assert grads[name].numpy()[(0,) + idx] == pytest.approx(num, rel=1e-5, abs=1e-8)


def _random_mf(rng, prefixes, nu=4, ni=5, k=3):
    out = {}
    for pre in prefixes:
        out[f"{pre}_W"] = rng.normal(size=(nu, k)) * 0.7
        out[f"{pre}_H"] = rng.normal(size=(ni, k)) * 0.7
    return out


BIG = {"users": [0, 3, 2], "items": [4, 1, 1], "labels": [1.0, 0.0, 1.0],
       "all_users": [1, 0, 3, 2, 2, 0], "all_items": [0, 4, 2, 1, 3, 3],
       "all_o": [0.0, 1.0, 0.0, 1.0, 0.0, 0.0]}
IDX = [(0, 0), (3, 2), (2, 1), (1, 1)]


def test_autodiff_matches_finite_differences():
    rng = np.random.default_rng(0)
    mf3 = _random_mf(rng, ("pred", "prop", "imp"))
    labels_all = {"labels_all": t64(rng.integers(0, 2, size=20).astype(float))}
    hp = {"gamma": 0.05, "alpha": 0.5, "beta": 0.1, "theta": 2.0, "direct_scale": 1.0}
    b = batch(**BIG)
    s = state_of(mf3, hp, labels_all)
    _check_gradients(dt.dr_loss(s, b), mf3, ("pred_W", "prop_H", "imp_W"), IDX)
    # ESCM2-DR's imputation loss stops q's gradient: check q's table with theta = 0
    _check_gradients(escm2.escm2_dr_loss(s, b, False, {}), mf3, ("prop_W", "imp_H"), IDX)
    no_imp = state_of(mf3, {**hp, "theta": 0.0, "direct_scale": 3.0}, labels_all)
    _check_gradients(escm2.escm2_dr_loss(no_imp, b, True, {}), mf3, ("pred_H",), IDX)
    _check_gradients(multi.multi_dr_loss(s, b, False, {}), mf3, ("prop_W", "imp_H"), IDX)
    towers = {"share_W": rng.normal(size=(4, 3)), "share_H": rng.normal(size=(5, 3))}
    for t in multi.TOWERS:
        towers.update({f"{t}1_a": rng.normal(size=(6, 3)) * 0.5, f"{t}2_a": rng.normal(size=3),
                       f"{t}2_b": rng.normal()})
    _check_gradients(multi.multi_ips_loss(s, b, False, {}), towers,
                     ("share_W", "proptower1_a", "predtower1_a"), [(0, 0), (2, 1), (3, 2)])


def test_escm2_ips_steps_twice_as_coded_by_hand():
    # loss c x^2 / 2 at x0 = 1: ONE backward (g = c x0 = -0.95), then two Adam steps with
    # weight decay 1: the first reads g + x0 = 0.05, the second g + x1 (x1 already moved)
    lr, c = 0.1, -0.95

    def adam_first(x, g):       # PyTorch's Adam at t = 1: m_hat = g, sqrt(v_hat) = |g|
        return x - lr * g / (abs(g) + 1e-8)

    x1 = adam_first(1.0, c + 1.0)
    x2 = adam_first(x1, c + x1)
    assert x2 == pytest.approx(1.0, abs=1e-6)       # x1 = 0.9 and g + x1 = -0.05 < 0
    loss = lambda p: 0.5 * c * tf.reduce_sum(tf.square(p["x"]), axis=-1)
    hp = {"lr": lr, "lam": 1.0}
    twice = state_of({"x": [1.0]}, hp, groups={"pred": Group(("x",)), "prop": Group(("x",))})
    joint.joint_step(twice, loss, ("pred", "prop"))
    assert twice.params["x"].numpy()[0, 0] == pytest.approx(x2, rel=1e-9)
    once = state_of({"x": [1.0]}, hp, groups={"all": Group(("x",))})
    joint.joint_step(once, loss, ("all",))
    assert once.params["x"].numpy()[0, 0] == pytest.approx(x1, rel=1e-9)   # 0.9


def _run(corrected, **values):
    run = SimpleNamespace(corrected=corrected, values={"batch_size": 8, "uniform_ratio": 2,
                                                       **values})
    run.imputation_group = lambda *a, **k: BinaryRun.imputation_group(run, *a, **k)
    return run


def test_each_protocol_runs_its_form():
    ips = escm2.BinaryESCM2IPS()
    coded, fixed = ips._stage(_run(False), {}), ips._stage(_run(True), {})
    every = escm2.PRED + escm2.PROP_NAMES
    assert coded.step is escm2.escm2_ips_twice and set(coded.groups) == {"pred", "prop"}
    assert all(g.names == every and g.wd == "lam" for g in coded.groups.values())
    assert fixed.step is escm2.escm2_ips_once and fixed.groups == {"all": Group(every)}
    dr = escm2.BinaryESCM2DR()
    assert dr._stage(_run(False), {}).step is escm2.escm2_dr_unweighted
    assert dr._stage(_run(True), {}).step is escm2.escm2_dr_weighted
    # the imputation's own Adam in the corrected form only (imp_lam its decay in both)
    assert dr._stage(_run(True), {}).groups["imp"] == Group(escm2.IMP, "imp_lr", "imp_lam")
    assert dr._stage(_run(False), {}).groups["imp"] == Group(escm2.IMP, "lr", "imp_lam")
    m = multi.BinaryMultiIPS()
    assert m._stage(_run(False), {"x": 0}).extra == 0          # the code draws no pair from all
    assert m._stage(_run(True), {"x": 0}).extra == 2
    assert multi.BinaryMultiDR()._stage(_run(True), {}).step is multi.multi_dr_fixed
    from atrec.methods.registry import canonical, resolve

    for name in ("escm2-ips", "escm2-dr", "multi-ips", "multi-dr"):
        cls = BINARY_METHODS.get(name)
        assert resolve(f"{name}-corrected", "binary-icde24") == (cls, {"form": "corrected"})
        # the code's form under binary-clean, which had no name before the option
        assert canonical(f"{name}[form=coded]", "binary-clean") == f"{name}+form=coded"
        assert cls(form="coded").applied(get_protocol("binary-clean").epochs).forms == "coded"
    for name in ("dt-ips", "dt-dr", "escm2-ips", "escm2-dr", "esmm", "multi-ips", "multi-dr"):
        cls = BINARY_METHODS.get(name)
        assert set(cls.reference_params) == {"coat", "yahoo"}
    for name in ("dt-ips", "esmm"):     # nothing of their code's to correct
        assert BINARY_METHODS.get(name).options == ()
    # DT-DR's DR term trains its propensity and imputation as coded: its corrected form
    # detaches them there (binary-clean's default)
    assert dt.BinaryDTDR()._stage(_run(False), {}).step is dt._dr_step
    assert dt.BinaryDTDR()._stage(_run(True), {}).step is dt._dr_step_corrected


def test_label_matrix_holds_each_replicas_labels():
    train = {"user": np.array([[0, 1], [1, 1]]), "item": np.array([[1, 0], [1, 0]]),
             "rating": np.array([[1.0, 0.0], [1.0, 1.0]], np.float32)}
    run = SimpleNamespace(replicas=2, num_users=2, num_items=2,
                          problem=SimpleNamespace(train=train))
    np.testing.assert_array_equal(joint.label_matrix(run), [[0, 1, 0, 0], [0, 0, 1, 1]])
