"""The 1-5 star version: stars by rank, Schnabel's propensity, the five prediction matrices, and
IPS unbiased where the truth is known exactly (a hand-made matrix)."""

import math

import numpy as np
import pytest

from atrec.semisynthetic.stars import (
    MARGINAL,
    STAR_MATRICES,
    star_predictions,
    star_propensity,
    star_repetition,
    to_stars,
)

SHUFFLED = np.random.default_rng(2).permutation(1000).astype(np.float64)


def test_stars_follow_the_marginal_by_rank():
    stars = to_stars(SHUFFLED)
    assert [int(np.sum(stars == r)) for r in range(1, 6)] == [526, 242, 144, 62, 26]
    assert stars[SHUFFLED.argmax()] == 5 and stars[SHUFFLED.argmin()] == 1
    with pytest.raises(ValueError, match="marginal"):
        to_stars(SHUFFLED, (0.5, 0.5))


def test_propensity_is_k_alpha_to_the_four_minus_r_at_five_percent():
    stars = to_stars(SHUFFLED)
    p = star_propensity(stars, alpha=0.25, observed=0.05)
    by_star = {r: float(p[stars == r][0]) for r in range(1, 6)}
    k = by_star[5]
    assert by_star[4] == pytest.approx(k)
    assert [by_star[r] / k for r in (3, 2, 1)] == pytest.approx([0.25, 0.0625, 0.015625])
    assert p.mean() == pytest.approx(0.05)
    with pytest.raises(ValueError, match="alpha"):
        star_propensity(stars, alpha=0.0)
    with pytest.raises(ValueError, match="> 1"):
        star_propensity(stars, alpha=0.01, observed=0.5)


def test_star_prediction_matrices_follow_their_rules():
    stars = to_stars(SHUFFLED).astype(float)
    preds = star_predictions(stars, seed=0)
    assert tuple(preds) == STAR_MATRICES
    n_5 = int(np.sum(stars == 5))
    for name, low in (("REC_ONES", 1), ("REC_FOURS", 4)):
        changed = preds[name] != stars
        assert changed.sum() == n_5 and np.all(stars[changed] == low)
        assert np.all(preds[name][changed] == 5)
    assert np.array_equal(preds["ROTATE"], np.where(stars == 1, 5, stars - 1))
    assert np.array_equal(preds["COARSENED"], np.where(stars <= 3, 3, 4))
    assert preds["SKEWED"].min() >= 0 and preds["SKEWED"].max() <= 6
    assert np.array_equal(star_predictions(stars, seed=0)["SKEWED"], preds["SKEWED"])


def test_ips_is_unbiased_and_naive_is_not_on_a_hand_made_matrix():
    stars = np.resize(np.array([1, 1, 1, 2, 2, 3, 4, 5]), 4000)
    p = star_propensity(stars)
    preds = {"FLAT": np.full(stars.size, 3.0), "ROTATE": np.where(stars == 1, 5.0, stars - 1.0)}
    reps = [star_repetition(stars, p, preds, seed) for seed in range(300)]
    for name in preds:
        for loss in ("MAE", "MSE"):
            truth = reps[0]["truth"][loss][name]
            assert truth == pytest.approx(np.mean(np.abs(preds[name] - stars) ** (1 if loss == "MAE" else 2)))
            ips = np.array([r["estimate"][loss][name]["IPS"] - truth for r in reps])
            assert abs(ips.mean()) < 4 * ips.std(ddof=1) / math.sqrt(ips.size)
            naive = np.array([r["estimate"][loss][name]["Naive"] - truth for r in reps])
            assert abs(naive.mean()) > 10 * naive.std(ddof=1) / math.sqrt(naive.size)
    assert reps[0]["observed_fraction"] == pytest.approx(0.05, abs=0.015)
    assert MARGINAL == pytest.approx((0.526, 0.242, 0.144, 0.062, 0.026))
