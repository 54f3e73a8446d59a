"""The prediction matrices whose loss the estimators estimate (Guo et al. 2021, section 4; the
reference's ``convert.py``), built from the conversion rates ``c`` with one seeded generator.

With ``n_9`` the number of cells where ``c = 0.9``:

* ``ONE`` / ``THREE`` / ``FIVE``: ``c`` with ``n_9`` cells, drawn uniformly without replacement
  among those where ``c`` is 0.1 / 0.3 / 0.5, set to 0.9;
* ``SKEW``: per cell a draw from N(c, ((1 - c) / 2)^2), clipped to [0.1, 0.9];
* ``CRS``: 0.1 where ``c >= 0.7``, else 0.5.

The reference counts the cells with ``np.count_nonzero(np.where(...))``, which counts the
*indices* of the matching cells that are not 0, so a matrix whose cell 0 matches is one short;
atrec counts the cells (at most one cell of 1.6 million differs).
"""

from __future__ import annotations

import numpy as np

MATRICES = ("ONE", "THREE", "FIVE", "SKEW", "CRS")
PREDICTION_STREAM = 2   # the generator of the prediction matrices: default_rng([stream, seed])


def raise_to_top(truth: np.ndarray, low: float, top: float, rng: np.random.Generator,
                 name: str) -> np.ndarray:
    """A copy of ``truth`` in which as many cells as hold ``top``, drawn uniformly without
    replacement among those that hold ``low``, are set to ``top`` (ONE, THREE and FIVE here,
    REC_ONES and REC_FOURS of :mod:`atrec.semisynthetic.stars`). ``ValueError`` naming
    ``name`` when there are fewer ``low`` cells than ``top`` ones."""
    n_top = int(np.count_nonzero(truth == top))
    cells = np.flatnonzero(truth == low)
    if len(cells) < n_top:
        raise ValueError(f"{name}: {len(cells)} cells at {low}, fewer than the {n_top} at {top}")
    out = np.array(truth, dtype=np.float64)
    out[rng.choice(cells, n_top, replace=False)] = top
    return out


def prediction_matrices(rates: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """``{name: prediction}`` for every name of :data:`MATRICES`, each float64 of the shape of
    ``rates`` (module doc). The draws are made in :data:`MATRICES` order from
    ``numpy.random.default_rng([PREDICTION_STREAM, seed])``. Raises ``ValueError`` when there
    are fewer cells at 0.1, 0.3 or 0.5 than at 0.9."""
    rates = np.asarray(rates, dtype=np.float64)
    rng = np.random.default_rng([PREDICTION_STREAM, int(seed)])
    out = {name: raise_to_top(rates, low, 0.9, rng, name)
           for name, low in (("ONE", 0.1), ("THREE", 0.3), ("FIVE", 0.5))}
    out["SKEW"] = np.clip(rng.normal(rates, (1.0 - rates) / 2.0), 0.1, 0.9)
    out["CRS"] = np.where(rates >= 0.7, 0.1, 0.5)
    return out
