"""The per-seed splits of the paper's protocol (docs/protocol.md, "Splits").

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
    """Positions of a seeded shuffle of ``n`` rows, cut in two.

    Same permutation and sizes as scikit-learn's ``train_test_split`` with
    ``test_size=fraction`` and ``random_state=seed``: ``cut`` is its test side.

    Parameters
    ----------
    n : int
        Number of rows.
    fraction : float
        Share of the rows in ``cut``, in (0, 1).
    seed : int
        Seed of NumPy's ``RandomState`` permutation.

    Returns
    -------
    rest, cut : numpy.ndarray
        Disjoint positions; ``cut`` holds ``ceil(fraction * n)`` of them, ``rest`` the others,
        both in permutation order.

    Raises
    ------
    ValueError
        When ``fraction`` is not strictly between 0 and 1.
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
    dataset : str
        The dataset's name.
    seed : int
        The split seed (it also seeds the model of the run).
    train, val : Ratings
        The 90% / 10% cut of the MNAR training ratings (shuffled by ``seed``).
    test : Ratings
        The 95% MCAR slice: MAE and MSE of every model are measured here.
    test_prior : Ratings
        The 5% MCAR slice: only read by what needs MCAR labels (the NB (true) propensity's
        P(R=r), methods with ``uses_mcar``).
    test_full : Ratings
        The whole MCAR test set: nDCG@3 is measured here, as in the authors' code.
    num_users, num_items : int
        The table sizes of the dataset.
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
    """The split of a dataset for one seed; the same seed always gives identical arrays.

    Parameters
    ----------
    data : RatingData
        A preprocessed dataset (:func:`atrec.data.preprocess.load_data`).
    seed : int
        Non-negative split seed: it shuffles the 90/10 training/validation cut. The MCAR cut
        always uses :data:`MCAR_SPLIT_SEED`.

    Returns
    -------
    Split
        The five parts of the run's data.

    Raises
    ------
    ValueError
        When ``seed`` is negative.
    """
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
