"""The survivor mask of all pairs and the lookup of the r-th survivor, against NumPy."""

import numpy as np
import pytest
import tensorflow as tf

from atrec.learners import at, mf, pseudolabels

NU, NI, DIM = 23, 45, 3          # 45 items: two words per user, the second one partly used


def _models(R=2):
    p1 = mf.init_params(NU, NI, DIM, list(range(R)))
    p2 = mf.init_params(NU, NI, DIM, list(range(10, 10 + R)))
    p1 = (p1[0] * 20, p1[1] * 20, p1[2] * 10, p1[3] * 10, p1[4])
    as_tf = lambda p: tuple(tf.constant(x) for x in p)
    absdiff = np.abs(mf.predict(as_tf(p1), *_all_pairs(R)).numpy()
                     - mf.predict(as_tf(p2), *_all_pairs(R)).numpy()).reshape(R, NU, NI)
    return as_tf(p1), as_tf(p2), absdiff


def _all_pairs(R):
    users = np.repeat(np.arange(NU), NI)
    items = np.tile(np.arange(NI), NU)
    return tf.constant(np.tile(users, (R, 1)), tf.int32), tf.constant(np.tile(items, (R, 1)), tf.int32)


PLAIN = at.Learner("mf-by-predict", mf.predict, mf.gradients)


@pytest.mark.parametrize("learner", [at.MF, PLAIN], ids=["factors", "predict"])
@pytest.mark.parametrize("block_entries", [2**20, 7 * 2 * NI], ids=["one-block", "ragged-blocks"])
def test_survivor_mask_counts_and_mean_match_numpy(learner, block_entries):
    p1, p2, absdiff = _models()
    eps = float(np.median(absdiff))
    words, counts, total, mean_abs = pseudolabels.survivors(learner, p1, learner, p2, eps, NU, NI,
                                                            block_entries)
    keep = absdiff <= eps
    bits = (words.numpy()[..., None].view(np.uint32) >> np.arange(32, dtype=np.uint32)) & 1
    np.testing.assert_array_equal(bits.reshape(2, NU, -1)[:, :, :NI], keep)
    assert not bits.reshape(2, NU, -1)[:, :, NI:].any()          # padding items never survive
    np.testing.assert_array_equal(counts.numpy(), keep.sum(axis=2))
    np.testing.assert_array_equal(total.numpy(), keep.sum(axis=(1, 2)))
    np.testing.assert_allclose(mean_abs.numpy(), absdiff.mean(axis=(1, 2)), rtol=1e-5)


# 64 padded items per user: 5 users a block, one replica at a time (5 blocks, the last ragged);
# or 12 users a block (the cap: at least two blocks) and all 4 replicas in one product
@pytest.mark.parametrize("block_entries", [5 * 64, 4 * 12 * 64], ids=["per-replica", "grouped"])
def test_a_replicas_survivors_do_not_depend_on_the_replicas_beside_it(block_entries):
    """Blocks are per replica, so a replica's mask and mean are bit-identical whether it is
    evaluated alone or stacked with others (a resumed run may stack fewer seeds). Compiled
    with XLA, as AT's loops run it: TensorFlow's op-by-op kernels make no such promise (run
    eagerly with oneDNN's options off, atrec's default, a stacked replica's mean differed in
    its last bit)."""
    p1, p2, absdiff = _models(R=4)
    eps = float(np.median(absdiff))
    survivors = tf.function(lambda q1, q2: pseudolabels.survivors(
        at.MF, q1, at.MF, q2, eps, NU, NI, block_entries), jit_compile=True)
    together = survivors(p1, p2)
    for rep in range(4):
        q1, q2 = (tuple(x[rep:rep + 1] for x in p) for p in (p1, p2))
        alone = survivors(q1, q2)
        for a, b in zip(alone, together):
            np.testing.assert_array_equal(a.numpy()[0], b.numpy()[rep])


def test_locate_enumerates_the_survivors_in_row_major_order():
    p1, p2, absdiff = _models()
    eps = float(np.quantile(absdiff, 0.3))
    words, counts, total, _ = pseudolabels.survivors(at.MF, p1, at.MF, p2, eps, NU, NI)
    m = int(total.numpy().max())
    r = np.stack([np.minimum(np.arange(m), t - 1) for t in total.numpy()]).astype(np.int32)
    users, items = (x.numpy() for x in pseudolabels.locate(words, counts, tf.constant(r)))
    for rep in range(2):
        expected = np.flatnonzero(absdiff[rep].ravel() <= eps)
        got = users[rep] * NI + items[rep]
        np.testing.assert_array_equal(got[: len(expected)], expected)


def test_equal_slots_hold_equal_pairs_and_labels_are_a1s():
    """Few survivors and many draws: repeated slots, each always the same agreeing pair."""
    p1, p2, absdiff = _models()
    eps = float(np.sort(absdiff.ravel())[40])
    seeds = tf.constant([5, 6], tf.int64)
    pool = pseudolabels.draw_pool(at.MF, p1, at.MF, p2, seeds, 0, eps, 8, NU, NI)
    users, items, labels, k = (x.numpy() for x in
                               pseudolabels.draw_batches(pool, at.MF, p1, seeds, 0, 3, 64))
    assert (k <= 8).all()
    pred1 = mf.predict(p1, *_all_pairs(2)).numpy().reshape(2, NU, NI)
    for rep in range(2):
        if k[rep] == 0:
            continue
        pairs = users[rep] * NI + items[rep]
        assert (absdiff[rep].ravel()[pairs] <= eps).all()
        assert len(np.unique(pairs)) <= k[rep]                   # at most k distinct slots
        np.testing.assert_allclose(labels[rep], pred1[rep][users[rep], items[rep]], rtol=1e-5)
