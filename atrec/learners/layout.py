"""How stacked replicas are laid out over compiled calls: plain arithmetic, no TensorFlow, so
that the experiment runner can group seeds without loading the training engine."""

from __future__ import annotations

import os

# replicas are stacked in one compiled call while their tables and Adam state fit this (cache)
STACK_BYTES = 4_000_000


def default_chunk(replicas: int, num_users: int, num_items: int, dim: int) -> int:
    """Replicas per compiled call: all of them while their tables stay cache-sized, else one.

    Small tables (Coat) train fastest as one stack of all replicas; at Yahoo's size a stack's
    dense Adam update no longer fits in cache, and one replica per call, with calls on parallel
    threads (:func:`atrec.learners.mf.map_chunks`), is fastest. Measurements: ``docs/performance.md``.
    """
    table_bytes = (num_users + num_items) * (dim + 1) * 4 * 4  # params, m, v, grads
    return replicas if replicas * table_bytes <= STACK_BYTES else 1




def group_size(num_users: int, num_items: int, dim: int, n_seeds: int) -> int:
    """Seeds trained (and saved) together: all when stacking pays, else one per CPU thread."""
    chunk = default_chunk(n_seeds, num_users, num_items, dim)
    return n_seeds if chunk >= n_seeds else max(1, chunk * min(2, os.cpu_count() or 1))
