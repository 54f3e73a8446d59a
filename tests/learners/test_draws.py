"""The binary engine's batch positions (atrec.learners.draws): the reference code's shuffles and
its law for the pairs of all users x items, drawn for the replicas still training only, and a
draw made ahead leaving no trace on a stream.
"""

import numpy as np
import pytest

from atrec.learners import draws, epochs
from atrec.learners.draws import SAMPLED_SHARE, EpochDraws, distinct_positions
from atrec.learners.epochs import Group, ReferenceRule, Stage, run_stage
from atrec.runtime import tf


def _streams(*seeds):
    return [np.random.RandomState(s) for s in seeds]


def _same_state(a, b):
    sa, sb = a.get_state(), b.get_state()
    return np.array_equal(sa[1], sb[1]) and sa[2:] == sb[2:]


def _epoch(rng, n, batch, total=None, extra=0):
    """One epoch of one replica: the reference code's shuffle of its observed pairs, then its
    pairs of all users x items."""
    nb = n // batch
    obs = rng.permutation(n)[:nb * batch].reshape(nb, batch)
    if not extra:
        return obs, None
    return obs, distinct_positions(rng, total, nb * extra * batch).reshape(nb, extra * batch)


def _first_occurrences(values):
    seen, kept = set(), []
    for v in values:
        if v not in seen:
            seen.add(v)
            kept.append(v)
    return kept


def test_a_shuffle_below_the_sorted_size_is_the_legacy_permutation():
    n = 1000
    assert n < draws.SORTED_SHUFFLE_FROM
    np.testing.assert_array_equal(draws.shuffled(np.random.RandomState(3), n),
                                  np.random.RandomState(3).permutation(n))


def test_a_sorted_shuffle_of_the_smallest_sorted_size_is_a_seeded_permutation():
    n = draws.SORTED_SHUFFLE_FROM
    got = draws.shuffled(np.random.RandomState(5), n).copy()
    np.testing.assert_array_equal(np.sort(got), np.arange(n))
    scratch = np.empty(n, np.uint64)   # a reused buffer: the same draw, in it
    again = draws.shuffled(np.random.RandomState(5), n, scratch=scratch)
    assert np.shares_memory(again, scratch)
    np.testing.assert_array_equal(got, again)
    assert not np.array_equal(got, np.random.RandomState(5).permutation(n))   # the sorted path


@pytest.mark.parametrize("key_bits", [32, 1])   # 1 bit: every draw has ties to reorder
def test_every_order_of_a_sorted_shuffle_is_equally_likely(monkeypatch, key_bits):
    """All 24 orders of 4 positions equally often: a chi-square statistic over the 24 cells
    (23 degrees of freedom: mean 23, sd 6.8) well inside its range. With one random bit per
    key, leaving tied keys in position order would make (0, 1, 2, 3) 7.5 times too
    frequent."""
    monkeypatch.setattr(draws, "SORTED_SHUFFLE_FROM", 0)
    n, count = 4, 24_000
    rng = np.random.RandomState(13)
    seen = {}
    for _ in range(count):
        order = tuple(draws.shuffled(rng, n, key_bits=key_bits))
        seen[order] = seen.get(order, 0) + 1
    assert sorted(map(sorted, seen)) == [[0, 1, 2, 3]] * 24
    expected = count / 24
    chi2 = sum((c - expected) ** 2 / expected for c in seen.values())
    assert chi2 < 23 + 6 * 6.8


@pytest.mark.parametrize("sorted_from, key_bits", [(None, 32), (0, 32), (0, 1)])
def test_labels_ride_with_the_same_permutation(monkeypatch, sorted_from, key_bits):
    """With labels, each position ``p`` comes as ``p << 1 | labels[p]``, in the order the
    unlabelled draw gives: by the legacy shuffle (1,000 positions), and by sorted keys,
    with 32 key bits and with 1, where ties are reordered by fresh keys."""
    if sorted_from is not None:
        monkeypatch.setattr(draws, "SORTED_SHUFFLE_FROM", sorted_from)
    n = 1000
    labels = (np.random.RandomState(2).rand(n) < 0.3).astype(np.uint8)
    plain = np.asarray(draws.shuffled(np.random.RandomState(9), n, key_bits=key_bits), np.int64)
    packed = np.asarray(draws.shuffled(np.random.RandomState(9), n, key_bits=key_bits,
                                       labels=labels), np.int64)
    np.testing.assert_array_equal(packed >> 1, plain)
    np.testing.assert_array_equal(packed & 1, labels[plain])
    assert 0 < labels.sum() < n


def test_a_small_share_is_the_first_distinct_values_of_uniform_draws():
    total, m = 1000, 100   # 10% of all pairs: drawn, repeats dropped
    assert m <= SAMPLED_SHARE * total
    got = distinct_positions(np.random.RandomState(3), total, m)
    # one batch of draws: m, plus m^2 // total + 64 spare for the repeats
    raw = np.random.RandomState(3).randint(0, total, size=m + m * m // total + 64, dtype=np.int64)
    assert len(set(raw)) < len(raw)   # the case has repeats to drop
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, _first_occurrences(raw)[:m])


@pytest.mark.parametrize("total", [1000, 2 ** 60])
def test_both_ways_of_dropping_repeats_keep_each_values_first_draw(total):
    """Packed keys where ``value << b | place`` fits in 63 bits (1000), the repeated values
    located in the draws where it does not (2 ** 60): the same first occurrences, in order."""
    raw = np.random.RandomState(8).randint(0, 1000, size=400, dtype=np.int64)
    assert len(set(raw)) < len(raw)
    np.testing.assert_array_equal(draws._first_occurrences(raw, total), _first_occurrences(raw))
    unique = np.arange(7, dtype=np.int64)[::-1]
    np.testing.assert_array_equal(draws._first_occurrences(unique, total), unique)


def test_a_larger_share_is_the_shuffles_first_entries():
    total, m = 1000, 126
    assert m > SAMPLED_SHARE * total
    np.testing.assert_array_equal(distinct_positions(np.random.RandomState(3), total, m),
                                  np.random.RandomState(3).permutation(total)[:m])
    with pytest.raises(ValueError, match="cannot draw 1001 distinct positions of 1000"):
        distinct_positions(np.random.RandomState(3), total, 1001)


def test_drawn_pairs_have_the_law_of_a_shuffles_first_entries():
    """Every ordered pair of distinct positions of 16 equally often: a chi-square statistic
    over the 240 cells (239 degrees of freedom: mean 239, sd 21.9) well inside its range."""
    total, draws = 16, 24_000
    rng = np.random.RandomState(11)
    counts = np.zeros((total, total))
    for _ in range(draws):
        a, b = distinct_positions(rng, total, 2)
        counts[a, b] += 1
    assert not np.diag(counts).any()
    expected = draws / (total * (total - 1))
    off = counts[~np.eye(total, dtype=bool)]
    chi2 = ((off - expected) ** 2 / expected).sum()
    assert 239 - 6 * 21.9 < chi2 < 239 + 6 * 21.9


@pytest.mark.parametrize("total", [20, 400])   # m = 18: shuffled whole; drawn
@pytest.mark.parametrize("ahead", [False, True])
def test_each_epoch_is_the_reference_draw_of_the_active_replicas(ahead, total):
    n, batch, extra = 10, 3, 2
    mine, ref = _streams(3, 4, 5), _streams(3, 4, 5)
    # replica 1 stops after the first epoch, replica 2 after the second
    actives = [[True, True, True], [True, False, True], [True, False, False]]
    with EpochDraws(mine, n, batch, total, extra) as d:
        for active in actives:
            obs, more = d.next(np.array(active))
            if ahead:   # as the engine does while it trains the epoch
                d.ahead()
            assert obs.shape == (3, 3, 3) and more.shape == (3, 3, 6)
            assert obs.dtype == more.dtype == np.int32
            for k, on in enumerate(active):
                if on:
                    want, want_more = _epoch(ref[k], n, batch, total, extra)
                    np.testing.assert_array_equal(obs[:, k], want)
                    np.testing.assert_array_equal(more[:, k], want_more)
                    assert len(set(more[:, k].ravel())) == 18   # without replacement
                else:
                    assert not obs[:, k].any() and not more[:, k].any()
    # after the stage each stream is where drawing its own epochs only would leave it:
    # nothing drawn for a stopped replica, the draw made ahead of the last epoch undone
    for k in range(3):
        assert _same_state(mine[k], ref[k]), f"replica {k}'s stream"


def test_a_large_epoch_is_each_active_replicas_sorted_shuffle():
    """From SORTED_SHUFFLE_FROM on, the epochs reuse one buffer for the sorted shuffles, also
    when drawn ahead on the worker: each replica's batches are still its own shuffle's, epoch
    after epoch."""
    n, batch = draws.SORTED_SHUFFLE_FROM, 1 << 20
    mine, ref = _streams(3, 4), _streams(3, 4)
    with EpochDraws(mine, n, batch) as d:
        for active in ([True, True], [False, True]):
            obs, _ = d.next(np.array(active))
            d.ahead()
            for k, on in enumerate(active):
                if on:
                    want = draws.shuffled(ref[k], n).reshape(n // batch, batch)
                    np.testing.assert_array_equal(obs[:, k], want)
                else:
                    assert not obs[:, k].any()
    assert all(_same_state(a, b) for a, b in zip(mine, ref))


def test_a_replica_cannot_come_back():
    with EpochDraws(_streams(1, 2), 6, 2) as d:
        d.next(np.array([True, False]))
        d.ahead()
        with pytest.raises(ValueError, match="start training again"):
            d.next(np.array([True, True]))


class _StopAt(ReferenceRule):
    """Replica ``k`` stops after ``epochs[k]`` epochs."""

    def __init__(self, epochs):
        super().__init__(len(epochs))
        self.epochs, self.seen = np.asarray(epochs), 0

    def update(self, loss):
        self.seen += 1
        return self.seen >= self.epochs


def _count(state, b):
    return tf.cast(b.rows[:, 0], tf.float32)


def test_a_seeds_stream_after_a_stage_does_not_depend_on_its_neighbours():
    """A seed's next stage (the predictor after its propensity model) starts from the same
    stream whether the seed beside it stops before or after it."""
    n, batch = 12, 4
    consts = {"train_user": tf.zeros([2, n], tf.int32), "train_item": tf.zeros([2, n], tf.int32),
              "train_label": tf.zeros([2, n])}
    stage = Stage("probe", _count, {"g": Group(("x",))}, batch)
    after = []
    for partner_epochs in (2, 6):
        rngs = _streams(7, 8)
        result = run_stage(stage, {"x": np.zeros(2, np.float32)}, {}, consts, rngs, n, 1, 1,
                           _StopAt([4, partner_epochs]), max_epochs=10)
        assert list(result.epochs) == [4, partner_epochs]
        after.append(rngs[0].permutation(1000))
    alone = _streams(7)[0]
    for _ in range(4):
        alone.permutation(n)
    np.testing.assert_array_equal(after[0], after[1])
    np.testing.assert_array_equal(after[0], alone.permutation(1000))


def _label_sum(state, b):
    """Each batch's sum of ``label * (pair + 1)`` per replica: which pairs it saw, with which
    labels."""
    return tf.reduce_sum(b.labels * tf.cast(b.rows + 1, tf.float32), -1)


@pytest.mark.parametrize("carried", [True, False])
def test_a_stage_over_all_pairs_sees_each_pairs_own_label(monkeypatch, carried):
    """A stage whose source is all users x items gets its labels with its positions (or, for
    a source too large for int32 to carry both, gathered at them): each batch's pairs are the
    replica's shuffle of all pairs, each with its own replica's 0/1."""
    if not carried:
        monkeypatch.setattr(epochs, "carries_labels", lambda n: False)
    num_users, num_items, batch = 5, 4, 3
    n = num_users * num_items
    observed = (np.random.RandomState(4).rand(2, n) < 0.4).astype(np.uint8)
    stage = Stage("probe", _label_sum, {"g": Group(("x",))}, batch, source="all")
    result = run_stage(stage, {"x": np.zeros(2, np.float32)}, {},
                       {"observed": tf.constant(observed)}, _streams(7, 8), n, num_users,
                       num_items, _StopAt([1, 1]))
    for k, rng in enumerate(_streams(7, 8)):
        seen = rng.permutation(n)[:n // batch * batch]
        assert result.losses[0, k] == np.sum(observed[k, seen] * (seen + 1.0))
    assert result.losses[0, 0] != result.losses[0, 1]
