"""What a learner may use at one update besides its batch: its :class:`StepContext`, the salts
that keep the draws of different callers apart, and the stateless uniform draw of cells
(:func:`uniform_cells`) that DR and domain-adversarial learners take.

Randomness inside a loop is stateless: a replica's draws depend on its own stream seed, the
step and the caller's salt only, never on which replicas share its call, so stacked and lone
seeds give the same numbers. Kept apart from :mod:`atrec.learners.base` (which re-exports every
name here) so that MF-IPS's own loop (:mod:`atrec.learners.mf`) can build its context without
importing the learner contract built on top of it.
"""

from __future__ import annotations

from typing import NamedTuple

from atrec.learners import rng  # noqa: E402
from atrec.runtime import tf


class StepContext(NamedTuple):
    """What a learner may use at one update besides its batch.

    ``streams``: int64 ``[R]``, each replica's stream seed; ``step``: int32 scalar, the update's
    counter within its phase; ``salt``: a Python int that separates the streams of different
    callers (AT's roles and phases), so no two updates share draws; ``num_users`` /
    ``num_items``: the table sizes.
    """

    streams: tf.Tensor
    step: tf.Tensor
    salt: int
    num_users: int
    num_items: int


# salts per caller; a learner's own draws within one update use sub-counters of one key
SALT_FIT = 1_000_003
SALT_AT = {"A1": 2_000_003, "A2": 3_000_017, "pre": 0, "pl": 500_009}


def uniform_cells(ctx: StepContext, n: int, stream: int = 0):
    """Cells drawn uniformly with replacement from users x items, per replica.

    A pure function of (replica stream seed, step, salt, stream), so a replica's draws do not
    depend on which replicas share its call.

    Parameters
    ----------
    ctx : StepContext
        The update's context (stream seeds, step, salt, table sizes).
    n : int
        Cells per replica.
    stream : int, optional
        Tells apart several draws of one update.

    Returns
    -------
    users, items : tf.Tensor
        int32 ``[R, n]`` each.
    """
    salt = tf.cast(ctx.step, tf.int64) * 8 + stream + ctx.salt * 1024
    k = rng.keys(ctx.streams, salt)[:, None]                                  # [R, 1]
    counters = tf.range(2 * n, dtype=tf.int64)[None, :]
    u = rng.uniform01_at(k, counters)
    return rng.uniform_ints(u[:, :n], ctx.num_users), rng.uniform_ints(u[:, n:], ctx.num_items)
