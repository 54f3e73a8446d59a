"""Tuning Figure 2's configurations: one study per (min_items, with/without AT), on the data
and split of seed 12345, weighted by the data-level ``P(i)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from atrec import tuning
from atrec.data.ratings import RatingData
from atrec.experiments.fitting import validation_loss
from atrec.propensity.builtin import DataItem
from atrec.run_settings import PAPER_TRIALS, SAMPLER_SEED, TUNING_SEED, settings_dict
from atrec.params.lookup import HyperParams
from atrec.tuning import storage as tuning_storage
from atrec.workflows.variance.data import build_point_data
from atrec.workflows.variance.request import DATA_SEED, PROPENSITY


def tune_variance(data: RatingData, min_items: Sequence[int], at_options: Sequence[bool],
                  trials: int = PAPER_TRIALS, storage: str | None = None, settings=None, at_settings=None,
                  export_path: Path | None = None, study_prefix: str = "atrec",
                  progress: Callable | None = None) -> list:
    """Tune every (min_items, with/without AT) as Table 1 is tuned; export to 'tuned'.

    Objective: the lowest validation loss of one run on the data built with seed 12345 and its
    seed-12345 split, weighted by the data-level ``P(i)`` (:class:`~atrec.propensity.builtin.DataItem`); search
    space, TPE seed, storage, resumption and export as :mod:`atrec.tuning` (studies named e.g.
    ``atrec-ml-100k-min5-item-at``; entries ``ml-100k-min5`` -> ``item-at`` in the tuned file).
    ``progress`` is passed to :func:`atrec.tuning.study.run_study`. Returns the
    :class:`atrec.tuning.study.StudyOutcome` of every study.
    """
    url = storage or tuning_storage.default_storage_url()
    opened = tuning_storage.open_storage(url)
    outcomes = []
    for m in min_items:
        v = build_point_data(data, m, DATA_SEED)
        estimator = DataItem(v.item_propensity)
        for with_at in at_options:
            def objective(params: HyperParams, v=v, estimator=estimator, with_at=with_at):
                return validation_loss(v.data, PROPENSITY, with_at, params, TUNING_SEED,
                                       settings, at_settings, estimator)

            attrs = {"dataset": v.data.name, "propensity": PROPENSITY, "with_at": with_at,
                     "objective": "min validation loss, data and split seed 12345, "
                                  "data-level P(i)",
                     "settings": settings_dict(settings, at_settings, with_at),
                     "search_space": tuning.SEARCH_SPACE.as_dict(),
                     "sampler_seed": SAMPLER_SEED, "data": dict(data.checksums)}
            name = tuning.study_name(study_prefix, v.data.name, PROPENSITY, with_at)
            outcome = tuning.run_study(name, objective, with_at, trials, opened, attrs=attrs,
                                       progress=progress)
            outcome.storage = tuning_storage.storage_label(url)
            outcome.dataset, outcome.propensity, outcome.with_at = v.data.name, PROPENSITY, with_at
            tuning.export_best([outcome], export_path)
            outcomes.append(outcome)
    return outcomes
