import numpy as np
import pytest
import tensorflow as tf

from atrec.learners import layout, mf

RNG = np.random.default_rng(3)


def _params(R=2, nu=7, ni=5, d=3):
    return tuple(tf.constant(p) for p in mf.init_params(nu, ni, d, list(range(R))))


def _batch(R=2, B=6, nu=7, ni=5):
    users = tf.constant(RNG.integers(0, nu, (R, B)), tf.int32)
    items = tf.constant(RNG.integers(0, ni, (R, B)), tf.int32)
    labels = tf.constant(RNG.integers(1, 6, (R, B)), tf.float32)
    weights = tf.constant(1 / RNG.uniform(0.1, 1, (R, B)), tf.float32)
    return users, items, labels, weights


@pytest.mark.parametrize("snips", [1.0, 0.0])
def test_hand_written_gradients_match_autodiff(snips):
    params = _params()
    users, items, labels, weights = _batch()
    lam = 0.05
    with tf.GradientTape() as tape:
        tape.watch(params)
        pred = mf.predict(params, users, items)
        err2 = (pred - labels) ** 2
        if snips:
            data = tf.reduce_sum(err2 * weights, 1) / tf.reduce_sum(weights, 1)
        else:
            data = tf.reduce_sum(err2 * weights, 1) / 6.0
        U, V, bu, bi, _ = params
        reg = lam * (tf.nn.l2_loss(U[0]) + tf.nn.l2_loss(V[0]) + tf.nn.l2_loss(bu[0])
                     + tf.nn.l2_loss(bi[0]) + tf.nn.l2_loss(U[1]) + tf.nn.l2_loss(V[1])
                     + tf.nn.l2_loss(bu[1]) + tf.nn.l2_loss(bi[1]))
        total = tf.reduce_sum(data) + reg
    auto = tape.gradient(total, params)
    loss, grads = mf.gradients(params, users, items, labels, weights, lam, snips)
    assert float(tf.reduce_sum(loss)) == pytest.approx(float(total), rel=1e-5)
    for a, g in zip(auto, grads):
        np.testing.assert_allclose(tf.convert_to_tensor(a).numpy(), g.numpy(), rtol=1e-4, atol=1e-6)


def test_adam_matches_tf1_formula_by_hand():
    p, g = np.array([0.5, -1.0], np.float32), np.array([0.2, -0.4], np.float32)
    (new,), (m,), (v,) = mf.adam((tf.constant(p),), (tf.zeros(2),), (tf.zeros(2),),
                                 (tf.constant(g),), 1, 0.01)
    m_ref, v_ref = 0.1 * g, 0.001 * g * g
    lr_t = 0.01 * np.sqrt(1 - 0.999) / (1 - 0.9)
    np.testing.assert_allclose(m.numpy(), m_ref, rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), v_ref, rtol=1e-6)
    np.testing.assert_allclose(new.numpy(), p - lr_t * m_ref / (np.sqrt(v_ref) + 1e-8), rtol=1e-6)


def test_init_params_follow_the_protocol():
    U, V, bu, bi, b = mf.init_params(400, 300, 10, [0, 1])
    assert U.shape == (2, 400, 10) and V.shape == (2, 300, 10) and b.tolist() == pytest.approx([1e-3] * 2)
    assert np.abs(U).max() <= np.sqrt(6 / 410) and np.abs(U).max() > 0.9 * np.sqrt(6 / 410)
    assert np.abs(V).max() <= np.sqrt(6 / 310)
    assert abs(bu.std() - 0.01) < 0.002 and abs(bi.mean()) < 0.003
    assert not np.array_equal(U[0], U[1])
    np.testing.assert_array_equal(U[1], mf.init_params(400, 300, 10, [1])[0][0])


def test_fixed_batch_positions_are_the_authors_sampler():
    st = mf.TrainSettings(steps=4, batch_size=8)
    pos = mf.batch_positions(st, 100, [0, 1, 2])
    # independent source: NumPy's legacy global sampler, as the authors drew their batches
    np.random.seed(12345)
    expected = np.stack([np.random.choice(np.arange(100), size=8) for _ in range(4)])
    for r in range(3):
        np.testing.assert_array_equal(pos[r], expected)
    per_seed = mf.batch_positions(mf.TrainSettings(steps=4, batch_size=8, batch_seed=None), 100, [0, 1])
    assert not np.array_equal(per_seed[0], per_seed[1])


def _inputs(tiny_data, R=3):
    from atrec.experiments.inputs import stack_inputs

    return stack_inputs(tiny_data, "item", list(range(R)))


def test_fit_selects_the_lowest_validation_step_and_learns(tiny_data):
    inputs = _inputs(tiny_data)
    st = mf.TrainSettings(steps=60, batch_size=32)
    init = mf.init_params(tiny_data.num_users, tiny_data.num_items, 4, [0, 1, 2])
    res = mf.fit(init, inputs.train, inputs.val, inputs.test, 1e-3, st,
                 mf.batch_positions(st, len(inputs.splits[0].train), [0, 1, 2]))
    assert res.val_trace.shape == (60, 3)
    np.testing.assert_array_equal(res.best_step, res.val_trace.argmin(axis=0))
    np.testing.assert_allclose(res.best_val_loss, res.val_trace.min(axis=0))
    # the selected step's test MSE is that of the parameters at that step: recompute it
    test = inputs.test
    init_pred = mf.predict(tuple(tf.constant(p) for p in init),
                           tf.constant(np.broadcast_to(test["user"], (3, len(test["user"])))),
                           tf.constant(np.broadcast_to(test["item"], (3, len(test["item"])))))
    init_mse = ((init_pred.numpy() - test["rating"]) ** 2).mean(axis=1)
    assert (res.mse < init_mse).all()
    assert (res.mae > 0).all()


def _numpy_metrics(params, k, test):
    """Test MSE and MAE of replica ``k`` of ``params``, written out in NumPy."""
    U, V, bu, bi, b = (np.asarray(p[k], np.float64) for p in params)
    u, i = test["user"], test["item"]
    err = (U[u] * V[i]).sum(axis=1) + bu[u] + bi[i] + b - test["rating"]
    return (err ** 2).mean(), np.abs(err).mean()


def test_reported_metrics_are_those_of_the_selected_steps_parameters(tiny_data):
    # a large learning rate overfits: replicas 0 and 1 select an early step, replica 2 the last
    inputs = _inputs(tiny_data)
    st = mf.TrainSettings(steps=80, batch_size=32, learning_rate=0.05)
    init = mf.init_params(tiny_data.num_users, tiny_data.num_items, 4, [0, 1, 2])
    pos = mf.batch_positions(st, len(inputs.splits[0].train), [0, 1, 2])
    res = mf.fit(init, inputs.train, inputs.val, inputs.test, 1e-3, st, pos)
    assert (res.best_step < 79).any() and (res.best_step == 79).any()
    for k, step in enumerate(res.best_step):
        # replay replica k alone up to its selected step: its final parameters are that step's
        one = lambda arrays: {key: a[k:k + 1] for key, a in arrays.items()}  # noqa: E731
        short = mf.TrainSettings(steps=int(step) + 1, batch_size=32, learning_rate=0.05)
        replay = mf.fit(tuple(p[k:k + 1] for p in init), one(inputs.train), one(inputs.val),
                        inputs.test, 1e-3, short, pos[k:k + 1, :step + 1])
        mse, mae = _numpy_metrics(replay.params, 0, inputs.test)
        assert res.mse[k] == pytest.approx(mse, rel=1e-5)
        assert res.mae[k] == pytest.approx(mae, rel=1e-5)
        if step < 79:  # and not the metrics of the final parameters
            assert abs(res.mse[k] - _numpy_metrics(res.params, k, inputs.test)[0]) > 1e-3


def test_replicas_are_independent_of_stacking_and_threads(tiny_data):
    inputs = _inputs(tiny_data)
    st = mf.TrainSettings(steps=30, batch_size=16)
    init = mf.init_params(tiny_data.num_users, tiny_data.num_items, 3, [0, 1, 2])
    pos = mf.batch_positions(st, len(inputs.splits[0].train), [0, 1, 2])
    stacked = mf.fit(init, inputs.train, inputs.val, inputs.test, 1e-3, st, pos, chunk=3)
    single = mf.fit(init, inputs.train, inputs.val, inputs.test, 1e-3, st, pos, chunk=1, threads=2)
    again = mf.fit(init, inputs.train, inputs.val, inputs.test, 1e-3, st, pos, chunk=3)
    np.testing.assert_array_equal(stacked.mse, again.mse)  # a seed fully determines a run
    np.testing.assert_allclose(stacked.mse, single.mse, rtol=1e-5)
    np.testing.assert_allclose(stacked.params[0], single.params[0], rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(stacked.best_step, single.best_step)


def test_tree_summed_predictions_equal_predict():
    params = _params(R=2, nu=9, ni=6, d=7)  # an odd dimension leaves a column out of a pair
    users = tf.constant(RNG.integers(0, 9, (2, 50)), tf.int32)
    items = tf.constant(RNG.integers(0, 6, (2, 50)), tf.int32)
    np.testing.assert_allclose(mf._predict_rows(params, users, items).numpy(),
                               mf.predict(params, users, items).numpy(), rtol=1e-6, atol=1e-7)


def test_ratings_are_ordered_by_user_then_item_within_each_replica():
    user = np.array([[3, 1, 3, 0, 1], [2, 2, 0, 1, 0]])
    item = np.array([[5, 7, 2, 9, 1], [4, 3, 8, 6, 2]])
    rating = np.arange(10, dtype=np.float32).reshape(2, 5)
    out = layout.by_user({"user": user, "item": item, "rating": rating})
    np.testing.assert_array_equal(out["user"], [[0, 1, 1, 3, 3], [0, 0, 1, 2, 2]])
    np.testing.assert_array_equal(out["item"], [[9, 1, 7, 2, 5], [2, 8, 6, 3, 4]])
    np.testing.assert_array_equal(out["rating"], [[3, 4, 1, 2, 0], [9, 7, 8, 6, 5]])
    flat = layout.by_user({"user": user[0], "item": item[0], "rating": rating[0]})
    np.testing.assert_array_equal(flat["rating"], [3, 4, 1, 2, 0])


def test_order_of_the_validation_ratings_does_not_matter(tiny_data):
    inputs = _inputs(tiny_data)
    st = mf.TrainSettings(steps=40, batch_size=32, learning_rate=0.05)
    init = mf.init_params(tiny_data.num_users, tiny_data.num_items, 4, [0, 1, 2])
    pos = mf.batch_positions(st, len(inputs.splits[0].train), [0, 1, 2])
    flip = {key: a[:, ::-1] for key, a in inputs.val.items()}
    a = mf.fit(init, inputs.train, inputs.val, inputs.test, 1e-3, st, pos)
    b = mf.fit(init, inputs.train, flip, inputs.test, 1e-3, st, pos)
    np.testing.assert_array_equal(a.val_trace, b.val_trace)
    np.testing.assert_array_equal(a.mse, b.mse)


@pytest.mark.parametrize("kwargs, message", [
    (dict(steps=0), "steps must be >= 1, got 0"),
    (dict(batch_size=-1), "batch_size must be >= 1, got -1"),
    (dict(learning_rate=0), "learning_rate must be > 0, got 0"),
    (dict(loss="mse"), "unknown loss 'mse'"),
    (dict(batch_seed=-5), "batch_seed must be >= 0 or None, got -5"),
])
def test_settings_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mf.TrainSettings(**kwargs)
