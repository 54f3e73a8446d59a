"""The binary engine's batch positions (atrec.learners.draws): the reference code's shuffles,
drawn for the replicas still training only, and a draw made ahead leaving no trace on a stream.
"""

import numpy as np
import pytest

from atrec.learners.draws import EpochDraws
from atrec.learners.epochs import Group, ReferenceRule, Stage, run_stage
from atrec.runtime import tf


def _streams(*seeds):
    return [np.random.RandomState(s) for s in seeds]


def _same_state(a, b):
    sa, sb = a.get_state(), b.get_state()
    return np.array_equal(sa[1], sb[1]) and sa[2:] == sb[2:]


def _epoch(rng, n, batch, total=None, extra=0):
    """One epoch of one replica drawn as the reference code draws it."""
    nb = n // batch
    obs = rng.permutation(n)[:nb * batch].reshape(nb, batch)
    if not extra:
        return obs, None
    return obs, rng.permutation(total)[:nb * extra * batch].reshape(nb, extra * batch)


@pytest.mark.parametrize("ahead", [False, True])
def test_each_epoch_is_the_reference_draw_of_the_active_replicas(ahead):
    n, batch, total, extra = 10, 3, 20, 2
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
