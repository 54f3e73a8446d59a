"""The per-seed splits of PROTOCOL.md ("Splits").

1. The MNAR training ratings are shuffled with the seed and cut 90% train / 10% validation.
2. The MCAR test ratings are cut once, with the fixed seed 12345, into a 5% slice (only for the
   rating prior P(R=r) of the NB (true) propensity) and a 95% slice (MAE/MSE of every model).

Both cuts follow the convention of scikit-learn's ``train_test_split(x, test_size=f,
random_state=s)``, which the authors used: ``perm = RandomState(s).permutation(n)``; the first
``ceil(f * n)`` positions of ``perm`` are the "test" side, the rest (in ``perm`` order) the
"train" side. Reproducing it keeps the row order of the authors' training arrays, which matters
because their batch sampler draws row positions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from atrec.data.ratings import RatingData, Ratings

VALIDATION_FRACTION = 0.1
MCAR_EVAL_FRACTION = 0.95
MCAR_SPLIT_SEED = 12345


def shuffle_cut(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(rest, cut)`` of a seeded shuffle; ``cut`` holds ``ceil(fraction * n)``.

    Same permutation and sizes as scikit-learn's ``train_test_split`` with
    ``test_size=fraction`` and ``random_state=seed``: ``cut`` is its test side.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}")
    n_cut = math.ceil(fraction * n)
    perm = np.random.RandomState(seed).permutation(n)
    return perm[n_cut:], perm[:n_cut]


@dataclass(frozen=True)
class Split:
    """Everything one seeded run sees. Shapes are ``(n,)`` columns inside each :class:`Ratings`.

    Attributes
    ----------
    train, val:
        The 90% / 10% cut of the MNAR training ratings (shuffled by ``seed``).
    test:
        The 95% MCAR slice: MAE and MSE of every model are measured here.
    test_prior:
        The 5% MCAR slice: only used to estimate P(R=r) for the NB (true) propensity.
    test_full:
        The whole MCAR test set: nDCG@3 is measured here, as in the authors' code.
    """

    dataset: str
    seed: int
    train: Ratings
    val: Ratings
    test: Ratings
    test_prior: Ratings
    test_full: Ratings
    num_users: int
    num_items: int


def make_split(data: RatingData, seed: int) -> Split:
    """The split of ``data`` for ``seed``. The same seed always gives identical arrays."""
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    train_pos, val_pos = shuffle_cut(len(data.train), VALIDATION_FRACTION, seed)
    eval_rest, eval_pos = shuffle_cut(len(data.test), MCAR_EVAL_FRACTION, MCAR_SPLIT_SEED)
    return Split(
        dataset=data.name,
        seed=seed,
        train=data.train.take(train_pos),
        val=data.train.take(val_pos),
        test=data.test.take(eval_pos),
        test_prior=data.test.take(eval_rest),
        test_full=data.test,
        num_users=data.num_users,
        num_items=data.num_items,
    )
