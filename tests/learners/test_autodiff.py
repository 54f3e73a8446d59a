"""A learner defined by its loss alone (atrec.learners.autodiff): the loss by hand, autodiff
against MF-IPS's hand-written gradients and against finite differences, and a loss-defined MF-IPS
trained through LearnerMethod to MF-IPS's numbers."""

import numpy as np
import pytest

from atrec.data.synthetic import SMALL_SIZE, make_synthetic
from atrec.learners import mf
from atrec.learners.autodiff import LossGradients, loss_learner, mf_ips_loss
from atrec.learners.base import MF, mf_scores
from atrec.methods.base import DIM, LAM
from atrec.methods.learner_method import LearnerMethod
from atrec.methods.mf_ips import MFIPS
from atrec.run_settings import TrainSettings
from atrec.runtime import tf
from atrec.testing.methods import fit_problem


def _learner():
    return loss_learner("mf-autodiff", mf_ips_loss, mf.predict, mf.init_params, mf_scores,
                        factors=MF.factors, bias_slots=mf.MF_BIAS_SLOTS)


@pytest.mark.parametrize("snips, data_term", [(1.0, (1 * 1 + 3 * 1) / 4), (0.0, (1 + 3) / 2)])
def test_mf_ips_loss_by_hand(snips, data_term):
    # one user, two items, dim 1: predictions 1*1 = 1 and 1*2 = 2 against labels 0 and 1
    params = tuple(tf.constant(x, tf.float32) for x in
                   ([[[1.0]]], [[[1.0], [2.0]]], [[0.0]], [[0.0, 0.0]], [0.0]))
    loss = mf_ips_loss(params, tf.constant([[0, 0]]), tf.constant([[0, 1]]),
                       tf.constant([[0.0, 1.0]]), tf.constant([[1.0, 3.0]]), 0.1, snips)
    # L2: lam * (1 + 1 + 4) / 2
    assert loss.numpy()[0] == pytest.approx(data_term + 0.1 * 3.0, rel=1e-6)


def _tiny(dtype=np.float32):
    rng = np.random.default_rng(5)
    params = tuple(tf.constant(p.astype(dtype)) for p in mf.init_params(4, 5, 3, [1, 2]))
    batch = (tf.constant(rng.integers(0, 4, (2, 6)), tf.int32),
             tf.constant(rng.integers(0, 5, (2, 6)), tf.int32),
             tf.constant(rng.integers(1, 6, (2, 6)).astype(dtype)),
             tf.constant(rng.uniform(1, 9, (2, 6)).astype(dtype)))
    return params, batch


@pytest.mark.parametrize("snips", [1.0, 0.0])
def test_autodiff_matches_mf_ips_hand_written_gradients(snips):
    params, batch = _tiny()
    loss, grads = _learner().gradients(params, *batch, 0.05, snips)
    ref_loss, ref_grads = mf.gradients(params, *batch, 0.05, snips)
    np.testing.assert_allclose(loss.numpy(), ref_loss.numpy(), rtol=1e-6)
    for g, h in zip(grads, ref_grads):
        assert g.shape == h.shape
        np.testing.assert_allclose(g.numpy(), h.numpy(), rtol=1e-5, atol=1e-7)


def test_autodiff_matches_finite_differences():
    params, batch = _tiny(np.float64)
    lam, snips, h = 0.05, 1.0, 1e-6
    _, grads = LossGradients(mf_ips_loss)(params, *batch, lam, snips)

    def total(ps):
        return float(tf.reduce_sum(mf_ips_loss(ps, *batch, lam, snips)))

    for k, idx in [(0, (0, 1, 2)), (1, (1, 4, 0)), (2, (0, 3)), (3, (1, 2)), (4, (1,))]:
        up, down = params[k].numpy().copy(), params[k].numpy().copy()
        up[idx] += h
        down[idx] -= h
        swap = lambda x, k=k: tuple(tf.constant(x) if j == k else p
                                    for j, p in enumerate(params))
        num = (total(swap(up)) - total(swap(down))) / (2 * h)
        assert grads[k].numpy()[idx] == pytest.approx(num, rel=1e-6, abs=1e-7)


def test_an_array_the_loss_does_not_read_gets_a_zero_gradient():
    params, batch = _tiny()
    const = tf.constant([[3.0, 4.0], [5.0, 6.0]])
    def loss(p, *a):       # p[4] is not read
        return mf_ips_loss(p[:4] + p[5:], *a)

    _, grads = LossGradients(loss)(params[:4] + (const,) + params[4:], *batch, 0.01, 1.0)
    assert grads[4].shape == const.shape and not np.any(grads[4].numpy())


def test_learners_of_one_loss_compare_equal():
    assert _learner() == _learner() and hash(_learner()) == hash(_learner())
    other = loss_learner("mf-autodiff", lambda *a: mf_ips_loss(*a), mf.predict,
                         mf.init_params, mf_scores)
    assert other != _learner()
    with pytest.raises(TypeError, match="loss must be a function"):
        loss_learner("x", 3.0, mf.predict, mf.init_params, mf_scores)


class AutodiffMFIPS(LearnerMethod):
    """MF-IPS written as its loss alone."""

    name = "mf-ips-autodiff-test"
    label = "MF-IPS (autodiff)"
    description = "MF-IPS by autodiff (test)"
    reference = "test"
    hyperparameters = (DIM, LAM)

    def learner(self, params, problem=None):
        return _learner()


@pytest.fixture(scope="module")
def problem():
    return fit_problem(make_synthetic(**SMALL_SIZE, seed=0).data, MFIPS, [0, 1])


@pytest.mark.parametrize("loss", ["snips", "ips"])
def test_loss_defined_mf_ips_trains_to_mf_ips_numbers(problem, loss):
    settings = TrainSettings(steps=30, loss=loss)
    params = {"dim": 5, "lam": 1e-3}
    got = AutodiffMFIPS().fit(problem, params, settings)
    ref = MFIPS().fit(problem, params, settings)
    np.testing.assert_allclose(got.selection_trace, ref.selection_trace, rtol=1e-4)
    np.testing.assert_allclose(got.mse, ref.mse, rtol=1e-4)
    np.testing.assert_allclose(got.mae, ref.mae, rtol=1e-4)
    np.testing.assert_allclose(got.scores, ref.scores, rtol=1e-3, atol=1e-4)
