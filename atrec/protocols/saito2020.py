"""``saito2020``: the paper's protocol (docs/protocol.md), atrec's default.

Per seed ``s``: the MNAR ratings shuffled by ``s`` and cut 90/10 into train and validation; the
MCAR test set cut once (seed 12345) into a 5% slice (the NB (true) prior) and the 95% on which
MAE and MSE are measured; nDCG@3 on the whole MCAR test set from the final parameters. Steps of
1,024 ratings drawn with replacement (NumPy reset to 12345 in every run), 500 of them, the
reported step the one of lowest validation loss. Its records keep the folders they always had.
"""

from __future__ import annotations

from atrec.data.ratings import RatingData
from atrec.data.splits import (
    MCAR_EVAL_FRACTION,
    MCAR_SPLIT_SEED,
    VALIDATION_FRACTION,
    Split,
    make_split,
)
from atrec.protocols.base import Protocol, Schedule


class Saito2020(Protocol):
    name = "saito2020"
    label = "Saito 2020 (SIGIR)"
    description = "the paper's 1-5 star protocol: MAE, MSE and nDCG@3"
    reference = "Saito, SIGIR 2020; usaito/asymmetric-tri-rec-real"
    metrics = ("mae", "mse", "ndcg3_paper", "ndcg3_standard")
    selection = "lowest validation loss (self-normalised IPS MSE with the run's propensity)"
    schedule = Schedule(steps=500, batch_size=1024, learning_rate=0.01, bias_init="normal")
    ranking_part = "test_full"
    param_sets = ("published", "tuned-atrec", "reference", "tuned")
    split_description = ("90/10 train/validation shuffled per seed; MCAR 5%/95% cut once "
                         "(seed 12345); nDCG on the whole MCAR set")
    legacy_names = True   # its records, studies and tuned file keep their names
    shared_sets = True    # published, tuned-atrec, reference: atrec's shared sets

    def split(self, data: RatingData, seed: int) -> Split:
        return make_split(data, seed)

    def split_record(self) -> dict:
        return {"validation_fraction": VALIDATION_FRACTION,
                "mcar_split": {"eval_fraction": MCAR_EVAL_FRACTION, "seed": MCAR_SPLIT_SEED}}
