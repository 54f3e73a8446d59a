"""Each epoch's batch positions for the binary engine (:mod:`atrec.learners.epochs`), drawn for
the replicas still training only, one epoch ahead on worker threads.

What is drawn is the binary reference code's (docs/protocols.md, "The binary protocols"): every
epoch each replica shuffles its primary source (its observed pairs, or all ``users x items`` pairs
for a propensity model) with its own NumPy ``RandomState`` and takes ``n // B`` full batches; a
stage that also needs pairs from all ``users x items`` takes ``m = n // B x G B`` distinct ones, in
random order, and gives batch ``j`` the slice ``[G B j, G B (j + 1))``.

- **The shuffles** (:func:`shuffled`) are ``RandomState.permutation``'s own, of int64 positions,
  below :data:`SORTED_SHUFFLE_FROM` positions: NumPy shuffles an array of pointer-sized items by
  a specialised path, about 30% faster than int32's (1.4 against 2.0 ms for Coat's 87,000
  pairs). From that size on, where the shuffle's random swaps leave the cache (all 15.4 M pairs
  at Yahoo's size), a permutation of the same law is drawn by sorting random keys, in about
  0.25 against 0.4-0.5 s. The positions an epoch uses are then stored as int32; a shuffle of
  all pairs stores each as ``position << 1 | o``, its observation label riding with it.
- **The pairs from all users x items** have the law of the first ``m`` entries of a shuffle (a
  uniformly drawn ``m``-subset in uniform order), which is how the reference code draws them
  (``np.random.shuffle`` of all pairs each epoch). Where ``m`` is at most
  :data:`SAMPLED_SHARE` of all pairs, :func:`distinct_positions` draws them from the same stream
  as uniform positions with repeats dropped: the same law, other draws, and about a tenth of
  the time at Yahoo's size (0.05 against 0.54 s for 0.9 M of 15.4 M pairs), where the whole
  shuffle was half or more of every such method's time. A larger share is shuffled whole.
- **Only the active replicas draw.** A replica whose stopping rule has fired draws nothing more,
  so the next stage of that replica (a propensity model's pre-training is followed by the
  predictor's) starts from the stream it would have alone: a seed's record does not depend on
  which seeds share its call, when they stop or how many there are.
- **One epoch ahead.** At Yahoo's size a shuffle of all 15.4 M pairs takes a quarter to half a
  second per replica, about as long as the compiled epoch it feeds. NumPy's random draws hold
  the GIL, so the next epoch's shuffles run on a worker thread that starts as the compiled
  loop is called (:meth:`EpochDraws.ahead`, whose worker first sleeps a moment so that the
  loop is dispatched and has let the GIL go): the shuffles and the loop then run on two cores,
  and the sorted shuffles reuse one buffer (:func:`shuffled`'s ``scratch``). A draw
  made ahead for a replica that then stops is undone (its generator state put back), and so
  is the draw ahead of a stage's last epoch: the streams are exactly those of drawing epoch
  by epoch, whatever the threads' timing.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# the worker's pause before it draws ahead: the loop call's Python part takes well under this,
# so the loop holds no GIL when the shuffles take it (only speed depends on it, never numbers)
DISPATCH_SECONDS = 0.002
# the largest share of all pairs drawn as distinct uniform positions rather than by a whole
# shuffle: above it the repeats cost more than the shuffle (at Yahoo's size, 0.22 against 0.5 s
# at a fifth of all pairs, 1.8 s at 45%; at Coat's 87,000 pairs the shuffle is cache-resident and
# wins from about a fifth)
SAMPLED_SHARE = 1 / 8
# shuffles of at least this many positions sort random keys (:func:`shuffled`); smaller ones keep
# the legacy shuffle and its streams (on the reference machine the sort gains from between 1 M
# and 1.6 M positions, 20% at 4 M, 40% at 15.4 M; MovieLens 100K's 1.59 M pairs stay below)
SORTED_SHUFFLE_FROM = 1 << 22
# random bits of each sort key: ties among n keys number about n^2 / 2^(KEY_BITS + 1)
KEY_BITS = 32
# which uint32 half of a uint64 is its high one: a sort key's place in :func:`shuffled`
_HIGH = 1 if sys.byteorder == "little" else 0


def sorts(n: int) -> bool:
    """Whether :func:`shuffled` sorts keys for ``n`` positions (each a uint32 low half)."""
    return SORTED_SHUFFLE_FROM <= n <= 1 << 32


def carries_labels(n: int) -> bool:
    """Whether an epoch's int32 positions of a source of ``n`` can carry their labels
    (``position << 1 | label`` below 2^31)."""
    return n <= 1 << 30


def shuffled(rng: np.random.RandomState, n: int, key_bits: int = KEY_BITS,
             scratch: np.ndarray | None = None, labels: np.ndarray | None = None) -> np.ndarray:
    """A uniformly random permutation of ``range(n)`` from ``rng``; with ``labels`` (0/1, uint8
    ``[n]``), the same permutation with each position ``p`` given as ``p << 1 | labels[p]``.

    Below :data:`SORTED_SHUFFLE_FROM`, ``rng.permutation(n)`` itself (int64). From it on, each
    position gets ``key_bits`` random bits as the high half of a uint64 (``key << 32 |
    position``) and the keys are sorted: the order of i.i.d. uniform keys is a uniform
    permutation, except among equal keys, which the sort leaves by position; those groups
    (about 28,000 pairs at 15.4 M positions) are then put in the order of :data:`KEY_BITS`
    fresh bits each, drawn again in the rare case that these tie too, so every permutation
    keeps probability ``1 / n!``. The result is then the low halves, a uint32 view of ``scratch``
    (uint64 ``[n]``, reused by a caller that draws many; a new one if None), valid until its
    next use. ``key_bits`` below 32 serves the tests (ties in every draw).

    The labels ride in the low halves, below the positions: they leave the low halves' order,
    so the draws, as they were, and a propensity stage over all pairs gets each pair's label
    with its position instead of looking it up at random among ``n`` at every step (a third
    of TDR's logistic step at Yahoo's size: docs/performance.md).
    """
    if not sorts(n) or (labels is not None and n > 1 << 31):
        order = rng.permutation(n)
        return order if labels is None else order << 1 | labels[order]
    scratch = np.empty(n, np.uint64) if scratch is None else scratch
    halves = scratch.view(np.uint32).reshape(n, 2)
    keys, positions = halves[:, _HIGH], halves[:, 1 - _HIGH]
    keys[:] = rng.randint(0, 1 << key_bits, size=n, dtype=np.uint32)
    if labels is None:
        positions[:] = np.arange(n, dtype=np.uint32)
    else:
        np.bitwise_or(np.arange(0, 2 * n, 2, dtype=np.uint32), labels, out=positions)
    scratch.sort()
    tied = np.flatnonzero(keys[1:] == keys[:-1])
    if tied.size:
        members = np.union1d(tied, tied + 1)   # ascending, each group's slots together
        groups = keys[members]
        while True:
            fresh = rng.randint(0, 1 << KEY_BITS, size=members.size, dtype=np.uint32)
            order = np.lexsort((fresh, groups))
            g, f = groups[order], fresh[order]
            if not np.any((g[1:] == g[:-1]) & (f[1:] == f[:-1])):
                break
        scratch[members] = scratch[members[order]]
    return positions


def distinct_positions(rng: np.random.RandomState, total: int, m: int) -> np.ndarray:
    """``m`` distinct positions of ``range(total)`` in random order, int64, from ``rng``.

    The law of ``shuffled(rng, total)[:m]``. Up to :data:`SAMPLED_SHARE` of ``total`` they are
    uniform draws with every repeat of an earlier draw dropped (sampling without replacement,
    one draw at a time), topped up by further draws in the rare case that too few remain;
    above it they are that shuffle's first ``m``.
    """
    if m > total:
        raise ValueError(f"cannot draw {m} distinct positions of {total}")
    if m > SAMPLED_SHARE * total:
        return shuffled(rng, total)[:m].astype(np.int64)
    drawn = np.zeros(0, np.int64)
    kept = drawn
    while kept.size < m:
        # repeats among k draws of `total` number about k^2 / (2 total): draw twice that spare
        spare = m * m // total + 64
        more = rng.randint(0, total, size=m - kept.size + spare, dtype=np.int64)
        drawn = np.concatenate([drawn, more])
        kept = _first_occurrences(drawn, total)
    return kept[:m]


def _first_occurrences(drawn: np.ndarray, total: int) -> np.ndarray:
    """``drawn`` (values in ``range(total)``) without any value's later occurrences, in order.

    Each draw is packed with its place as ``value << b | place`` and the keys sorted once:
    equal values then sit together, their first place first, so every later occurrence is
    found by comparing neighbours (at Yahoo's size, 1.6 M draws: 0.03 against 0.07 s for
    finding the repeated values in the draws). Where the keys would not fit in 63 bits, the
    repeated values are located in the draws instead. Either way the same result."""
    bits = max(1, int(drawn.size).bit_length())
    if int(total).bit_length() + bits <= 63:
        keys = np.sort((drawn << bits) | np.arange(drawn.size, dtype=np.int64))
        values = keys >> bits
        later = (keys[1:] & ((1 << bits) - 1))[values[1:] == values[:-1]]
        if not later.size:
            return drawn
        keep = np.ones(drawn.size, bool)
        keep[later] = False
        return drawn[keep]
    ordered = np.sort(drawn)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if not repeated.size:
        return drawn
    # only the few repeated values need their first place found
    where = np.flatnonzero(np.isin(drawn, repeated, kind="table"))
    _, first = np.unique(drawn[where], return_index=True)
    keep = np.ones(drawn.size, bool)
    keep[where] = False
    keep[where[first]] = True
    return drawn[keep]


class EpochDraws:
    """The positions of each epoch of one stage, for ``rngs`` (one per replica).

    ``n``: the primary source's size; ``total``: all pairs' count, ``extra``: how many all-pair
    positions per primary one (0: none); ``labels``: ``[R, n]`` 0/1 of each replica's primary
    positions, which ``obs`` then carries (:func:`shuffled`). :meth:`next` gives ``(obs [nb, R,
    B], extra [nb, R, extra B] or None)`` int32 for the replicas ``active`` (zeros for the
    others); :meth:`ahead`, called as that epoch is trained, draws the next epoch for the same
    replicas on a worker thread; :meth:`close` undoes a draw made ahead and not used.
    """

    def __init__(self, rngs: list, n: int, batch_size: int, total: int | None = None,
                 extra: int = 0, labels: np.ndarray | None = None) -> None:
        if labels is not None and not carries_labels(n):
            raise ValueError(f"{n:,} positions with their labels do not fit in int32")
        self.rngs, self.n, self.batch_size = rngs, n, batch_size
        self.total, self.extra, self.labels = total, extra, labels
        self.nb = n // batch_size
        self.width = extra * batch_size
        self._worker = ThreadPoolExecutor(1)
        self._active = np.zeros(0, np.int64)   # the replicas of the last epoch given
        self._scratch = None   # shuffled's buffer, drawn into by one thread at a time
        self._pending = None   # (replicas drawn for, their states before, future)

    def _draw(self, replicas: np.ndarray, pause: float = 0.0):
        time.sleep(pause)
        shape = (self.nb, len(self.rngs))
        obs = np.zeros(shape + (self.batch_size,), np.int32)
        extra = np.zeros(shape + (self.width,), np.int32) if self.extra else None
        if self._scratch is None and sorts(self.n):
            self._scratch = np.empty(self.n, np.uint64)
        for k in replicas:
            r = self.rngs[k]
            order = shuffled(r, self.n, scratch=self._scratch,
                             labels=None if self.labels is None else self.labels[k])
            obs[:, k] = order[:self.nb * self.batch_size].reshape(self.nb, -1)
            if extra is not None:
                extra[:, k] = distinct_positions(r, self.total, self.nb * self.width).reshape(
                    self.nb, -1)
        return obs, extra

    def next(self, active) -> tuple[np.ndarray, np.ndarray | None]:
        """This epoch's positions for the replicas ``active`` ([R] bool)."""
        active = np.flatnonzero(np.asarray(active, bool))
        if self._pending is None:
            obs, extra = self._draw(active)
        else:
            drawn, states, future = self._pending
            self._pending = None
            obs, extra = future.result()
            if np.setdiff1d(active, drawn).size:
                raise ValueError("a replica cannot start training again within a stage")
            stopped = np.setdiff1d(drawn, active)
            self._undo(stopped, states)
            obs[:, stopped] = 0
            if extra is not None:
                extra[:, stopped] = 0
        self._active = active
        return obs, extra

    def ahead(self) -> None:
        """Start drawing the next epoch for the replicas of the last :meth:`next` (call it
        just before the compiled loop of that epoch)."""
        if self._pending is None and self._active.size:
            states = {k: self.rngs[k].get_state() for k in self._active}
            future = self._worker.submit(self._draw, self._active, DISPATCH_SECONDS)
            self._pending = (self._active, states, future)

    def _undo(self, replicas, states: dict) -> None:
        for k in replicas:
            self.rngs[k].set_state(states[k])

    def close(self) -> None:
        """Undo the draw made ahead, if any (its replicas' streams as if it never happened),
        and stop the worker."""
        if self._pending is not None:
            drawn, states, future = self._pending
            self._pending = None
            future.exception()   # wait: the worker is done with the generators
            self._undo(drawn, states)
        self._worker.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
