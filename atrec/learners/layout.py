"""How stacked replicas are laid out over compiled calls, threads and memory: plain arithmetic
and NumPy, no TensorFlow, so that the experiment runner can group seeds without loading the
training engine."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

# replicas are stacked in one compiled call while their tables and Adam state fit this (cache)
STACK_BYTES = 4_000_000
# replicas of the runner's fits (group_width): the protocol's 20 seeds as one stack, or a pair
STACK, PAIR = 20, 2


def default_chunk(replicas: int, num_users: int, num_items: int, dim: int) -> int:
    """Replicas per compiled call: all of them while their tables stay cache-sized, else one.

    Small tables (Coat) train fastest as one stack of all replicas; at Yahoo's size a stack's
    dense Adam update no longer fits in cache, and one replica per call, with calls on parallel
    threads (:func:`map_chunks`), is fastest. Measurements: ``docs/performance.md``.
    """
    table_bytes = (num_users + num_items) * (dim + 1) * 4 * 4  # params, m, v, grads
    return replicas if replicas * table_bytes <= STACK_BYTES else 1


def group_width(num_users: int, num_items: int, dim: int) -> int:
    """Replicas of every fit the experiment runner makes for tables of this size: :data:`STACK`
    when that many replicas stack in one call (:func:`default_chunk`), else :data:`PAIR`, one
    per CPU thread of the 2-core reference machine (a fit of two replicas stacks them or trains
    them on two threads, as :func:`default_chunk` decides for two).

    The width depends on the sizes only, never on how many seeds were asked for or on the CPU
    count, and :func:`group_seeds` gives every seed a fixed slot in it: so every fit of a seed
    has the same shape and the seed the same place in it, and XLA's code, whose rounding
    depends on the number of replicas (how a reduction is split, which elements fall in a
    vector loop's remainder), is the same for the seed in every run (issue 17, item 8).
    """
    return STACK if default_chunk(STACK, num_users, num_items, dim) == STACK else PAIR


def group_seeds(seeds: list[int], width: int) -> list[tuple[int, ...]]:
    """Seeds trained (and saved) together, in training order: groups of seeds with distinct
    slots ``s % width``, each in slot order (seeds ``0..19`` in width 20 make one group)."""
    by_slot: dict[int, list[int]] = {}
    for seed in seeds:
        by_slot.setdefault(seed % width, []).append(seed)
    rounds = max((len(v) for v in by_slot.values()), default=0)
    return [tuple(sorted((v[k] for v in by_slot.values() if k < len(v)),
                         key=lambda s: s % width)) for k in range(rounds)]


def slots(seeds, width: int) -> list[int]:
    """The ``width`` seeds of the fit that trains ``seeds`` (distinct slots): slot ``j`` holds the
    seed with ``s % width == j``; an empty slot holds a copy of ``seeds[0]``, trained and dropped."""
    out = [seeds[0]] * width
    for seed in seeds:
        out[seed % width] = seed
    return out


def map_chunks(run, replicas: int, chunk: int, threads: int) -> list:
    """``[run(lo, hi) for each slice of chunk replicas]``, ``threads`` slices at a time, in order."""
    bounds = [(lo, min(lo + chunk, replicas)) for lo in range(0, replicas, chunk)]
    if threads > 1 and len(bounds) > 1:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(lambda b: run(*b), bounds))
    return [run(*b) for b in bounds]


def by_user(cols: dict) -> dict:
    """``cols`` (arrays ``[n]`` or ``[R, n]``) with each replica's ratings ordered by user, item.

    The evaluation gathers then walk the user table in order instead of at random: at Yahoo's
    size the validation predictions after every step take about half as long. Losses and
    metrics are sums over the same ratings, only in another order.
    """
    order = np.lexsort((cols["item"], cols["user"]), axis=-1)
    return {key: np.take_along_axis(np.asarray(a), order, axis=-1) for key, a in cols.items()}
