"""mf-umi: atrec's method contract (one line: ``check_method``), hand-written gradients against
autodiff, gamma = 0 is MF-IPS, user means by hand, short real fits (alone and with AT) that are
finite and repeatable, registration."""

from importlib import metadata

import numpy as np
import pytest
from atrec_example_umi import MFUMI, MFUMIAutodiff
from atrec_example_umi import learner as umi

from atrec.data.synthetic import SMALL_SIZE, make_synthetic
from atrec.experiments.inputs import stack_inputs
from atrec.learners import mf
from atrec.learners.base import MF, SALT_FIT, StepContext, uniform_cells
from atrec.methods.base import FitProblem
from atrec.run_settings import TrainSettings
from atrec.runtime import tf
from atrec.testing import check_method
from atrec.testing.data import small_data
from atrec.testing.methods import fit as checks_fit

NU, NI, DIM, B = 5, 4, 3, 7


def test_keeps_atrecs_method_contract():
    """Every check atrec makes of a method (shapes, determinism, stacking, the record, bad
    hyperparameters, AT), as a plug-in author runs them: one line."""
    check_method(MFUMI)


def _tiny(gamma):
    """Two replicas of a 5 x 4 problem, a batch of 7 observed ratings, a step context."""
    rng = np.random.default_rng(3)
    U, V, bu, bi, b = mf.init_params(NU, NI, DIM, [1, 2])
    means = rng.uniform(1, 5, (2, NU)).astype(np.float32)
    params = tuple(tf.constant(p) for p in
                   (U, V, bu, bi, means, np.asarray(gamma, np.float32), b))
    batch = (tf.constant(rng.integers(0, NU, (2, B)), tf.int32),
             tf.constant(rng.integers(0, NI, (2, B)), tf.int32),
             tf.constant(rng.integers(1, 6, (2, B)), tf.float32),
             tf.constant(rng.uniform(1, 9, (2, B)), tf.float32))
    ctx = StepContext(tf.constant([11, 12], tf.int64), tf.constant(4), SALT_FIT, NU, NI)
    return params, batch, ctx


@pytest.mark.parametrize("snips", [1.0, 0.0])
def test_hand_written_gradients_match_autodiff(snips):
    params, (users, items, labels, weights), ctx = _tiny([0.7, 0.2])
    lam = 0.05
    U, V, bu, bi, means, gamma, b = params
    trained = [U, V, bu, bi, b]
    with tf.GradientTape() as tape:
        tape.watch(trained)
        p = (U, V, bu, bi, b)
        err2 = (mf.predict(p, users, items) - labels) ** 2
        denom = (tf.reduce_sum(weights, 1) if snips else tf.cast(B, tf.float32))
        ips = tf.reduce_sum(err2 * weights, 1) / denom
        cu, ci = uniform_cells(ctx, B)
        dev = mf.predict(p, cu, ci) - tf.gather(means, cu, batch_dims=1)
        imputation = gamma * tf.reduce_mean(dev * dev, 1)
        l2 = sum(tf.nn.l2_loss(x[r]) for x in (U, V, bu, bi) for r in range(2))
        total = tf.reduce_sum(ips + imputation) + lam * l2
    auto = tape.gradient(total, trained)
    loss, grads = umi.gradients(params, users, items, labels, weights, lam, snips, ctx)
    assert float(tf.reduce_sum(loss)) == pytest.approx(float(total), rel=1e-5)
    gU, gV, gbu, gbi, gmeans, ggamma, gb = grads
    for a, g in zip(auto, (gU, gV, gbu, gbi, gb)):
        np.testing.assert_allclose(a.numpy(), g.numpy(), rtol=1e-4, atol=1e-6)
    assert not np.any(gmeans.numpy()) and not np.any(ggamma.numpy())   # constants stay put


@pytest.mark.parametrize("snips", [1.0, 0.0])
def test_loss_defined_learner_matches_the_hand_written_one(snips):
    """The second way in: the loss alone, differentiated by TensorFlow, gives the hand-written
    loss and gradients; the constants get a zero gradient."""
    params, batch, ctx = _tiny([0.7, 0.2])
    auto = umi.make_autodiff_learner(None, 0.7)
    loss, grads = auto.gradients(params, *batch, 0.05, snips, ctx)
    ref_loss, ref_grads = umi.gradients(params, *batch, 0.05, snips, ctx)
    np.testing.assert_allclose(loss.numpy(), ref_loss.numpy(), rtol=1e-6)
    for g, h in zip(grads, ref_grads):
        np.testing.assert_allclose(g.numpy(), h.numpy(), rtol=1e-4, atol=1e-6)
    assert not np.any(grads[4].numpy()) and not np.any(grads[5].numpy())


def test_gamma_zero_is_mf_exactly():
    params, batch, ctx = _tiny([0.0, 0.0])
    loss, grads = umi.gradients(params, *batch, 0.01, 1.0, ctx)
    mf_loss, mf_grads = mf.gradients(umi.mf_part(params), *batch, 0.01, 1.0)
    np.testing.assert_array_equal(loss.numpy(), mf_loss.numpy())
    for g, h in zip(umi.mf_part(grads), mf_grads):
        np.testing.assert_array_equal(g.numpy(), h.numpy())


def test_user_means_by_hand():
    users = np.array([[0, 0, 2], [1, 1, 1]])
    ratings = np.array([[1.0, 3.0, 5.0], [2.0, 2.0, 5.0]])
    np.testing.assert_allclose(umi.user_means(users, ratings, 4),
                               [[2, 3, 5, 3], [3, 3, 3, 3]])


def test_learner_without_a_problem_cannot_init():
    learner = MFUMI().learner({"dim": 5, "lam": 1e-3, "gamma": 0.1})
    assert learner.takes_context and learner == MFUMI().learner({"gamma": 0.5})
    with pytest.raises(ValueError, match="user means"):
        learner.init(NU, NI, DIM, [0])


@pytest.fixture(scope="module")
def problem():
    """SMALL_SIZE synthetic data, item propensities, split seeds 0 and 1."""
    data = make_synthetic(**SMALL_SIZE, seed=0).data
    inp = stack_inputs(data, "item", [0, 1])
    full = inp.splits[0].test_full
    return FitProblem(data.num_users, data.num_items, (0, 1), inp.train, inp.val, inp.test,
                      {"user": full.user, "item": full.item, "rating": full.rating}, inp.splits)


SHORT = TrainSettings(steps=20)


def test_short_fit_is_finite_and_repeatable(problem):
    params = {"dim": 5, "lam": 1e-3, "gamma": 0.3}
    first = MFUMI().fit(problem, params, SHORT)
    first.check(problem.replicas, len(problem.test_full["user"]))
    assert np.isfinite(first.mae).all() and np.isfinite(first.mse).all()
    assert np.isfinite(first.scores).all()
    again = MFUMI().fit(problem, params, SHORT)
    for name in ("mae", "mse", "best_step", "selection_trace", "scores"):
        np.testing.assert_array_equal(getattr(first, name), getattr(again, name))
    mf_run = MFUMI().fit(problem, {**params, "gamma": 0.0}, SHORT)
    assert not np.array_equal(first.selection_trace, mf_run.selection_trace)


def test_fit_with_gamma_zero_is_mf_ips_on_the_same_schedule(problem):
    """gamma = 0 trains MF exactly: same initial draws, same batches, zero imputation."""
    seeds = list(problem.seeds)
    got = MFUMI().fit(problem, {"dim": 5, "lam": 1e-3, "gamma": 0.0}, SHORT)
    pos = mf.batch_positions(SHORT, problem.train["user"].shape[1], seeds)
    ref = mf.fit(mf.init_params(problem.num_users, problem.num_items, 5, seeds), problem.train,
                 problem.val, problem.test, 1e-3, SHORT, pos, learner=MF,
                 streams=np.asarray(seeds, np.int64), cells=(problem.num_users, problem.num_items))
    np.testing.assert_array_equal(got.selection_trace, ref.val_trace)
    np.testing.assert_array_equal(got.mae, ref.mae)


def test_autodiff_method_trains_to_the_hand_written_numbers(problem):
    params = {"dim": 5, "lam": 1e-3, "gamma": 0.3}
    got = MFUMIAutodiff().fit(problem, params, SHORT)
    ref = MFUMI().fit(problem, params, SHORT)
    np.testing.assert_allclose(got.selection_trace, ref.selection_trace, rtol=1e-4)
    np.testing.assert_allclose(got.mse, ref.mse, rtol=1e-4)


def test_short_fit_with_at_is_finite_and_repeatable():
    """On the data, seeds and AT settings of ``check_method``'s fits, so that it trains the AT
    loop that check compiled (a loop of other sizes costs its own compilation)."""
    first = checks_fit(small_data(), MFUMI, with_at=True)
    again = checks_fit(small_data(), MFUMI, with_at=True)
    assert np.isfinite(first.mae).all() and np.isfinite(first.mse).all()
    np.testing.assert_array_equal(first.mae, again.mae)
    np.testing.assert_array_equal(first.selection_trace, again.selection_trace)


def test_reference_params_cover_coat_and_pass_the_checks():
    table = MFUMI.reference_params["coat"]
    for propensity in ("uniform", "user", "item", "user-item", "nb-uniform", "nb-true"):
        for with_at in (False, True):
            key = f"mf-umi/{propensity}{'-at' if with_at else ''}"
            checked = MFUMI.check_params(table[key], with_at=with_at)
            assert checked["gamma"] == 0.1
    with pytest.raises(ValueError, match="gamma"):
        MFUMI.check_params({"dim": 5, "lam": 1e-3, "gamma": -1.0})


def test_registered_through_its_entry_point():
    eps = [ep for ep in metadata.entry_points(group="atrec.methods") if ep.name == "mf-umi"]
    if not eps:
        pytest.skip("atrec-example-umi is not installed: pip install -e examples/plugin")
    from atrec.methods.registry import METHODS

    entry = METHODS.entry("mf-umi")
    assert entry.cls is MFUMI and entry.origin == "atrec-example-umi"
