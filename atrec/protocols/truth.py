"""The binary-truth protocols: train on one draw of observations from the semi-synthetic true
matrix, score against the whole truth (docs/semisynthetic.md, "Learning with known truth").

The truth is MovieLens 100K completed and converted to conversion rates ``c`` in
{0.1, ..., 0.9} (:mod:`atrec.semisynthetic`), with the benchmark's ``corrected`` form
(:data:`atrec.semisynthetic.forms.FORMS`): the marginal rank cuts and the intended propensity
``p = 0.5^k`` by rate. Per seed ``s`` (the streams of the estimator benchmark's repetition
``s``, so the two see the same draws):

- every cell is observed with probability ``p^alpha`` (``alpha``: the mechanism's strength,
  :attr:`TruthProtocol.alpha`; 1 is the benchmark's mechanism, 0 would observe every cell),
  ``o ~ Bernoulli(p^alpha)`` from ``default_rng([0, s])``, and labelled
  ``y ~ Bernoulli(c)`` from ``default_rng([1, s])``; the observed cells are then thinned
  uniformly to one fixed count, the expected count less five standard deviations
  (:func:`fixed_size`, :func:`thin`: about 1% of them dropped at ``alpha = 1``), which scales
  every propensity by the same factor and lets the seeds train stacked, with equally many
  pairs;
- the observed cells (row-major order) are shuffled with ``s`` and cut 90/10 into training
  and validation parts, as ``binary-clean`` cuts the MNAR ratings; early stopping, selection,
  tuning rules and the corrected forms are ``binary-clean``'s (:data:`CLEAN_EPOCHS`);
- the methods that read MCAR labels get :data:`MCAR_CELLS` cells drawn uniformly from all
  cells (``default_rng([2, s])``) with their labels ``y`` (the stand-in of ``binary-clean``'s
  5% MCAR slice), never scored; they are also the slice ``binary-clean``'s one selection rule
  reads for every method (``1 -`` their pooled AUC, patience in optimiser steps);
- the test is every cell, its "rating" the true rate ``c``: the metrics of
  :mod:`atrec.evaluation.truth_metrics` (MSE and MAE of ``q`` against ``c`` beside them).

``binary-truth`` is ``alpha = 1``; ``binary-truth-a050`` and ``binary-truth-a150`` are 0.5 and
1.5 (the range of the ICDE 2024 collection's semi-synthetic notebooks), each with its own
results folder. The methods' ``reference`` values under these protocols are the reference
code's Yahoo! R3 constants (:attr:`TruthProtocol.reference_from`): the larger of its two data
sets, nearer the about 135,000 training cells of a draw than Coat's 6,000. ``tuned-atrec``
(``atrec/resources/binary_truth_tuned_params.yaml``) holds values tuned on the validation part
of ``binary-truth``'s draws with a small budget (12 trials a method; its header says how).
"""

from __future__ import annotations

import functools
from typing import ClassVar

import numpy as np

from atrec.data.ratings import RatingData, Ratings
from atrec.data.splits import VALIDATION_FRACTION, Split, shuffle_cut
from atrec.errors import AtrecError
from atrec.protocols.binary import CLEAN_EPOCHS, CLEAN_SELECTION, _Binary
from atrec.semisynthetic.forms import FORMS, propensity
from atrec.semisynthetic.truth import DATASET, Truth, load_completion, truth_of

TRUTH_FORM = FORMS["corrected"]   # intended propensity, marginal cuts, fresh labels per seed
MCAR_STREAM = 2                   # default_rng([MCAR_STREAM, seed]) draws the MCAR cells
THIN_STREAM = 3                   # default_rng([THIN_STREAM, seed]) thins the observations
THIN_SIGMAS = 5.0                 # the kept count: the expected count less 5 sd
MCAR_CELLS = 1000                 # uniform cells with labels, for the methods that read MCAR
TRUTH_METRICS = ("mae", "mse", "truth_logloss", "truth_auc", "truth_ndcg5", "truth_recall5",
                 "truth_user_auc")


_LOADED: dict = {}   # cuts -> Truth, kept for the process


def _truth(cuts: tuple[float, ...]) -> Truth:
    """The true rates of the default completion at ``cuts`` (trained once and cached on disk,
    :func:`atrec.semisynthetic.truth.load_completion`; kept in memory for the process)."""
    if cuts not in _LOADED:
        _LOADED[cuts] = truth_of(load_completion(), cuts)
    return _LOADED[cuts]


@functools.lru_cache(maxsize=2)
def _all_cells(num_users: int, num_items: int, cuts: tuple[float, ...]) -> Ratings:
    """Every cell, row-major, with its true rate as the rating (float64): the test set, shared
    by every seed."""
    cells = np.arange(num_users * num_items, dtype=np.int64)
    return Ratings((cells // num_items).astype(np.int32), (cells % num_items).astype(np.int32),
                   _truth(cuts).rates)


def fixed_size(p: np.ndarray) -> int:
    """The number of observed cells every seed keeps: ``floor(mu - THIN_SIGMAS sigma)`` with
    ``mu = sum p`` and ``sigma^2 = sum p (1 - p)`` the mean and variance of a Bernoulli draw's
    count, so that a draw falls short about once in 3.5 million."""
    return int(np.floor(p.sum() - THIN_SIGMAS * np.sqrt((p * (1.0 - p)).sum())))


def thin(seen: np.ndarray, size: int, seed: int) -> np.ndarray:
    """``size`` of the observed cells ``seen`` (sorted), drawn uniformly without replacement
    (``default_rng([THIN_STREAM, seed])``): every cell's chance of being kept is then the
    same factor times ``p``, so the mechanism keeps its propensities up to a constant, and the
    seeds of a group have equally many training pairs (they train stacked). ``AtrecError``
    when the draw has fewer cells (module doc)."""
    if seen.size < size:
        raise AtrecError(f"seed {seed} observed {seen.size} cells, fewer than the {size} every "
                         f"seed keeps: use another seed")
    keep = np.random.default_rng([THIN_STREAM, int(seed)]).choice(seen.size, size,
                                                                   replace=False)
    return seen[np.sort(keep)]


class TruthProtocol(_Binary):
    """Base of the binary-truth protocols (module doc); a subclass sets ``name`` and
    ``alpha``."""

    alpha: ClassVar[float] = 1.0
    view = "binary"
    metrics = TRUTH_METRICS
    selection = CLEAN_SELECTION.replace("carved from the training side", "of uniform cells") \
        + " (as binary-clean)"
    # reference first: the values the documented runs use; tuned-atrec: shipped, a small budget
    param_sets = ("reference", "tuned-atrec", "tuned")
    reference = "atrec's design (docs/semisynthetic.md); truth: Guo et al., SIGIR 2021"
    datasets = (DATASET,)
    reference_from: ClassVar[dict] = {DATASET: "yahoo"}
    seeds = 10
    epochs = CLEAN_EPOCHS

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.split_description = (f"one draw per seed of o ~ Bernoulli(p^{cls.alpha:g}), "
                                 f"y ~ Bernoulli(c) from the ML-100K truth, 90/10 "
                                 f"train/validation; test: all cells against c")

    def propensities(self, rates: np.ndarray) -> np.ndarray:
        """Each cell's probability of being observed, ``p^alpha`` (float64)."""
        return propensity(rates, TRUTH_FORM.propensity) ** self.alpha

    def split(self, data: RatingData, seed: int) -> Split:
        if data.name != DATASET:
            raise AtrecError(f"protocol {self.name} trains on the semi-synthetic truth of "
                             f"{DATASET}: give --dataset {DATASET}")
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        truth = _truth(TRUTH_FORM.cuts)
        nu, ni = data.num_users, data.num_items
        if truth.rates.size != nu * ni:
            raise AtrecError(f"the truth has {truth.rates.size} cells, {DATASET} {nu} x {ni}: "
                             f"rebuild it with 'atrec semisynthetic --rebuild'")
        labels = TRUTH_FORM.labels_for(truth.rates, seed).astype(np.int8)
        p = self.propensities(truth.rates)
        seen = thin(np.flatnonzero(TRUTH_FORM.observations(p, seed)), fixed_size(p), seed)
        observed = Ratings((seen // ni).astype(np.int32), (seen % ni).astype(np.int32),
                           labels[seen])
        train_pos, val_pos = shuffle_cut(len(observed), VALIDATION_FRACTION, seed)
        mcar = np.sort(np.random.default_rng([MCAR_STREAM, int(seed)]).choice(
            nu * ni, min(MCAR_CELLS, nu * ni), replace=False))
        prior = Ratings((mcar // ni).astype(np.int32), (mcar % ni).astype(np.int32),
                        labels[mcar])
        test = _all_cells(nu, ni, TRUTH_FORM.cuts)
        return Split(dataset=data.name, seed=seed, train=observed.take(train_pos),
                     val=observed.take(val_pos), test=test, test_prior=prior, test_full=test,
                     num_users=nu, num_items=ni)

    def split_record(self) -> dict:
        """The records' split block: the form, alpha and, once a split has loaded the truth
        (as every run has before its records are written), its checksums and recipe; nothing
        is loaded or trained here."""
        truth = {"dataset": DATASET, "form": TRUTH_FORM.as_dict(), "alpha": self.alpha,
                 "observed_kept": f"floor(sum p - {THIN_SIGMAS:g} sd), thinned uniformly"}
        loaded = _LOADED.get(TRUTH_FORM.cuts)
        if loaded is not None:
            truth.update(rates_sha256=loaded.sha256,
                         completion_sha256=loaded.completion.get("store_sha256"),
                         completion_recipe=loaded.completion.get("recipe"))
        return {"labels": "y ~ Bernoulli(c), drawn per seed",
                "validation_fraction": VALIDATION_FRACTION, "truth": truth,
                "mcar_split": {"kind": "uniform cells", "cells": MCAR_CELLS,
                               "in_test": False}}


class BinaryTruth(TruthProtocol):
    name = "binary-truth"
    label = "Binary, semi-synthetic truth"
    description = ("one draw of MNAR observations (p = 0.5^k) from the ML-100K truth to train, "
                   "binary-clean's rules, every cell's true rate to test")
    alpha = 1.0


class BinaryTruthA050(TruthProtocol):
    name = "binary-truth-a050"
    label = "Binary, semi-synthetic truth, alpha 0.5"
    description = "binary-truth with the observation probability p^0.5 (a weaker mechanism)"
    alpha = 0.5


class BinaryTruthA150(TruthProtocol):
    name = "binary-truth-a150"
    label = "Binary, semi-synthetic truth, alpha 1.5"
    description = "binary-truth with the observation probability p^1.5 (a stronger mechanism)"
    alpha = 1.5


TRUTH_PROTOCOLS = (BinaryTruthA050, BinaryTruth, BinaryTruthA150)
