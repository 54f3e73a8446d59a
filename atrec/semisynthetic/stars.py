"""The 1-5 star version of the benchmark (Schnabel et al., ICML 2016, section 6.1), on the same
completed MovieLens 100K matrix as the binary version.

* **Stars by rank**: the completed ratings are sorted (stable) and cut by rank so that the share
  of each star is ``marginal`` (default :data:`MARGINAL`, Yahoo! R3's MCAR marginal: 52.6%,
  24.2%, 14.4%, 6.2%, 2.6% for 1..5 stars; a parameter).
* **Propensity**: ``p = k`` for 4 and 5 stars and ``k alpha^(4 - r)`` for ``r`` < 4, with ``k``
  set so that the expected observed share is ``observed`` (5%); ``alpha = 0.25`` by default.
* **Prediction matrices** (one seeded generator), with ``n_5`` the number of 5-star cells:
  ``REC_ONES`` / ``REC_FOURS``: the truth with ``n_5`` cells drawn among the 1s / 4s set to 5;
  ``ROTATE``: ``r - 1``, and 5 for ``r = 1``; ``SKEWED``: a draw from N(r, ((6 - r) / 2)^2)
  clipped to [0, 6]; ``COARSENED``: 3 for ``r <= 3``, else 4.
* **Losses**: absolute error (MAE) and squared error (MSE) of the prediction against the stars;
  the truth is their mean over all cells. The stars are the labels, so there is no label noise:
  a repetition draws the observations only.
* **Estimators** with the true propensity ``w = 1 / p``: Naive (mean over the observed cells),
  IPS ``(1/N) sum_O w e`` and SNIPS ``sum_O w e / sum_O w``.

atrec has no reference code for this version: it is atrec's reading of the paper's text.
"""

from __future__ import annotations

import numpy as np

from atrec.semisynthetic.conversion import rank_levels
from atrec.semisynthetic.predictions import raise_to_top

MARGINAL = (0.526, 0.242, 0.144, 0.062, 0.026)
STARS = (1, 2, 3, 4, 5)
ALPHA = 0.25
OBSERVED = 0.05
STAR_MATRICES = ("REC_ONES", "REC_FOURS", "ROTATE", "SKEWED", "COARSENED")
STAR_ESTIMATORS = ("Naive", "IPS", "SNIPS")
LOSSES = ("MAE", "MSE")
STAR_STREAM = 3   # the generator of the star prediction matrices: default_rng([stream, seed])


def check_marginal(marginal) -> tuple[float, ...]:
    """``marginal`` as five positive shares summing to 1, or ``ValueError`` naming it."""
    marginal = tuple(float(m) for m in marginal)
    if len(marginal) != len(STARS) or min(marginal) <= 0 or abs(sum(marginal) - 1.0) > 1e-6:
        raise ValueError(f"marginal must be {len(STARS)} positive shares summing to 1, got "
                         f"{marginal}")
    return marginal


def to_stars(prediction: np.ndarray, marginal=MARGINAL) -> np.ndarray:
    """Stars 1..5 (int8, the shape of ``prediction.ravel()``) by rank (module doc)."""
    shares = np.cumsum(check_marginal(marginal))[:-1]
    return rank_levels(prediction, shares, STARS).astype(np.int8)


def star_propensity(stars: np.ndarray, alpha: float = ALPHA,
                    observed: float = OBSERVED) -> np.ndarray:
    """``k alpha^max(0, 4 - r)`` per cell (float64), ``k`` giving an expected observed share
    of ``observed``. ``ValueError`` when ``alpha`` is not in (0, 1], ``observed`` not in
    (0, 1), or a propensity would exceed 1."""
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must be in (0, 1], got {alpha!r}")
    if not 0.0 < observed < 1.0:
        raise ValueError(f"observed must be in (0, 1), got {observed!r}")
    relative = float(alpha) ** np.maximum(0, 4 - np.asarray(stars, dtype=np.int64))
    p = relative * (observed / relative.mean())
    if p.max() > 1.0:
        raise ValueError(f"alpha {alpha} and observed share {observed} need a propensity "
                         f"{p.max():.3f} > 1")
    return p


def star_predictions(stars: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """``{name: prediction}`` (float64) for every name of :data:`STAR_MATRICES`, drawn in that
    order from ``default_rng([STAR_STREAM, seed])``."""
    stars = np.asarray(stars).astype(np.float64)
    rng = np.random.default_rng([STAR_STREAM, int(seed)])
    out = {name: raise_to_top(stars, low, 5.0, rng, name)
           for name, low in (("REC_ONES", 1.0), ("REC_FOURS", 4.0))}
    out["ROTATE"] = np.where(stars == 1, 5.0, stars - 1.0)
    out["SKEWED"] = np.clip(rng.normal(stars, (6.0 - stars) / 2.0), 0.0, 6.0)
    out["COARSENED"] = np.where(stars <= 3, 3.0, 4.0)
    return out


def star_repetition(stars: np.ndarray, p: np.ndarray, predictions: dict[str, np.ndarray],
                    seed: int) -> dict:
    """One repetition (observations drawn from ``default_rng([0, seed])``) as a JSON-ready
    dict: ``matrices``, ``observed_fraction``, ``truth[loss][matrix]``,
    ``estimate[loss][matrix][estimator]`` and ``relative_error`` of the same shape."""
    observed = np.flatnonzero(np.random.default_rng([0, int(seed)]).random(p.shape) < p)
    w = 1.0 / p[observed]
    stars = np.asarray(stars, dtype=np.float64)
    truth, est, rel = {}, {}, {}
    for loss in LOSSES:
        truth[loss], est[loss], rel[loss] = {}, {}, {}
        for name, pred in predictions.items():
            diff = pred - stars
            e = np.abs(diff) if loss == "MAE" else diff * diff
            true = float(e.mean())
            e_o = e[observed]
            ips = float(np.einsum("i,i->", w, e_o))
            values = {"Naive": float(e_o.mean()), "IPS": ips / e.size, "SNIPS": ips / float(w.sum())}
            truth[loss][name] = true
            est[loss][name] = values
            rel[loss][name] = {k: abs(v - true) / true for k, v in values.items()}
    return {"seed": int(seed), "matrices": list(predictions), "observed": int(observed.size),
            "observed_fraction": observed.size / p.size, "truth": truth, "estimate": est,
            "relative_error": rel}
