"""The data statistics table (docs/protocol.md, "The other experiments", Figure 1).

For each dataset: users, items, training and test ratings, sparsity, mean rating of each part,
the rating shares over 1..5, and KL(train || test) of those shares in nats, as in
docs/data.md, "Rating shift between the parts": sum_r p_r ln(p_r / q_r) with p the training
shares and q the test shares (paper: Coat 0.049, Yahoo! R3 0.470).
"""

from __future__ import annotations

import math

import numpy as np

from atrec.data.ratings import RatingData, Ratings
from atrec.data.synthetic import synthetic_source

STATS_COLUMNS = ("dataset", "users", "items", "train ratings", "test ratings", "sparsity",
                 "mean train", "mean test", "KL(train||test)")


def rating_shares(ratings: Ratings) -> list[float] | None:
    """Shares of ratings 1..5 (5 floats summing to 1), or ``None`` for an empty set."""
    counts = ratings.histogram()
    total = int(counts.sum())
    return None if total == 0 else [float(c) / total for c in counts]


def kl_divergence(p: list[float], q: list[float]) -> float:
    """KL(p || q) = sum_r p_r ln(p_r / q_r) in nats; terms with p_r = 0 count 0, and a
    q_r = 0 under p_r > 0 gives ``inf``."""
    total = 0.0
    for pr, qr in zip(p, q, strict=True):
        if pr > 0:
            total += math.inf if qr == 0 else pr * math.log(pr / qr)
    return total


def _mean(ratings: Ratings) -> float | None:
    return float(np.mean(ratings.rating, dtype=np.float64)) if len(ratings) else None


def data_stats(data: RatingData) -> dict:
    """Statistics of one dataset.

    Keys: ``dataset``, ``users``, ``items``, ``train_ratings``, ``test_ratings``, ``sparsity``
    (train ratings / (users * items)), ``train_mean``, ``test_mean``, ``kl`` (KL(train || test)
    of the rating shares, natural log), ``train_shares``, ``test_shares`` (lists of 5 floats for
    ratings 1..5), ``synthetic`` (the generator a store of synthetic data names,
    :func:`atrec.data.synthetic.synthetic_source`; ``None`` for data from the raw files). Test
    values are ``None`` when the test part is empty (ML-100K).
    """
    train_shares, test_shares = rating_shares(data.train), rating_shares(data.test)
    kl = None if train_shares is None or test_shares is None \
        else kl_divergence(train_shares, test_shares)
    return {
        "dataset": data.name,
        "users": data.num_users,
        "items": data.num_items,
        "train_ratings": len(data.train),
        "test_ratings": len(data.test),
        "sparsity": len(data.train) / (data.num_users * data.num_items),
        "train_mean": _mean(data.train),
        "test_mean": _mean(data.test),
        "kl": kl,
        "train_shares": train_shares,
        "test_shares": test_shares,
        "synthetic": synthetic_source(data.checksums),
    }


def stats_rows(stats: list[dict]) -> list[dict]:
    """Rows for :func:`atrec.reporting.tables.render`, with the columns :data:`STATS_COLUMNS`."""
    keys = ("dataset", "users", "items", "train_ratings", "test_ratings", "sparsity",
            "train_mean", "test_mean", "kl")
    return [dict(zip(STATS_COLUMNS, (s[k] for k in keys), strict=True)) for s in stats]
