"""The data of one ``min_items``: ML-100K filtered and re-sampled
(:func:`atrec.data.ml100k.build_variance_data`), and the run that trains on it."""

from __future__ import annotations

import numpy as np

from atrec.data.ml100k import VarianceData, build_variance_data
from atrec.data.ratings import RatingData
from atrec.errors import AtrecError
from atrec.experiments.spec import RunSpec
from atrec.propensity.builtin import DataItem
from atrec.params.lookup import HyperParams
from atrec.workflows.variance.request import PROPENSITY, VarianceRequest


def check_min_items(ratings: RatingData, min_items: int) -> None:
    """One-line :class:`AtrecError` when no movie of ``ratings`` has ``min_items`` ratings."""
    most = int(np.bincount(ratings.train.item).max())
    if min_items > most:
        raise AtrecError(f"--min-items {min_items}: no movie has that many ratings (the most-rated "
                         f"movie has {most}); choose values up to {most}")


def build_point_data(ratings: RatingData, min_items: int, seed: int) -> VarianceData:
    """:func:`atrec.data.ml100k.build_variance_data` on all of ML-100K (``ratings.train``)."""
    check_min_items(ratings, min_items)
    return build_variance_data(ratings.train, min_items, seed, ratings.checksums)


def run_spec(v: VarianceData, with_at: bool, params: HyperParams, source: str,
          seeds: tuple[int, ...], request: VarianceRequest) -> RunSpec:
    experiment = {"name": "variance", "min_items": v.min_items, "data_seed": v.seed,
                  "data_draw": request.data_draw,
                  "min_relative_propensity": v.min_relative_propensity,
                  "propensity": "P(i) = n_i / max n_i over the filtered data (paper Eq. ml_pscore)"}
    return RunSpec(v.data.name, PROPENSITY, with_at, params, source, seeds, request.settings,
                   request.at_settings if with_at else None,
                   estimator=DataItem(v.item_propensity), experiment=experiment)
