"""Asymmetric tri-training: the sampler's law against the authors' literal procedure, zero
survivors, roles and weights by construction, determinism, other learners, Coat fidelity."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from atrec.data.synthetic import SMALL_SIZE, make_synthetic
from atrec.experiments.inputs import stack_inputs
from atrec.learners import at, mf

TINY = at.ATSettings(pre_steps=4, iterations=2, steps_per_iteration=3, batch_size=64)
LAM, EPS = 1e-3, 0.3


@pytest.fixture(scope="session")
def small():
    """SMALL_SIZE synthetic data stacked for split seeds 0 and 1 (item propensity)."""
    data = make_synthetic(**SMALL_SIZE, seed=0).data
    return data, stack_inputs(data, "item", [0, 1])


def _fit(small, settings=TINY, epsilon=EPS, inits=None, **kw):
    data, inp = small
    inits = inits or at.initial_params(data.num_users, data.num_items, 5, [0, 1])
    return at.fit_at(inits, inp.train, inp.val, inp.test, LAM, epsilon, settings, [0, 1],
                     data.num_users, data.num_items, **kw)


@pytest.fixture(scope="session")
def tiny_run(small):
    return _fit(small)


# --------------------------------------------------------------------------------------------
# settings, seeds, batch positions

@pytest.mark.parametrize("field,value", [("pre_steps", 0), ("resample", "epoch"), ("iterations", -1),
                                         ("steps_per_iteration", 1.5), ("batch_size", 0),
                                         ("candidate_factor", 0), ("learning_rate", 0.0),
                                         ("loss", "mse"), ("batch_seed", -3)])
def test_settings_reject_bad_values(field, value):
    with pytest.raises(ValueError, match=str(value).replace(".", r"\.")):
        at.ATSettings(**{field: value})


def test_settings_record_and_step_count():
    d = at.ATSettings().as_dict()
    assert d["pre_steps"] == 150 and d["iterations"] == 10 and d["batch_seed"] == 12345
    assert at.ATSettings().pl_steps == 100
    assert at.ATSettings(batch_seed=None).as_dict()["batch_seed"] == "per-seed"
    assert at.ATSettings().as_dict()["sampler"] == "survivor-mask"     # in every AT record


def test_pretrain_positions_follow_the_authors_draw_order():
    st = at.ATSettings(pre_steps=3, batch_size=7)
    pos = at.pretrain_positions(st, 50, [4, 9])
    assert pos.shape == (2, 3, 3, 7)
    rs = np.random.RandomState(12345)
    for t in range(3):
        for role in (0, 1, 2):  # idx (A3), idx1 (A1), idx2 (A2): separate calls, in this order
            expected = rs.randint(0, 50, 7)
            assert np.array_equal(pos[0, t, role], expected)
            assert np.array_equal(pos[1, t, role], expected)  # fixed seed: shared by all seeds
    per_seed = at.pretrain_positions(at.ATSettings(pre_steps=3, batch_size=7, batch_seed=None),
                                     50, [4, 9])
    assert np.array_equal(per_seed[1, 0, 0], np.random.RandomState(9).randint(0, 50, 7))
    assert not np.array_equal(per_seed[0], per_seed[1])


def test_initial_params_are_three_independent_draws():
    a1, a2, a3 = at.initial_params(6, 4, 3, [0, 2])
    assert at.at_init_seeds(2) == (6, 7, 8)
    assert np.array_equal(a3[0][1], mf.init_params(6, 4, 3, [8])[0][0])
    assert np.array_equal(a1[1][0], mf.init_params(6, 4, 3, [0])[1][0])
    assert not np.allclose(a1[0], a2[0]) and not np.allclose(a2[0], a3[0])
    with pytest.raises(ValueError, match="-1"):
        at.at_init_seeds(-1)


# --------------------------------------------------------------------------------------------
# the sampler against the authors' literal procedure

NU, NI, DIM, N_TRAIN = 12, 10, 2, 12      # 120 pairs, 5 * 12 = 60 candidates per draw


def _tiny_models():
    p1 = mf.init_params(NU, NI, DIM, [101])
    p2 = mf.init_params(NU, NI, DIM, [202])
    p1 = (p1[0] * 20, p1[1] * 20, p1[2] * 10, p1[3] * 10, p1[4])  # spread the discrepancies
    U1, V1, bu1, bi1, b1 = (x[0].astype(np.float64) for x in p1)
    U2, V2, bu2, bi2, b2 = (x[0].astype(np.float64) for x in p2)
    pred1 = U1 @ V1.T + bu1[:, None] + bi1[None, :] + b1
    pred2 = U2 @ V2.T + bu2[:, None] + bi2[None, :] + b2
    return p1, p2, pred1, np.abs(pred1 - pred2)


def _epsilon(absdiff, n_agree):
    """A threshold midway between the n-th and (n+1)-th smallest |A1 - A2| (no borderline pair)."""
    s = np.sort(absdiff.ravel())
    return float((s[n_agree - 1] + s[n_agree]) / 2)


def _authors_draws(absdiff, eps, batch, trials, seed):
    """The authors' procedure, literally: the list of all pairs, 5 x n_train candidates with
    replacement, the filter, three batches with replacement from the survivors."""
    rng = np.random.default_rng(seed)
    all_pairs = np.array([(u, i) for u in range(NU) for i in range(NI)])
    out = []
    for _ in range(trials):
        cand = all_pairs[rng.choice(len(all_pairs), 5 * N_TRAIN)]
        surv = cand[absdiff[cand[:, 0], cand[:, 1]] <= eps]
        if len(surv) == 0:
            out.append((0, None))
            continue
        batches = np.stack([surv[rng.choice(len(surv), batch)] for _ in range(3)])
        out.append((len(surv), batches[..., 0] * NI + batches[..., 1]))
    return out


def _atrec_draws(p1, p2, eps, batch, trials):
    """atrec's sampler: ``trials`` draws = 20 replicas (distinct stream seeds) x steps."""
    R = 20
    rep = lambda p: tuple(tf.constant(np.repeat(x, R, axis=0)) for x in p)
    t1, t2 = rep(p1), rep(p2)
    seeds = tf.constant(np.arange(1000, 1000 + R, dtype=np.int64))

    @tf.function(jit_compile=True)
    def draw(step):
        return at.draw_pseudo_batches(at.MF, t1, at.MF, t2, seeds, step, eps, 5 * N_TRAIN, 3,
                                      batch, NU, NI)

    out = []
    for step in range(trials // R):
        users, items, labels, k, disc = (x.numpy() for x in draw(tf.constant(step)))
        for r in range(R):
            out.append((int(k[r]), users[r] * NI + items[r] if k[r] else None,
                        labels[r], disc[r], users[r], items[r]))
    return out


def _distinct(draws, which):
    return np.array([len(np.unique(b[which])) for _, b, *_ in draws if b is not None])


def _same_law(a, b, alpha=1e-3):
    """Chi-square test of homogeneity of two samples of small integers (sparse cells pooled)."""
    values = np.union1d(a, b)
    table = np.array([[np.sum(a == v) for v in values], [np.sum(b == v) for v in values]])
    keep = table.sum(axis=0) >= 10
    table = np.column_stack([table[:, keep], table[:, ~keep].sum(axis=1)])
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return True
    return stats.chi2_contingency(table)[1] > alpha


@pytest.mark.parametrize("n_agree,batch", [(36, 16), (3, 8)], ids=["many", "few"])
def test_sampler_has_the_authors_distribution(n_agree, batch):
    p1, p2, pred1, absdiff = _tiny_models()
    eps = _epsilon(absdiff, n_agree)
    trials = 2000
    ours = _atrec_draws(p1, p2, eps, batch, trials)
    ref = _authors_draws(absdiff, eps, batch, trials, seed=7)
    agree = np.flatnonzero(absdiff.ravel() <= eps)
    # every pseudo-label is an agreeing pair, labelled with A1's prediction (a float)
    for k, pairs, labels, disc, users, items in ours:
        if pairs is not None:
            assert np.isin(pairs, agree).all()
            np.testing.assert_allclose(labels, pred1[users, items], rtol=1e-5, atol=1e-5)
    # survivor counts: Binomial(60, |agree| / 120) for both
    k_ours = np.array([d[0] for d in ours])
    k_ref = np.array([d[0] for d in ref])
    assert _same_law(k_ours, k_ref)
    assert stats.ks_2samp(k_ours, k_ref).pvalue > 1e-3
    assert abs(k_ours.mean() - 60 * n_agree / 120) < 4 * np.sqrt(60 * n_agree / 120 / trials) + 0.1
    # duplicates inside A3's batch, and across the three batches (one shared survivor pool)
    for which in (0, slice(None)):
        a, b = _distinct(ours, which), _distinct(ref, which)
        assert _same_law(a, b)
        assert stats.ks_2samp(a, b).pvalue > 1e-3
    # per-pair frequencies of one batch element (independent across trials)
    first = lambda draws: np.array([b[0, 0] for _, b, *_ in draws if b is not None])
    assert _same_law(first(ours), first(ref))
    # the mean discrepancy is over all pairs (the authors' candidate mean estimates it)
    disc = np.array([d[3] for d in ours])
    np.testing.assert_allclose(disc, absdiff.mean(), rtol=1e-5)


def test_sampler_test_detects_a_wrong_procedure():
    """The statistics above have power: i.i.d. draws from the agreeing pairs (no finite pool of
    survivors) give more distinct pairs per batch than the authors' procedure."""
    *_, absdiff = _tiny_models()
    eps = _epsilon(absdiff, 3)
    ref = _authors_draws(absdiff, eps, 8, 2000, seed=7)
    rng = np.random.default_rng(3)
    agree = np.flatnonzero(absdiff.ravel() <= eps)
    iid = np.array([len(np.unique(rng.choice(agree, 8))) for _, b in ref if b is not None])
    assert not _same_law(iid, _distinct(ref, 0))


# --------------------------------------------------------------------------------------------
# the training loop

def test_result_shapes_and_best_step(tiny_run):
    res = tiny_run
    steps = TINY.pl_steps
    assert set(res.trace) == set(at.TRACE_NAMES)
    assert all(v.shape == (steps, 2) for v in res.trace.values())
    assert res.trace["n_pseudo"].dtype == np.int64 and (res.trace["n_pseudo"] > 0).all()
    best = np.argmin(res.trace["val_loss"], axis=0)
    assert np.array_equal(res.best_step, best)
    assert np.array_equal(res.mae, res.trace["test_mae"][best, [0, 1]])
    assert np.array_equal(res.mse, res.trace["test_mse"][best, [0, 1]])
    assert res.params[0].shape == (2, 200, 5) and res.params[4].shape == (2,)
    assert all(np.array_equal(a, b) for a, b in zip(res.params, res.all_params[2]))
    assert np.isfinite(res.trace["pseudo_loss"]).all()
    # 5 x |train| candidates: survivors never exceed them
    assert res.trace["n_pseudo"].max() <= 5 * 2700


def test_resampling_once_per_iteration_keeps_the_pool(small, tiny_run):
    """The paper's Algorithm 1: one pool per iteration, so the survivor count and the mean
    discrepancy are constant inside an iteration (3 steps here) and change between them."""
    res = _fit(small, settings=dataclasses.replace(TINY, resample="iteration"))
    for name in ("n_pseudo", "discrepancy"):
        per_iteration = res.trace[name].reshape(2, 3, 2)
        assert (per_iteration == per_iteration[:, :1]).all()
    assert (res.trace["discrepancy"][0] != res.trace["discrepancy"][3]).all()
    # its first step is the authors' first step (same pool, same batches)
    for name in at.TRACE_NAMES:
        np.testing.assert_allclose(res.trace[name][0], tiny_run.trace[name][0], rtol=1e-5)
    assert not np.allclose(res.trace["val_loss"][1:], tiny_run.trace["val_loss"][1:])
    assert at.ATSettings(resample="iteration").as_dict()["resample"] == "iteration"


def test_same_seeds_same_numbers_and_chunking_changes_nothing(small, tiny_run):
    again = _fit(small)
    split = _fit(small, chunk=1, threads=2)
    for other in (again, split):
        for name in at.TRACE_NAMES:
            np.testing.assert_allclose(other.trace[name], tiny_run.trace[name], rtol=1e-5)
        assert np.array_equal(other.trace["n_pseudo"], tiny_run.trace["n_pseudo"])
    for name in at.TRACE_NAMES:
        assert np.array_equal(again.trace[name], tiny_run.trace[name], equal_nan=True)


def _pretrained(small, inits, settings):
    """A1, A2, A3 after pre-training alone, by :func:`mf.fit` on the authors' batches:
    A1 and A2 with the training weights 1/P, A3 with weights 1."""
    _data, inp = small
    pos = at.pretrain_positions(settings, inp.train["user"].shape[1], [0, 1])
    mf_settings = mf.TrainSettings(steps=settings.pre_steps, batch_size=settings.batch_size)
    ones = {**inp.train, "weight": np.ones_like(inp.train["weight"])}
    out = []
    for role, train in ((1, inp.train), (2, inp.train), (0, ones)):
        init = inits[(role - 1) % 3]
        out.append(mf.fit(init, train, inp.val, inp.test, LAM, mf_settings,
                          np.ascontiguousarray(pos[:, :, role])).params)
    return out


def test_zero_survivors_update_nothing_and_roles_use_their_weights(small):
    data, inp = small
    assert inp.train["weight"].std() > 0.1       # item propensities: weights really differ
    inits = at.initial_params(data.num_users, data.num_items, 5, [0, 1])
    res = _fit(small, epsilon=1e-12, inits=inits)
    assert (res.trace["n_pseudo"] == 0).all()
    assert np.isnan(res.trace["pseudo_loss"]).all()
    assert (res.trace["discrepancy"] > 0).all()
    val = res.trace["val_loss"]
    assert np.array_equal(val, np.broadcast_to(val[0], val.shape))   # A3 never moved
    assert np.array_equal(res.best_step, [0, 0])
    expected = _pretrained(small, inits, TINY)
    for got, want in zip(res.all_params, expected):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    # A1 trained with weights 1 would be elsewhere: the weights reach A1 and not A3
    unweighted = _pretrained((data, type(inp)(inp.splits, {**inp.train, "weight": np.ones_like(
        inp.train["weight"])}, inp.val, inp.test)), inits, TINY)
    assert not np.allclose(unweighted[0][0], res.all_params[0][0], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(unweighted[2][0], res.all_params[2][0], rtol=1e-4, atol=1e-6)


def test_one_replica_without_survivors_keeps_its_state_bit_for_bit(small):
    """A call of one replica (chunk 1) takes the update's one-replica form: without survivors
    its pseudo-labelling steps change nothing, so twice as many of them end in the same bits,
    and A3's validation loss never moves."""
    data, _ = small
    inits = at.initial_params(data.num_users, data.num_items, 5, [0, 1])
    longer = dataclasses.replace(TINY, iterations=2 * TINY.iterations)
    runs = [_fit(small, settings=s, epsilon=1e-12, inits=inits, chunk=1) for s in (TINY, longer)]
    for res in runs:
        assert (res.trace["n_pseudo"] == 0).all()
        val = res.trace["val_loss"]
        assert np.array_equal(val, np.broadcast_to(val[0], val.shape))
    for got, want in zip(runs[0].all_params, runs[1].all_params):
        assert all(np.array_equal(a, b) for a, b in zip(got, want))


def test_replicas_without_survivors_do_not_disturb_the_others(small):
    """Replica 1's A2 starts 10 rating points above its A1, so nothing survives there, while
    replica 0 labels freely; replica 0 matches a run of its own."""
    data, inp = small
    a1, a2, a3 = at.initial_params(data.num_users, data.num_items, 5, [0, 1])
    b = a2[4].copy()
    b[1] += 10.0
    inits = (a1, a2[:4] + (b,), a3)
    res = _fit(small, inits=inits)
    assert (res.trace["n_pseudo"][:, 1] == 0).all() and (res.trace["n_pseudo"][:, 0] > 0).all()
    one = lambda x: tuple(p[:1] for p in x)
    alone = at.fit_at(tuple(one(x) for x in inits), *({k: v[:1] for k, v in d.items()}
                                                     for d in (inp.train, inp.val)),
                      inp.test, LAM, EPS, TINY, [0], data.num_users, data.num_items)
    assert np.array_equal(alone.trace["n_pseudo"][:, 0], res.trace["n_pseudo"][:, 0])
    np.testing.assert_allclose(alone.trace["val_loss"][:, 0], res.trace["val_loss"][:, 0],
                               rtol=1e-5)


# --------------------------------------------------------------------------------------------
# other learners in the three roles

def _bias_predict(params, users, items):
    bu, bi, b = params
    return tf.gather(bu, users, batch_dims=1) + tf.gather(bi, items, batch_dims=1) + b[:, None]


def _bias_gradients(params, users, items, labels, weights, lam, snips):
    """Loss and hand-written gradients of the weighted loss plus lam * l2 of the bias tables."""
    bu, bi, _b = params
    err = _bias_predict(params, users, items) - labels
    n = tf.cast(tf.shape(weights)[1], tf.float32)
    denom = snips * tf.reduce_sum(weights, 1, keepdims=True) + (1.0 - snips) * n
    g = 2.0 * weights * err / denom
    rep = tf.broadcast_to(tf.range(tf.shape(users)[0])[:, None], tf.shape(users))
    gbu = tf.tensor_scatter_nd_add(lam * bu, tf.stack([rep, users], -1), g)
    gbi = tf.tensor_scatter_nd_add(lam * bi, tf.stack([rep, items], -1), g)
    loss = (mf.weighted_loss(err * err, weights, snips)
            + lam * (tf.reduce_sum(bu * bu, 1) + tf.reduce_sum(bi * bi, 1)) / 2)
    return loss, (gbu, gbi, tf.reduce_sum(g, 1))


BIASES = at.Learner("biases", _bias_predict, _bias_gradients)


def test_another_learner_can_take_a_role(small):
    data, inp = small
    a1, a2, _ = at.initial_params(data.num_users, data.num_items, 5, [0, 1])
    zeros = lambda n: np.zeros((2, n), np.float32)
    biases = (zeros(data.num_users), zeros(data.num_items), np.full(2, 3.0, np.float32))
    res = _fit(small, inits=(a1, a2, biases), learners=(at.MF, at.MF, BIASES))
    assert [p.shape for p in res.params] == [(2, 200), (2, 150), (2,)]
    assert np.isfinite(res.mae).all() and (res.trace["n_pseudo"] > 0).all()
    assert not np.allclose(res.params[0], 0)
    # the biases-only A3 really is what predicts: its test MSE is the one recorded
    bu, bi, b = res.params
    pred = bu[:, inp.test["user"]] + bi[:, inp.test["item"]] + b[:, None]
    last_mse = ((pred - inp.test["rating"]) ** 2).mean(axis=1)
    np.testing.assert_allclose(res.trace["test_mse"][-1], last_mse, rtol=1e-5)


def test_learner_without_factors_gives_the_same_run(small, tiny_run):
    """The one-gather discrepancy of factorised learners equals A1 - A2 by predictions."""
    plain = at.Learner("mf-by-predict", mf.predict, mf.gradients)
    res = _fit(small, learners=(plain, plain, at.MF))
    assert np.array_equal(res.trace["n_pseudo"], tiny_run.trace["n_pseudo"])
    for name in ("val_loss", "discrepancy", "pseudo_loss"):
        np.testing.assert_allclose(res.trace[name], tiny_run.trace[name], rtol=1e-5)


@pytest.mark.parametrize("change,message", [
    ({"epsilon": 0.0}, "epsilon must be > 0"),
    ({"epsilon": float("nan")}, "epsilon must be > 0"),
    ({"seeds": [0]}, "2 replicas, but 1 seeds"),
])
def test_fit_rejects_bad_arguments(small, change, message):
    data, inp = small
    args = {"inits": at.initial_params(data.num_users, data.num_items, 5, [0, 1]),
            "train": inp.train, "val": inp.val, "test": inp.test, "lam": LAM, "epsilon": EPS,
            "settings": TINY, "seeds": [0, 1], "num_users": data.num_users,
            "num_items": data.num_items}
    with pytest.raises(ValueError, match=message):
        at.fit_at(**{**args, **change})


# --------------------------------------------------------------------------------------------
# fidelity on the real Coat data

def test_coat_item_with_at_is_near_the_paper(coat_data):
    """Published item-AT parameters, 5 seeds: the paper reports MAE 0.832, MSE 1.115 and
    nDCG@3 0.293 (Table 1, mean of 20 seeds; atrec's 20-seed mean is 0.836 / 1.131 / 0.293)."""
    from atrec.evaluation.metrics import ndcg_at_k
    from atrec.params.lookup import get_params

    coat = coat_data
    hp, _ = get_params("published", "coat", "item", True)
    seeds = list(range(5))
    inp = stack_inputs(coat, "item", seeds)
    res = at.fit_at(at.initial_params(coat.num_users, coat.num_items, hp.dim, seeds),
                    inp.train, inp.val, inp.test, hp.lam, hp.epsilon, at.ATSettings(), seeds,
                    coat.num_users, coat.num_items)
    assert abs(res.mae.mean() - 0.832) < 0.02
    assert abs(res.mse.mean() - 1.115) < 0.06
    full = inp.splits[0].test_full
    U, V, _, bi, _ = res.params
    ndcg = [ndcg_at_k(full.user, full.rating,
                      (U[r][full.user] * V[r][full.item]).sum(1) + bi[r][full.item], 3, "paper")
            for r in range(5)]
    assert abs(np.mean(ndcg) - 0.293) < 0.01
    assert (res.trace["n_pseudo"] > 0).all()
