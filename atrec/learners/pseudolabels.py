"""AT's pseudo-labels, drawn with the law of the authors' procedure without drawing candidates.

The authors' procedure (docs/protocol.md, "Asymmetric tri-training"): build the list of all
``N = num_users * num_items`` pairs, draw ``C = candidate_factor * n_train`` candidates from it
uniformly with replacement, keep the ``k`` candidates where ``|A1 - A2| <= epsilon`` (in candidate
order, with their multiplicity) and draw batches of ``batch_size`` from that survivor list with
replacement, A1's prediction as the label.

Here (:func:`draw_pool`, built on :func:`survivors`, then :func:`draw_batches`):

1. The survivor set ``S`` (pairs with ``|A1 - A2| <= epsilon``, ``|S|`` of them) is computed
   exactly over all pairs, a block of users at a time (one matrix product per block for
   factorised learners) and stored as a bit mask, 32 items per int32 word. The mean ``|A1 - A2|``
   over all pairs comes out of the same pass.
2. The survivor count is drawn as ``k ~ Binomial(C, |S| / N)`` (:func:`atrec.learners.rng.binomial`).
3. A batch element is a *slot* ``j`` uniform on ``0..k-1`` (independent draws with replacement),
   and slot ``j`` holds the ``r``-th pair of ``S`` in row-major order with
   ``r = floor(u_j * |S|)``, where ``u_j`` is the uniform of counter ``j`` of the pool's slot
   stream (:func:`atrec.learners.rng.uniform01_at`). Equal slots therefore hold equal pairs, within and
   across the three batches, and distinct slots hold independent uniform draws from ``S``.

Why this is the authors' law. Their candidates are i.i.d. uniform over the ``N`` pairs, so each
survives independently with probability ``|S| / N``: ``k ~ Binomial(C, |S| / N)``. Given ``k``,
the survivors are ``k`` i.i.d. draws uniform over ``S`` (a uniform pair conditioned on being in
``S`` is uniform over ``S``), independent of their positions in the list. Their batches pick
positions ``j`` i.i.d. uniform on ``0..k-1`` and take survivor ``j``. In step 3, survivor ``j``
is replaced by slot ``j``'s content: ``k`` i.i.d. uniform draws over ``S`` as well. So ``k``, the
three batches, their duplicates within and across batches, and their labels have exactly the
authors' joint law, for any ``k``, also when a few pairs or none survive (``k = 0``: nothing is
drawn; AT then skips its updates). ``tests/learners/test_at.py`` checks this against a literal
NumPy version of their procedure. What the authors' run has and this one does not is the list of
non-surviving candidates: the mean ``|A1 - A2|`` of their trace is over the ``C`` candidates, an
unbiased estimate (standard error ``sd / sqrt(C)``) of the mean over all pairs reported here.

Cost. The exact count over all pairs is what the law needs (``k`` depends on ``|S|``); it is one
``[items, k_f] x [k_f, users]`` product per step, done in blocks of users that stay in L2 and are
never stored; the product dominates, the bit packing and the mean are a small part (profile:
``docs/performance.md``, "AT sampler notes"). Locating ``3 x batch_size`` survivors is a
bisection over per-user counts and a scan of one user's 32-bit words: microseconds.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from atrec.learners import rng
from atrec.runtime import tf

WORD_BITS = 32
# Entries of one replica's block of |A1 - A2| (users x padded items), 1 MB of float32, the size
# of this CPU's L2, the fastest of the sizes measured (docs/performance.md). The block does not
# depend on the number of replicas, because the product's rounding depends on its width: every
# replica sees the same blocks, and gets the same survivors bit for bit, whichever replicas share
# its compiled call (several share one product when their blocks are small, as on Coat).
BLOCK_ENTRIES = 2**18


class Pool(NamedTuple):
    """A pseudo-label pool of every replica (module doc): the survivor mask ``words``
    ``[R, num_users, n_words]`` int32, survivors per user ``counts`` ``[R, num_users]``, their
    ``total`` ``[R]``, the survivor count ``k`` ``[R]``, the key of the slot contents
    ``slot_keys`` ``[R]`` uint64 and the mean ``|A1 - A2|`` over all pairs ``mean_abs`` ``[R]``."""

    words: tf.Tensor
    counts: tf.Tensor
    total: tf.Tensor
    k: tf.Tensor
    slot_keys: tf.Tensor
    mean_abs: tf.Tensor


def n_words(num_items: int) -> int:
    """Words per user row of the survivor mask."""
    return -(-num_items // WORD_BITS)


def _block_function(l1, p1, l2, p2, group: int, block_users: int, num_users: int,
                    num_items: int):
    """A function ``(first_replica, first_user) -> A1 - A2`` ``[group, n_words * 32,
    block_users]`` (items major, so that the bit packing and the sums run along the contiguous
    user axis) for ``group`` replicas and ``block_users`` users. Rows past the last item and
    columns past the last user are padding; the caller masks them. Factorised learners: the
    factor tables are built once and each block is one matrix product per replica."""
    n_blocks = -(-num_users // block_users)
    padded_items = n_words(num_items) * WORD_BITS
    if l1.factors is not None and l2.factors is not None:
        fu1, fi1 = l1.factors(p1)
        fu2, fi2 = l2.factors(p2)
        fu = tf.concat([fu1, -fu2], axis=-1)
        fu = tf.pad(fu, [[0, 0], [0, n_blocks * block_users - num_users], [0, 0]])
        fi = tf.pad(tf.concat([fi1, fi2], axis=-1), [[0, 0], [0, padded_items - num_items], [0, 0]])
        k = fu.shape[2]

        def by_product(first_replica, first_user):
            block = tf.slice(fu, [first_replica, first_user, 0], [group, block_users, k])
            items = tf.slice(fi, [first_replica, 0, 0], [group, padded_items, k])
            return tf.matmul(items, block, transpose_b=True)
        return by_product

    items = tf.tile(tf.range(num_items)[None, :], [group, block_users])

    def by_predict(first_replica, first_user):
        q1, q2 = ([tf.slice(x, [first_replica] + [0] * (x.shape.rank - 1),
                            [group] + x.shape[1:].as_list()) for x in p] for p in (p1, p2))
        rows = tf.minimum(first_user + tf.range(block_users), num_users - 1)
        users = tf.tile(tf.repeat(rows, num_items)[None, :], [group, 1])
        d = l1.predict(tuple(q1), users, items) - l2.predict(tuple(q2), users, items)
        d = tf.transpose(tf.reshape(d, [group, block_users, num_items]), [0, 2, 1])
        return tf.pad(d, [[0, 0], [0, padded_items - num_items], [0, 0]])
    return by_predict


def _block_users(num_users: int, target: int) -> int:
    """Users per block: a divisor of ``num_users`` in ``[target / 2, target]`` when there is one
    (no ragged last block to mask), else ``target``; at least 1, at most ``num_users``."""
    target = max(1, min(num_users, target))
    bu = _largest_divisor(num_users, target)
    return bu if bu >= target // 2 else target


def _largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of ``n`` that is at most ``max(1, at_most)``."""
    return max(d for d in range(1, max(1, min(n, at_most)) + 1) if n % d == 0)


def _bit(b: int) -> np.int32:
    """The int32 whose only set bit is ``b`` (bit 31: the sign bit)."""
    return np.array(1 << b, np.uint32).view(np.int32)


def survivors(l1, p1, l2, p2, epsilon, num_users: int, num_items: int,
              block_entries: int = BLOCK_ENTRIES):
    """The pairs where ``|A1 - A2| <= epsilon``, as bit words, for every replica.

    Returns ``words`` ``[R, num_users, n_words]`` int32 (bit ``b`` of word ``w`` of user ``u``:
    item ``32 w + b`` survives), ``counts`` ``[R, num_users]`` (survivors per user), ``total``
    ``[R]`` and ``mean_abs`` ``[R]`` (mean ``|A1 - A2|`` over all pairs). ``block_entries``
    bounds ``users x items`` of one replica evaluated at a time; it changes the result only by
    the rounding of the product (the mask can differ where ``|A1 - A2|`` is within float
    rounding of ``epsilon``).

    A block of ``|A1 - A2|`` is laid out ``[replicas, word, bit, user]``: word ``w`` of every
    user of the block is a sum of 32 selects, one loop that XLA vectorises along the users (a
    reduction over a minor axis of 32 bits is much slower: ``docs/performance.md``).
    """
    R = p1[-1].shape[0]
    W = n_words(num_items)
    # at least two blocks of users: with one, XLA drops the loop and fuses the packing into the
    # gathers of :func:`locate`, repeating it for every gathered word (AT on Coat 1.6x slower)
    bu = _block_users(num_users, min(block_entries // (W * WORD_BITS), -(-num_users // 2)))
    group = _largest_divisor(R, block_entries // (bu * W * WORD_BITS))
    n_blocks = -(-num_users // bu)
    ragged = n_blocks * bu != num_users
    block = _block_function(l1, p1, l2, p2, group, bu, num_users, num_items)
    # item 32 w + b exists: one static column per bit, None where all do
    item_ok = [None if WORD_BITS * (W - 1) + b < num_items
               else tf.constant(WORD_BITS * np.arange(W) + b < num_items)[None, :, None]
               for b in range(WORD_BITS)]

    def body(j, words_ta, sums_ta):
        first = (j % n_blocks) * bu
        d = tf.reshape(block((j // n_blocks) * group, first), [group, W, WORD_BITS, bu])
        user_ok = (first + tf.range(bu) < num_users)[None, None, :] if ragged else None
        word = tf.zeros([group, W, bu], tf.int32)
        part = tf.zeros([group, W, bu], tf.float32)
        for bit in range(WORD_BITS):
            ad = tf.abs(d[:, :, bit, :])
            masks = [m for m in (item_ok[bit], user_ok) if m is not None]
            keep = ad <= epsilon
            if masks:  # padding: never a survivor, not in the mean
                ok = functools.reduce(tf.logical_and, masks)
                keep = keep & ok
                ad = tf.where(ok, ad, 0.0)
            word = word + tf.where(keep, _bit(bit), np.int32(0))
            part = part + ad
        return (j + 1, words_ta.write(j, word),
                sums_ta.write(j, tf.reduce_sum(tf.cast(part, tf.float64), axis=[1, 2])))

    n_groups = R // group
    _, words_ta, sums_ta = tf.while_loop(
        lambda j, *_: j < n_groups * n_blocks, body,
        (tf.constant(0), tf.TensorArray(tf.int32, size=n_groups * n_blocks),
         tf.TensorArray(tf.float64, size=n_groups * n_blocks)))
    words = tf.reshape(words_ta.stack(), [n_groups, n_blocks, group, W, bu])
    words = tf.reshape(tf.transpose(words, [0, 2, 1, 4, 3]), [R, n_blocks * bu, W])[:, :num_users]
    sums = tf.reshape(sums_ta.stack(), [n_groups, n_blocks, group])
    abs_sum = tf.reshape(tf.reduce_sum(sums, axis=1), [R])
    counts = tf.reduce_sum(tf.cast(tf.raw_ops.PopulationCount(x=words), tf.int32), axis=-1)
    total = tf.reduce_sum(counts, axis=1)
    mean_abs = tf.cast(abs_sum / float(num_users * num_items), tf.float32)
    return words, counts, total, mean_abs


def _first_above(cum, r):
    """Per row, the first position ``p`` with ``cum[p] > r`` (``cum`` ``[R, n]``
    non-decreasing, ``r`` ``[R, m]``), by ``ceil(log2 n)`` bisection steps of ``m`` gathers;
    ``n - 1`` where none qualifies."""
    n = cum.shape[1]
    lo = tf.zeros_like(r)
    hi = tf.fill(tf.shape(r), n - 1)
    for _ in range(max(1, int(np.ceil(np.log2(n))))):
        # (lo + hi) // 2 of non-negative values; XLA expands a floor division into several
        # instructions per step, which a loop held in memory keeps
        mid = tf.bitwise.right_shift(lo + hi, 1)
        above = tf.gather(cum, mid, batch_dims=1) > r
        hi = tf.where(above, mid, hi)
        lo = tf.where(above, lo, mid + 1)
    return hi


def locate(words, counts, r):
    """The ``r``-th surviving pair (0-based, row-major), ``r`` ``[R, m]`` int32 below the
    replica's total: returns ``users``, ``items`` ``[R, m]`` int32."""
    cum = tf.cumsum(counts, axis=1)
    users = _first_above(cum, r)
    r = r - (tf.gather(cum, users, batch_dims=1) - tf.gather(counts, users, batch_dims=1))
    row = tf.gather(words, users, batch_dims=1)                          # [R, m, W]
    row_cum = tf.cumsum(tf.cast(tf.raw_ops.PopulationCount(x=row), tf.int32), axis=-1)
    w = tf.reduce_sum(tf.cast(row_cum <= r[..., None], tf.int32), axis=-1)
    w = tf.minimum(w, row.shape[-1] - 1)
    word = tf.gather(row, w, batch_dims=2)
    r = r - (tf.gather(row_cum, w, batch_dims=2)
             - tf.cast(tf.raw_ops.PopulationCount(x=word), tf.int32))
    set_bits = tf.bitwise.bitwise_and(
        tf.bitwise.right_shift(word[..., None], tf.range(WORD_BITS, dtype=tf.int32)), 1)
    bit = tf.reduce_sum(tf.cast(tf.cumsum(set_bits, axis=-1) <= r[..., None], tf.int32), -1)
    return users, w * WORD_BITS + tf.minimum(bit, WORD_BITS - 1)


def draw_pool(l1, p1, l2, p2, stream_seeds, step, epsilon, n_candidates: int,
              num_users: int, num_items: int):
    """A pseudo-label pool: the survivor mask of the current A1 and A2, its survivor count
    ``k ~ Binomial(n_candidates, |S| / N)`` and the key of its slot contents.

    ``stream_seeds`` ``[R]`` int64, ``step`` a scalar (the pool's draw step). Returns a
    :class:`Pool`.
    """
    step = tf.cast(step, tf.int64)
    words, counts, total, mean_abs = survivors(l1, p1, l2, p2, epsilon, num_users, num_items)
    q = tf.cast(total, tf.float64) / float(num_users * num_items)
    k = rng.binomial(rng.keys(stream_seeds, 3 * step), n_candidates, q)
    return Pool(words, counts, total, k, rng.keys(stream_seeds, 3 * step + 2), mean_abs)


def draw_batches(pool: Pool, labeller, labeller_params, stream_seeds, step, n_batches: int,
                 batch_size: int):
    """``n_batches`` batches of slots of ``pool`` drawn with replacement at step ``step``.

    Returns ``users``, ``items``, ``labels`` (the ``labeller``'s prediction with
    ``labeller_params``) ``[R, n_batches, batch_size]``, meaningless where ``k`` is 0, and ``k``.
    """
    step = tf.cast(step, tf.int64)
    R = stream_seeds.shape[0]
    m = n_batches * batch_size
    pos_keys = rng.keys(stream_seeds, 3 * step + 1)
    slots = rng.uniform_ints(rng.uniform01_at(pos_keys[:, None], tf.range(m, dtype=tf.int64)),
                             tf.maximum(pool.k, 1)[:, None])              # [R, m]
    r = rng.uniform_ints(rng.uniform01_at(pool.slot_keys[:, None], slots),
                         tf.maximum(pool.total, 1)[:, None])
    users, items = locate(pool.words, pool.counts, r)
    labels = labeller.predict(labeller_params, users, items)
    shape = [R, n_batches, batch_size]
    return tf.reshape(users, shape), tf.reshape(items, shape), tf.reshape(labels, shape), pool.k
