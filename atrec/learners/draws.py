"""Each epoch's batch positions for the binary engine (:mod:`atrec.learners.epochs`), drawn for
the replicas still training only, one epoch ahead on worker threads.

What is drawn is PROTOCOLS.md section 2's: every epoch each replica shuffles its primary source
(its observed pairs, or all ``users x items`` pairs for a propensity model) with its own NumPy
``RandomState`` and takes ``n // B`` full batches; a stage that also needs pairs from all
``users x items`` takes ``m = n // B x G B`` distinct ones, in random order, and gives batch
``j`` the slice ``[G B j, G B (j + 1))``.

- **The shuffles** are ``RandomState.permutation``'s own, of int64 positions: NumPy shuffles an
  array of pointer-sized items by a specialised path, about 30% faster than int32's (1.4 against
  2.0 ms for Coat's 87,000 pairs, 1.1-1.2 against 1.3-1.6 s for Yahoo's 15.4 M); the positions
  an epoch uses are then stored as int32.
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
- **One epoch ahead.** At Yahoo's size a shuffle of all 15.4 M pairs takes about a second per
  replica, as long as the compiled epoch it feeds. NumPy's legacy shuffle holds the GIL, so
  the next epoch's shuffles run on a worker thread that starts as the compiled loop is
  called (:meth:`EpochDraws.ahead`, whose worker first sleeps a moment so that the loop is
  dispatched and has let the GIL go): the shuffles and the loop then run on two cores. A draw
  made ahead for a replica that then stops is undone (its generator state put back), and so
  is the draw ahead of a stage's last epoch: the streams are exactly those of drawing epoch
  by epoch, whatever the threads' timing.
"""

from __future__ import annotations

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


def distinct_positions(rng: np.random.RandomState, total: int, m: int) -> np.ndarray:
    """``m`` distinct positions of ``range(total)`` in random order, int64, from ``rng``.

    The law of ``rng.permutation(total)[:m]``. Up to :data:`SAMPLED_SHARE` of ``total`` they are
    uniform draws with every repeat of an earlier draw dropped (sampling without replacement,
    one draw at a time), topped up by further draws in the rare case that too few remain;
    above it they are that permutation's first ``m``.
    """
    if m > total:
        raise ValueError(f"cannot draw {m} distinct positions of {total}")
    if m > SAMPLED_SHARE * total:
        return rng.permutation(total)[:m]
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
    positions per primary one (0: none). :meth:`next` gives ``(obs [nb, R, B], extra [nb, R,
    extra B] or None)`` int32 for the replicas ``active`` (zeros for the others);
    :meth:`ahead`, called as that epoch is trained, draws the next epoch for the same replicas
    on a worker thread; :meth:`close` undoes a draw made ahead and not used.
    """

    def __init__(self, rngs: list, n: int, batch_size: int, total: int | None = None,
                 extra: int = 0) -> None:
        self.rngs, self.n, self.batch_size = rngs, n, batch_size
        self.total, self.extra = total, extra
        self.nb = n // batch_size
        self.width = extra * batch_size
        self._worker = ThreadPoolExecutor(1)
        self._active = np.zeros(0, np.int64)   # the replicas of the last epoch given
        self._pending = None   # (replicas drawn for, their states before, future)

    def _draw(self, replicas: np.ndarray, pause: float = 0.0):
        time.sleep(pause)
        shape = (self.nb, len(self.rngs))
        obs = np.zeros(shape + (self.batch_size,), np.int32)
        extra = np.zeros(shape + (self.width,), np.int32) if self.extra else None
        for k in replicas:
            r = self.rngs[k]
            obs[:, k] = r.permutation(self.n)[:self.nb * self.batch_size].reshape(self.nb, -1)
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
