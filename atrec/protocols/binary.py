"""The binary protocols: ``binary-icde24`` (the ICDE 2024 collection's, traps included) and
``binary-clean`` (the same task without them), as docs/protocols.md, "The binary protocols",
specifies.

Both see the ratings as binary labels, ``y = 1`` for a rating of 3 or more (the ``binary``
view), train on the MNAR ratings, test on the MCAR ratings, and train in epochs of shuffled full
batches (:mod:`atrec.learners.epochs`) with binary methods (:mod:`atrec.methods.binary`).

``binary-icde24`` (per seed ``s``, NumPy's stream ``RandomState(s)`` in place of the code's
``np.random.seed(2020)``):

- train = every MNAR rating in its canonical order, no validation part; test = every MCAR
  rating, and it is also what the ranking metrics rank;
- the 5% slice the leaking methods read (DR, DR-BIAS, DR-MSE, Stable-DR, TDR) is
  ``RandomState(s).permutation(n_test)[:int(0.05 n_test)]``, the first draw of the run's stream,
  and it STAYS in the test set (Coat 232 rows, Yahoo 2,700);
- Yahoo's ids are the file's 1-based ids used as indices, so the tables have a never-observed
  user 0 and item 0 (15,401 x 1,001) that every all-pairs set holds, and its training triplets
  are shuffled (the code shuffles them before seeding; atrec draws the shuffle from the seed);
- the reference code's stopping rule on the training loss; the last epoch is evaluated.

``binary-clean``: each seed splits the MNAR ratings 90/10 into training and validation parts
(as ``saito2020`` does); the 5% slice is cut once (seed 12345, as ``saito2020``'s prior slice)
and REMOVED from the test set, whatever the method; one selection rule for every method
(:data:`CLEAN_EPOCHS`): early stopping and tuning on ``1 -`` the pooled AUC of the predictor on
that MCAR slice (the training side's only MCAR data: it estimates the test's AUC without a
test label, where log loss on the MNAR validation part, positive rate 0.52 against the test's
0.40 on Coat, rewards fitting the MNAR bias), checked after every epoch, patience
:data:`~atrec.run_settings.PATIENCE_STEPS` optimiser steps, the best epoch's parameters kept,
at most :data:`~atrec.run_settings.MAX_STEPS` steps (a run the cap stops is flagged); the MNAR
validation part still feeds the failed-fit rules and the imputation's diagnostics; corrected
forms of the methods by default; 0-based ids; 20 seeds.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from atrec.data.ratings import RatingData, Ratings
from atrec.data.splits import (
    MCAR_EVAL_FRACTION,
    MCAR_SPLIT_SEED,
    VALIDATION_FRACTION,
    Split,
    shuffle_cut,
)
from atrec.protocols.base import Protocol
from atrec.run_settings import (  # noqa: F401  (EpochSettings, form_value re-exported)
    MAX_EPOCHS,
    MAX_STEPS,
    PATIENCE,
    PATIENCE_STEPS,
    EpochSettings,
    Schedule,
    form_value,
)

POSITIVE_FROM = 3          # y = 1 for a rating >= 3 (both train and test)
LEAK_FRACTION = 0.05       # the MCAR slice the leaking methods read
SHUFFLE_SALT = 2020        # keys the seeded stand-in for Yahoo's unseeded training shuffle
ONE_BASED = ("yahoo",)     # datasets whose reference code indexes by the file's 1-based ids

# the metrics of each protocol's records (names in atrec.evaluation.registry): "_ref" counts a
# test user without a positive as the reference code does, the others leave such users out
BINARY_REFERENCE_METRICS = ("mae", "mse", "logloss", "auc", "auc_user", "ndcg5_ref",
                            "recall5_ref", "precision5", "f1_5_ref")
BINARY_CLEAN_METRICS = BINARY_REFERENCE_METRICS + ("ndcg5", "recall5", "precision5_std", "f1_5")


# binary-clean's epochs (and the truth protocols'): validation stopping on the MCAR slice's AUC,
# patience and cap in optimiser steps (an epoch cap as large as the step cap never binds first)
CLEAN_EPOCHS = EpochSettings(stopping="validation", forms="corrected", selection="mcar-auc",
                             unit="steps", patience=PATIENCE_STEPS, max_steps=MAX_STEPS,
                             max_epochs=MAX_STEPS)
CLEAN_SELECTION = (f"one rule for every method: early stopping and tuning on 1 - the pooled AUC "
                   f"of the MCAR slice carved from the training side, patience {PATIENCE_STEPS} "
                   f"optimiser steps, best epoch kept, at most {MAX_STEPS:,} steps (flagged)")


def binarise(ratings: Ratings) -> Ratings:
    """The same pairs with labels ``1`` (rating >= 3) or ``0``, int8."""
    return Ratings(ratings.user, ratings.item, (ratings.rating >= POSITIVE_FROM).astype(np.int8))


class _Binary(Protocol):
    view = "binary"
    schedule = Schedule(kind="epochs", steps=MAX_EPOCHS, batch_size=128, learning_rate=0.01,
                        adam_epsilon=1e-8, bias_init="zero")
    ranking_part = "test"
    epochs: ClassVar[EpochSettings] = EpochSettings()

    @staticmethod
    def labelled(data: RatingData, seed: int) -> tuple[Ratings, Ratings]:
        """The MNAR and MCAR ratings as binary labels, for a valid ``seed``."""
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        return binarise(data.train), binarise(data.test)

    def train_settings(self, method: str, loss: str = "snips",
                       batch_seed: int | None = None) -> EpochSettings:
        return self.epochs

    def at_settings(self, loss: str = "snips", batch_seed: int | None = None) -> EpochSettings:
        """AT trains its three predictors under the same epochs and rule."""
        return self.epochs


class BinaryICDE24(_Binary):
    name = "binary-icde24"
    label = "Binary MCAR, ICDE 2024 code"
    description = ("ratings >= 3 as positives, all MNAR to train, all MCAR to test, no "
                   "validation, the code's stopping rule and its leaks")
    reference = "Li et al., ICDE 2024; haoxuanli-pku/ICDE24-MNAR (real_world/)"
    metrics = BINARY_REFERENCE_METRICS
    selection = "none: the last epoch (the reference code's stopping rule on the training loss)"
    param_sets = ("reference", "tuned")
    seeds = 10
    has_validation = False
    split_description = ("all MNAR ratings to train, all MCAR to test; the leaking methods' 5% "
                         "slice drawn per seed and left in the test set; Yahoo ids 1-based")
    epochs = EpochSettings(stopping="reference", forms="coded")

    def split(self, data: RatingData, seed: int) -> Split:
        train, test = self.labelled(data, seed)
        nu, ni = data.num_users, data.num_items
        if data.name in ONE_BASED:
            shift = lambda r: Ratings(r.user + 1, r.item + 1, r.rating)
            train, test, nu, ni = shift(train), shift(test), nu + 1, ni + 1
            # the code shuffles Yahoo's triplets before seeding (unreproducible); a shuffle drawn
            # from the seed (apart from the run's stream) has the same law and is reproducible
            train = train.take(np.random.default_rng([seed, SHUFFLE_SALT]).permutation(
                len(train)))
        leak = leak_positions(len(test), seed)
        empty = train.take(np.zeros(0, np.int64))
        return Split(dataset=data.name, seed=seed, train=train, val=empty, test=test,
                     test_prior=test.take(leak), test_full=test, num_users=nu, num_items=ni)

    def split_record(self) -> dict:
        return {"labels": f"rating >= {POSITIVE_FROM}", "validation_fraction": 0.0,
                "mcar_split": {"kind": "leak", "fraction": LEAK_FRACTION, "per_seed": True,
                               "in_test": True},
                "one_based_ids": list(ONE_BASED)}


def leak_positions(n_test: int, seed: int) -> np.ndarray:
    """The test rows the leaking methods read under ``binary-icde24``: the first
    ``int(0.05 n_test)`` of ``RandomState(seed).permutation(n_test)``."""
    return np.random.RandomState(seed).permutation(n_test)[:int(LEAK_FRACTION * n_test)]


class BinaryClean(_Binary):
    name = "binary-clean"
    label = "Binary MCAR, clean"
    description = ("the binary task without the traps: one selection rule on the training "
                   "side's MCAR slice, no test label in training, corrected forms")
    reference = "atrec's design (docs/protocols.md, binary-clean)"
    metrics = BINARY_CLEAN_METRICS
    selection = CLEAN_SELECTION
    param_sets = ("tuned-atrec", "reference", "tuned")
    seeds = 20
    split_description = ("90/10 train/validation shuffled per seed; the MCAR 5% slice cut once "
                         "(seed 12345) and removed from the test set")
    epochs = CLEAN_EPOCHS

    def split(self, data: RatingData, seed: int) -> Split:
        train, test = self.labelled(data, seed)
        train_pos, val_pos = shuffle_cut(len(train), VALIDATION_FRACTION, seed)
        eval_rest, eval_pos = shuffle_cut(len(test), MCAR_EVAL_FRACTION, MCAR_SPLIT_SEED)
        evaluated = test.take(np.sort(eval_pos))
        return Split(dataset=data.name, seed=seed, train=train.take(train_pos),
                     val=train.take(val_pos), test=evaluated, test_prior=test.take(eval_rest),
                     test_full=evaluated, num_users=data.num_users, num_items=data.num_items)

    def split_record(self) -> dict:
        return {"labels": f"rating >= {POSITIVE_FROM}",
                "validation_fraction": VALIDATION_FRACTION,
                "mcar_split": {"eval_fraction": MCAR_EVAL_FRACTION, "seed": MCAR_SPLIT_SEED,
                               "in_test": False}}
