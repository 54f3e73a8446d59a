"""``ijcai2022``: Saito and Nomura's protocol (IJCAI 2022, ``usaito/ijcai2022-adversarial-mf``),
as docs/protocols.md, "ijcai2022", specifies it.

Split (the same for every seed; the seed only initialises the model, as the code's
``tf.set_random_seed(run)``):

- train/validation: the MNAR ratings in their canonical order (Coat: row-major non-zero cells;
  Yahoo: file order), ``perm = RandomState(0).permutation(n)``, the first ``ceil(0.1 n)``
  positions the validation part and the rest the training part, each in ``perm`` order
  (scikit-learn's ``train_test_split(test_size=0.1, random_state=0)``; Coat 6,264 / 696);
- MCAR: ``RandomState(12345).binomial(1, 0.05, n_test)`` over the test rows marks the slice
  (CausE's control data and NB (true)'s prior; Coat 214 rows); the other rows (Coat 4,426) are
  the evaluated test set. **The slice is drawn once, from a fresh 12345 state, for every seed**:
  the reference code draws runs 1..9's slice from exactly that state (its evaluator reseeds
  NumPy at 12345 after each run) and run 0's from whatever state came before, so atrec's slice
  is the one 9 of its 10 runs share.

Training: batches of 2,048 drawn with replacement from a NumPy generator reset to 12345 in
every run (the positions ``RandomState(12345).randint`` gives, which is what the code's
``np.random.choice(np.arange(n), size)`` draws), 2,500 predictor steps, Glorot-uniform tables
and zero biases, Adam (lr 0.01, eps 1e-8), ``lam`` times half the sum of squares of every
table (not the global bias); after every step the validation criterion (self-normalised IPS
MSE with the run's propensity, which is the plain MSE for a method without one) and the test
MSE at the step of its lowest value (first on ties). MAE (not computed by the code) at that
step too. Ranking from the last step's parameters, on the evaluated test set: the code's
nDCG@5 and rating-weighted Recall@5 (:mod:`atrec.evaluation.registry`).

DAMF's cycle is 20 predictor steps then 20 adversary steps, each with 1,024 observed ratings
and 1,024 uniform cells: 5,000 loop steps of 1,024 hold its 2,500 predictor steps (the
adversary steps leave the predictor, hence the criterion, unchanged, so they are never
selected). ``ijcai-dr``'s cycle is 20 imputation steps then 20 predictor steps: 5,000 loop
steps of 2,048. In the reference code one NumPy stream draws both the observed positions and the
uniform cells of those methods; atrec draws the cells from its stateless per-replica stream
(:func:`atrec.learners.base.uniform_cells`): the same law, other draws.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from atrec.data.ratings import RatingData
from atrec.data.splits import Split, shuffle_cut
from atrec.names import config_key
from atrec.protocols.base import Protocol, Schedule

VALIDATION_FRACTION = 0.1
SPLIT_SEED = 0            # train_test_split(..., random_state=0): one split for every run
MCAR_SLICE_P = 0.05
MCAR_SLICE_SEED = 12345   # the state runs 1..9 of the reference code draw their slice from


def mcar_slice_mask(n_test: int) -> np.ndarray:
    """Boolean ``(n_test,)``: True on the rows of the MCAR slice (module doc)."""
    return np.random.RandomState(MCAR_SLICE_SEED).binomial(1, MCAR_SLICE_P, n_test).astype(bool)


# hyper_params.yaml of usaito/ijcai2022-adversarial-mf, one row per
# (data, method, propensities, dim, lam, extra): IPS and DR rows by propensity (both =
# user-item, oracle = nb-true). The code's *-1bitmc rows ran with uniform propensities, so
# atrec's 1bit-mc has no reference values here.
_UNIFORM_USER_BOTH = ("uniform", "user", "user-item")
_REFERENCE_ROWS = (
    ("coat", "mf-ips", _UNIFORM_USER_BOTH, 35, 2.3295e-3, {}),
    ("coat", "mf-ips", ("item",), 5, 2.3676e-3, {}),
    ("coat", "mf-ips", ("nb-true",), 5, 2.0968e-3, {}),
    ("coat", "ijcai-dr", _UNIFORM_USER_BOTH, 30, 1.3949e-3, {}),
    ("coat", "ijcai-dr", ("item",), 5, 1.7271e-3, {}),
    ("coat", "ijcai-dr", ("nb-true",), 5, 1.6015e-3, {}),
    ("coat", "cause", ("none",), 40, 5.6755e-3, {"cause_pen": 2.8906e-2}),
    ("coat", "damf", ("none",), 30, 1.9581e-3, {"pen": 5.2915e-2}),
    ("yahoo", "mf-ips", ("uniform", "item", "user-item"), 40, 1.2852e-4, {}),
    ("yahoo", "mf-ips", ("user",), 40, 7.3433e-5, {}),
    ("yahoo", "mf-ips", ("nb-true",), 30, 6.6366e-5, {}),
    ("yahoo", "ijcai-dr", ("uniform",), 5, 3.0298e-5, {}),
    ("yahoo", "ijcai-dr", ("user-item",), 5, 8.6842e-5, {}),
    ("yahoo", "ijcai-dr", ("item",), 10, 7.3433e-5, {}),
    ("yahoo", "ijcai-dr", ("user",), 40, 1.2852e-4, {}),
    ("yahoo", "ijcai-dr", ("nb-true",), 30, 3.0298e-5, {}),
    ("yahoo", "cause", ("none",), 40, 6.8443e-5, {"cause_pen": 8.9509e-8}),
    ("yahoo", "damf", ("none",), 40, 5.5360e-5, {"pen": 3.7963e-2}),
)


def _reference_table() -> dict:
    """``dataset -> config key -> values`` of :data:`_REFERENCE_ROWS`."""
    table: dict = {}
    for dataset, method, propensities, dim, lam, extra in _REFERENCE_ROWS:
        for propensity in propensities:
            key = config_key(propensity, False, method)
            table.setdefault(dataset, {})[key] = {"dim": dim, "lam": lam, **extra}
    return table


REFERENCE_PARAMS = _reference_table()


class IJCAI2022(Protocol):
    name = "ijcai2022"
    label = "Saito & Nomura 2022 (IJCAI)"
    description = ("the IJCAI 2022 code's 1-5 star protocol: fixed split, 2,500 steps of "
                   "2,048, MSE, nDCG@5 and rating-weighted Recall@5")
    reference = "Saito and Nomura, IJCAI 2022; usaito/ijcai2022-adversarial-mf"
    metrics = ("mae", "mse", "ndcg5_ijcai", "recall5_ijcai")
    selection = ("lowest validation criterion (self-normalised IPS MSE with the run's "
                 "propensity; plain MSE for a method without one)")
    schedule = Schedule(steps=2500, batch_size=2048, learning_rate=0.01, bias_init="zero")
    method_steps: ClassVar[dict] = {"damf": {"steps": 5000, "batch_size": 1024},
                                    "ijcai-dr": {"steps": 5000}}
    ranking_part = "test"
    param_sets = ("reference", "tuned")
    seeds = 10  # the code reports mean and SD over 10 runs
    reference_params = REFERENCE_PARAMS
    split_description = ("one fixed 90/10 split (RandomState(0)); MCAR slice "
                         "binomial(0.05) from RandomState(12345), the same for every seed; "
                         "ranking on the evaluated 95%")

    def split(self, data: RatingData, seed: int) -> Split:
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        train_pos, val_pos = shuffle_cut(len(data.train), VALIDATION_FRACTION, SPLIT_SEED)
        in_slice = mcar_slice_mask(len(data.test))
        return Split(dataset=data.name, seed=seed,
                     train=data.train.take(train_pos), val=data.train.take(val_pos),
                     test=data.test.take(np.flatnonzero(~in_slice)),
                     test_prior=data.test.take(np.flatnonzero(in_slice)),
                     test_full=data.test, num_users=data.num_users, num_items=data.num_items)

    def split_record(self) -> dict:
        return {"validation_fraction": VALIDATION_FRACTION, "split_seed": SPLIT_SEED,
                "mcar_split": {"kind": "binomial", "slice_p": MCAR_SLICE_P,
                               "seed": MCAR_SLICE_SEED, "per_seed": False}}
