"""CVIB, DIB, TDR and TDR-JL under the binary protocols against hand computations: each loss on
a tiny case, autodiff against finite differences, TDR's logistic stopping rule and its SGD on
scripted cases, the targeted epsilon and the weight misalignment by hand, and tiny end-to-end
fits (atrec.methods.binary.cvib, atrec.methods.binary.tdr)."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from atrec.learners.epochs import Batch, Group, ReferenceRule, Stage, StepState, new_opt, run_stage
from atrec.methods.base import FitProblem
from atrec.methods.binary import cvib, tdr
from atrec.methods.binary.ips import PRED
from atrec.protocols.binary import EpochSettings
from atrec.runtime import tf

sig = lambda x: 1.0 / (1.0 + math.exp(-x))
bce = lambda q, t: -(t * math.log(q) + (1 - t) * math.log(1 - q))


def _ints(x):
    return tf.constant([x], tf.int32)


def _batch(users, items, labels, all_users, all_items, dtype=tf.float64):
    return Batch(_ints(users), _ints(items), tf.constant([labels], dtype),
                 _ints(list(range(len(users)))), _ints(all_users), _ints(all_items))


def _tables(dtype=tf.float64, **extra):
    # k = 1: user 0 -> 1, user 1 -> 0; item 0 -> 1, item 1 -> 2 (logit of (u, i) = W_u H_i)
    p = {"pred_W": [[[1.0], [0.0]]], "pred_H": [[[1.0], [2.0]]], **extra}
    return {k: tf.constant(v, dtype) for k, v in p.items()}


# observed (0, 0) y = 1 and (1, 1) y = 0: q = sigmoid(1), 1/2; uniform (0, 1), (1, 0):
# sigmoid(2), 1/2
OBS = {"users": [0, 1], "items": [0, 1], "labels": [1.0, 0.0], "all_users": [0, 1],
       "all_items": [1, 0]}


def test_cvib_loss_by_hand():
    q, qd = [sig(1), 0.5], [sig(2), 0.5]
    qo, qa = sum(q) / 2, sum(qd) / 2
    alpha, gamma = 0.1, 0.05
    expect = ((bce(q[0], 1) + bce(q[1], 0)) / 2
              + alpha * (-qo * math.log(qa) - (1 - qo) * math.log(1 - qa))
              + gamma * sum(x * math.log(x) for x in q) / 2)
    got = cvib.cvib_loss(_tables(), _batch(**OBS), alpha, gamma).numpy()[0]
    assert got == pytest.approx(expect, rel=1e-10)


def test_dib_loss_by_hand():
    p = _tables(bias_W=[[[0.5], [1.0]]], bias_H=[[[-1.0], [1.0]]])
    # s_u: sigmoid(1), 1/2; s_b: sigmoid(-0.5), sigmoid(1); s_all: sigmoid(1.5 * 0), sigmoid(1 * 3)
    alpha, gamma = 0.25, 0.6
    expect = ((1 - alpha) * (bce(sig(1), 1) + bce(0.5, 0)) / 2
              + gamma * (bce(sig(-0.5), 1) + bce(sig(1), 0)) / 2
              + alpha * (bce(0.5, 1) + bce(sig(3), 0)) / 2)
    got = cvib.dib_loss(p, _batch(**OBS), alpha, gamma).numpy()[0]
    assert got == pytest.approx(expect, rel=1e-10)


# the code's form; the corrected one: the correction weighted, the direct term scaled (N / (G n))
@pytest.mark.parametrize("corrected, scale", [(0.0, 1.0), (1.0, 4.5)])
def test_dr_loss_by_hand_in_both_forms(corrected, scale):
    b = Batch(_ints([0, 1]), _ints([0, 1]), tf.constant([[1.0, 0.0]], tf.float64), _ints([0, 1]),
              _ints([0, 1, 1]), _ints([1, 0, 1]))
    w = tf.constant([[2.0, 4.0]], tf.float64)
    imputed, imputed_all = tf.constant([[0.4] * 2], tf.float64), tf.constant([[0.4] * 3],
                                                                            tf.float64)
    q, q_all = [sig(1), 0.5], [sig(2), 0.5, 0.5]
    e = [bce(q[0], 1), bce(q[1], 0)]
    e_hat = [bce(x, 0.4) for x in q]
    direct = sum(bce(x, 0.4) for x in q_all)
    cw = [2.0, 4.0] if corrected else [1.0, 1.0]
    expect = (2 * e[0] + 4 * e[1] - cw[0] * e_hat[0] - cw[1] * e_hat[1] + scale * direct) / 3
    got = tdr.dr_loss(b, w, imputed, imputed_all, corrected, direct_scale=scale)(_tables())
    got = got.numpy()[0]
    assert got == pytest.approx(expect, rel=1e-10)
    # the targeted step's form: every term squared, e_hat shifted by e_hat_T
    shift, shift_all = tf.constant([[0.1, -0.2]], tf.float64), tf.constant([[0.3, 0.0, 0.05]],
                                                                             tf.float64)
    s, s_all = [0.1, -0.2], [0.3, 0.0, 0.05]
    expect = (2 * e[0] ** 2 + 4 * e[1] ** 2 - sum(c * (x + d) ** 2 for c, x, d in
                                                  zip(cw, e_hat, s))
              + scale * sum((bce(x, 0.4) + d) ** 2 for x, d in zip(q_all, s_all))) / 3
    got = tdr.dr_loss(b, w, imputed, imputed_all, corrected, shift, shift_all, scale)(_tables())
    assert got.numpy()[0] == pytest.approx(expect, rel=1e-10)


def test_imputed_error_is_reversed_in_the_reference_form():
    q, q_hat = tf.constant([0.7], tf.float64), tf.constant([0.2], tf.float64)
    # BCE(q_hat, q): the imputation's output where the prediction goes
    assert tdr.imputed_error(q, q_hat, 0.0).numpy()[0] == pytest.approx(
        -(0.7 * math.log(0.2) + 0.3 * math.log(0.8)))
    assert tdr.imputed_error(q, q_hat, 1.0).numpy()[0] == pytest.approx(
        -(0.2 * math.log(0.7) + 0.8 * math.log(0.3)))


def _finite_difference_check(loss, params):
    state = StepState(params, {}, {}, {}, {})
    names = tuple(params)
    _, grads = state.gradients(names, loss)
    h = 1e-6
    for name in names:
        base = params[name].numpy()
        for idx in list(np.ndindex(base.shape))[:6]:
            up, down = base.copy(), base.copy()
            up[idx] += h
            down[idx] -= h
            num = (tf.reduce_sum(loss({**params, name: tf.constant(up)}))
                   - tf.reduce_sum(loss({**params, name: tf.constant(down)}))).numpy() / (2 * h)
            assert grads[name].numpy()[idx] == pytest.approx(num, rel=1e-5, abs=1e-8), name


def _random_tables(*prefixes):
    rng = np.random.default_rng(0)
    out = {}
    for p in prefixes:
        out[f"{p}_W"] = tf.constant(rng.normal(size=(2, 3, 2)))
        out[f"{p}_H"] = tf.constant(rng.normal(size=(2, 4, 2)))
    return out


def _random_batch():
    users, items = tf.constant([[0, 1, 2], [2, 2, 0]]), tf.constant([[3, 0, 1], [1, 1, 2]])
    labels = tf.constant([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], tf.float64)
    au, ai = tf.constant([[0, 2, 1], [1, 0, 2]]), tf.constant([[2, 2, 0], [3, 1, 0]])
    return Batch(users, items, labels, users, au, ai)


def test_autodiff_matches_finite_differences():
    b = _random_batch()
    _finite_difference_check(lambda p: cvib.cvib_loss(p, b, 0.1, 0.05), _random_tables("pred"))
    _finite_difference_check(lambda p: cvib.dib_loss(p, b, 0.3, 0.7),
                             _random_tables("pred", "bias"))
    w = tf.constant([[2.0, 1.5, 4.0], [1.0, 3.0, 2.5]], tf.float64)
    imp = tf.constant([[0.3, 0.6, 0.5], [0.2, 0.9, 0.4]], tf.float64)
    shift = tf.constant([[0.1, -0.2, 0.05], [0.0, 0.3, -0.1]], tf.float64)
    for corrected, scale in ((0.0, 1.0), (1.0, 4.5)):
        _finite_difference_check(tdr.dr_loss(b, w, imp, imp, corrected, shift, shift, scale),
                                 _random_tables("pred"))
    q = tf.constant([[0.3, 0.8, 0.55], [0.1, 0.6, 0.7]], tf.float64)
    for corrected in (0.0, 1.0):    # TDR-JL's imputation loss, reversed and in order
        def imputation(p, c=corrected):
            e_hat = tdr.imputed_error(q, tf.sigmoid(tf.reduce_sum(
                tf.gather(p["imp_W"], b.users, batch_dims=1)
                * tf.gather(p["imp_H"], b.items, batch_dims=1), -1)), c)
            return tf.reduce_sum(w * tf.square(0.4 - e_hat), -1)
        _finite_difference_check(imputation, _random_tables("imp"))


def test_logistic_rule_on_a_scripted_sequence():
    # last-batch losses: an epoch above the best counts (never reset), else it is the new best
    rule = tdr.LastBatchRule(1, patience=3)
    seq = [0.5, 0.4, 0.45, 0.3, 0.35, 0.2, 0.36, 0.1]
    done = [bool(rule.update(np.array([x]))[0]) for x in seq]
    assert done == [False] * 6 + [True, True]
    # where the reference rule (stop 5) has counted three non-improving epochs and goes on
    ref = ReferenceRule(1)
    assert not any(bool(ref.update(np.array([x]))[0]) for x in seq)


def test_sgd_momentum_two_steps_by_hand():
    state = StepState({"x": tf.constant([1.0])}, new_opt({"x": tf.constant([1.0])},
                                                         {"g": Group(("x",))}),
                      {"g": Group(("x",))}, {}, {})
    for _ in range(2):     # loss x^2 / 2, gradient x: buf 1 -> x 0.9; buf 0.9 + 0.9 -> x 0.72
        tdr.sgd_momentum(state, "g", lambda p: 0.5 * tf.square(p["x"]), 0.1, 0.9)
    assert state.params["x"].numpy()[0] == pytest.approx(0.72, rel=1e-6)


class _Recorder:
    def __init__(self):
        self.seen = []

    def update(self, loss):
        self.seen.append(np.asarray(loss).copy())
        return np.zeros(len(loss), bool)


def _first_row(state, b):
    return tf.cast(b.rows[:, 0], tf.float32)


@pytest.mark.parametrize("reduce", ["sum", "last"])
def test_a_stage_feeds_its_rule_the_last_batch_or_the_sum(reduce):
    n, batch = 10, 3
    consts = {"train_user": tf.zeros([2, n], tf.int32), "train_item": tf.zeros([2, n], tf.int32),
              "train_label": tf.zeros([2, n])}
    stage = Stage("probe", _first_row, {"g": Group(("x",))}, batch, reduce=reduce)
    rule = _Recorder()
    run_stage(stage, {"x": np.zeros(2, np.float32)}, {}, consts,
              [np.random.RandomState(1), np.random.RandomState(2)], n, 1, 1, rule, max_epochs=2)
    again = [np.random.RandomState(1), np.random.RandomState(2)]
    for seen in rule.seen:
        order = np.stack([r.permutation(n)[:9].reshape(3, 3) for r in again], 1)  # [nb, R, B]
        expect = order[-1, :, 0] if reduce == "last" else order[:, :, 0].sum(0)
        np.testing.assert_array_equal(seen, expect)


def _propensity():
    # k = 1 features: user 0 -> 0, user 1 -> 1; the logistic model a = (1, 0), b = 0: p_hat is
    # sigmoid(0) = 1/2 for user 0 and sigmoid(1) for user 1, whatever the item
    return {"tprop_W": tf.constant([[[0.0], [1.0]]]), "tprop_H": tf.constant([[[0.0], [0.0]]]),
            "tprop_a": tf.constant([[1.0, 0.0]]), "tprop_b": tf.constant([0.0])}


def _train_list_run(corrected):
    train = {"user": np.array([[1, 0]]), "item": np.array([[0, 1]])}
    return SimpleNamespace(problem=SimpleNamespace(train=train), num_items=2, corrected=corrected)


def test_reference_form_takes_weights_in_row_major_order_of_the_observed_cells():
    prop = _propensity()
    rows = _ints([0])          # the training list's first pair is (1, 0); row-major first is (0, 1)
    ref = tdr.BinaryTDRJL()._consts(_train_list_run(False), prop)
    fixed = tdr.BinaryTDRJL()._consts(_train_list_run(True), prop)
    assert tdr.observed_weight(ref, rows, 0.1).numpy()[0, 0] == pytest.approx(2.0)
    assert tdr.observed_weight(fixed, rows, 0.1).numpy()[0, 0] == pytest.approx(1 / sig(1))
    # values below gamma are set to gamma: 1/2 -> 0.6
    assert tdr.observed_weight(ref, rows, 0.6).numpy()[0, 0] == pytest.approx(1 / 0.6)


def test_targeted_epsilon_by_hand():
    gamma, y_bar = 0.6, 0.4
    consts = {**_propensity(), "cell_user": _ints([0, 1]), "cell_item": _ints([0, 1]),
              "y_bar": tf.constant([y_bar])}
    params = {**_tables(tf.float32), "tmle_ab": tf.zeros([1]), "tmle_bb": tf.zeros([1])}
    hp = {"gamma": tf.constant(gamma), "corrected": tf.constant(0.0), "lr": tf.constant(0.05),
          "lam": tf.constant(0.0), "direct_scale": tf.constant(1.0)}
    state = StepState(params, new_opt(params, {"pred": PRED}), {"pred": PRED}, hp, consts)
    b = _batch(**OBS, dtype=tf.float32)
    term = tdr._tdr_step(state, b)
    w = [1 / gamma, 1 / sig(1)]                 # user 0's 1/2 clipped up to gamma
    q = [sig(1), 0.5]                           # before the update
    alpha = [bce(q[0], 1) - bce(q[0], y_bar), bce(q[1], 0) - bce(q[1], y_bar)]
    beta = [x - 1 for x in w]
    eps = (alpha[0] * beta[0] + alpha[1] * beta[1]) / (beta[0] ** 2 + beta[1] ** 2)
    assert tdr.targeted_epsilon(state.params).numpy()[0, 0] == pytest.approx(eps, rel=1e-5)
    assert term.numpy()[0] == pytest.approx(w[0] * bce(q[0], 1) + w[1] * bce(q[1], 0), rel=1e-5)
    assert not np.allclose(state.params["pred_W"].numpy(), params["pred_W"].numpy())


# ---- tiny end-to-end fits ------------------------------------------------------------------

NU, NI = 8, 8


def _problem(prior=(1, 0, 1, 1)):
    rng = np.random.default_rng(3)
    cells = [rng.choice(NU * NI, 16, replace=False) for _ in range(2)]
    train = {"user": np.stack([c // NI for c in cells]).astype(np.int32),
             "item": np.stack([c % NI for c in cells]).astype(np.int32),
             "rating": rng.integers(0, 2, (2, 16)).astype(np.float32)}
    val = {"user": train["user"][:, :4], "item": train["item"][:, :4],
           "rating": train["rating"][:, :4]}
    test = {"user": np.arange(12) % NU, "item": np.arange(12) % NI,
            "rating": (np.arange(12) % 3 == 0).astype(np.float32)}
    split = SimpleNamespace(test_prior=SimpleNamespace(rating=np.asarray(prior, np.float32)))
    return FitProblem(NU, NI, (1, 2), train, val, test, test, [split, split])


def _fit(method, problem, stopping="reference", forms="reference"):
    values = {"dim": 2, "lam": 1e-3, "lr": 0.05, "batch_size": 4, "gamma": 0.1,
              "uniform_ratio": 2, "alpha": 0.5}
    settings = EpochSettings(stopping=stopping, patience=2, max_epochs=4, forms=forms)
    return method().fit(problem, values, settings).scores


@pytest.mark.parametrize("cls", [cvib.BinaryDIB, tdr.BinaryTDRJL])
@pytest.mark.parametrize("stopping", ["reference", "validation"])
def test_tiny_fits_are_deterministic(cls, stopping):
    forms = "corrected" if stopping == "validation" else "reference"
    a = _fit(cls, _problem(), stopping, forms)
    b = _fit(cls, _problem(), stopping, forms)
    assert a.shape == (2, 12) and np.all(np.isfinite(a)) and np.all((a > 0) & (a < 1))
    np.testing.assert_array_equal(a, b)


def test_tdr_reads_the_mcar_slice_and_tdr_jl_does_not():
    assert tdr.BinaryTDR.leaks and tdr.BinaryTDR.uses_mcar and not tdr.BinaryTDRJL.leaks
    one, other = _problem((1, 1, 1, 1)), _problem((0, 0, 0, 0))
    assert not np.array_equal(_fit(tdr.BinaryTDR, one), _fit(tdr.BinaryTDR, other))
    np.testing.assert_array_equal(_fit(tdr.BinaryTDRJL, one), _fit(tdr.BinaryTDRJL, other))


def test_the_old_names_of_the_forms_are_aliases_of_the_form_option():
    from atrec.methods.registry import resolve

    for name, cls in (("tdr", tdr.BinaryTDR), ("tdr-jl", tdr.BinaryTDRJL)):
        assert resolve(f"{name}-textbook", "binary-icde24") == (cls, {"form": "corrected"})
        assert resolve(f"{name}-coded", "binary-clean") == (cls, {"form": "coded"})
        assert resolve(name, "binary-clean") == (cls, {"form": "corrected"})
        assert resolve(name, "binary-icde24") == (cls, {"form": "coded"})
