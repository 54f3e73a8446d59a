"""The protocol-gap steps between the two binary protocols: ``binary-icde24-cleantest`` and
``binary-clean-icde24rule``.

The protocol gap (``atrec report --table protocol-gap``) is decomposed into its parts by a chain
of runs, each changing one factor from ``binary-icde24`` towards ``binary-clean``
(docs/protocols.md, "The protocol gap"). The chain's other points are runs of the two protocols
themselves (``binary-clean`` at the parameter set ``reference``, in the code's form or the
corrected one); these two are not:

``binary-icde24-cleantest``: ``binary-icde24``'s training (every MNAR rating, no validation
part, the reference code's stopping rule, the last epoch, the code's forms, Yahoo's 1-based
ids, 10 seeds, the ``reference`` values) measured on ``binary-clean``'s test set: the MCAR
ratings without the 5% slice, which is what the leaking methods read instead of a per-seed
slice left in the test set. Its records carry both conventions of the top-K metrics, so the
report separates the test set (``(ref)`` metrics against ``binary-icde24``'s) from the nDCG
convention (the standard metrics against the ``(ref)`` ones of the same runs).

``binary-clean-icde24rule``: ``binary-clean``'s data (its split, whatever it holds out, and
0-based ids) trained under ``binary-icde24``'s rule (the code's stopping rule on the training
loss, the last epoch, the code's forms), 10 seeds: the step between it and ``binary-clean`` in
the code's form is ``binary-clean``'s selection rule alone.

Both take what they share with ``binary-clean`` from :class:`BinaryClean` itself, so whatever
``binary-clean`` changes in its split they follow.
"""

from __future__ import annotations

from atrec.data.ratings import RatingData, Ratings
from atrec.data.splits import Split
from atrec.protocols.binary import (
    BINARY_CLEAN_METRICS,
    ONE_BASED,
    BinaryClean,
    BinaryICDE24,
)


class BinaryICDE24CleanTest(BinaryICDE24):
    name = "binary-icde24-cleantest"
    label = "Binary MCAR, ICDE 2024 training, clean test set"
    description = ("binary-icde24's training, scored on binary-clean's test set (the 5% MCAR "
                   "slice the leaking methods read removed from it): a step of the protocol "
                   "gap's decomposition")
    reference = "atrec's design (docs/protocols.md, The protocol gap)"
    metrics = BINARY_CLEAN_METRICS
    param_sets = ("reference", "tuned")
    split_description = ("all MNAR ratings to train as binary-icde24; binary-clean's test set "
                         "and 5% MCAR slice (cut once, removed from the test set); Yahoo ids "
                         "1-based")

    def split(self, data: RatingData, seed: int) -> Split:
        icde = super().split(data, seed)
        clean = BinaryClean().split(data, seed)
        shift = 1 if data.name in ONE_BASED else 0
        test, prior = (Ratings(r.user + shift, r.item + shift, r.rating)
                       for r in (clean.test, clean.test_prior))
        return Split(dataset=data.name, seed=seed, train=icde.train, val=icde.val, test=test,
                     test_prior=prior, test_full=test, num_users=icde.num_users,
                     num_items=icde.num_items)

    def split_record(self) -> dict:
        return {**BinaryClean().split_record(), "validation_fraction": 0.0,
                "one_based_ids": list(ONE_BASED)}


class BinaryCleanICDE24Rule(BinaryClean):
    name = "binary-clean-icde24rule"
    label = "Binary MCAR, clean data, ICDE 2024 stopping rule"
    description = ("binary-clean's split and test set trained under binary-icde24's rule (the "
                   "code's stopping rule, last epoch, the code's forms): a step of the protocol "
                   "gap's decomposition")
    reference = "atrec's design (docs/protocols.md, The protocol gap)"
    selection = BinaryICDE24.selection
    param_sets = ("reference", "tuned")
    seeds = BinaryICDE24.seeds
    epochs = BinaryICDE24.epochs
