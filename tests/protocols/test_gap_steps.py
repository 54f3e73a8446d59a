"""binary-icde24-cleantest, the protocol gap's step (atrec/protocols/gap_steps.py): binary-icde24's
training data, binary-clean's test set and 5% slice, on Yahoo in the 1-based ids binary-icde24
trains with."""

from dataclasses import replace

import numpy as np
import pytest

from atrec.experiments.fitting import compute_group
from atrec.experiments.spec import RunSpec
from atrec.methods.registry import default_form
from atrec.params.lookup import HyperParams
from atrec.protocols import get_protocol

STEP = "binary-icde24-cleantest"


def _pairs(r):
    return list(zip(r.user.tolist(), r.item.tolist(), r.rating.tolist()))


@pytest.mark.parametrize("dataset, shift", [("coat", 0), ("yahoo", 1)])
def test_icde24_training_and_the_clean_test_set(tiny_data, dataset, shift):
    data = replace(tiny_data, name=dataset)
    step = get_protocol(STEP).split(data, 5)
    icde = get_protocol("binary-icde24").split(data, 5)
    clean = get_protocol("binary-clean").split(data, 5)
    assert _pairs(step.train) == _pairs(icde.train) and len(step.val) == 0
    assert (step.num_users, step.num_items) == (icde.num_users, icde.num_items)
    for mine, theirs in ((step.test, clean.test), (step.test_prior, clean.test_prior),
                         (step.test_full, clean.test)):
        assert np.array_equal(mine.user, theirs.user + shift)
        assert np.array_equal(mine.item, theirs.item + shift)
        assert np.array_equal(mine.rating, theirs.rating)
    # the slice the leaking methods read is not scored, and is not binary-icde24's per-seed one
    slice_ = {p[:2] for p in _pairs(step.test_prior)}
    assert not slice_ & {p[:2] for p in _pairs(step.test)}
    assert _pairs(step.test_prior) != _pairs(icde.test_prior)


def test_it_trains_as_binary_icde24_and_scores_both_conventions():
    step, icde = get_protocol(STEP), get_protocol("binary-icde24")
    assert step.epochs == icde.epochs and default_form(STEP) == "coded"
    assert not step.has_validation and step.seeds == icde.seeds
    assert {"ndcg5", "ndcg5_ref", "auc"} <= set(step.metrics)
    assert step.split_record()["mcar_split"]["in_test"] is False


def test_a_method_that_reads_no_mcar_label_trains_as_under_binary_icde24(small_mnar):
    """The step changes what is scored, not what is trained: MF's runs are binary-icde24's,
    their test metrics are not."""
    params = HyperParams.from_values({"dim": 4, "lam": 1e-4, "lr": 0.05, "batch_size": 64})
    runs = {p: compute_group(small_mnar, RunSpec(small_mnar.name, "none", False, params, "test",
                                                 (0, 1), method="mf", protocol=p), [0, 1])[0]
            for p in ("binary-icde24", STEP)}
    for a, b in zip(runs["binary-icde24"], runs[STEP]):
        assert a["trace"] == b["trace"]
        assert a["metrics"]["best_step"] == b["metrics"]["best_step"]
        assert a["metrics"]["auc"] != b["metrics"]["auc"]          # another test set
        assert b["protocol"]["n_test"] < a["protocol"]["n_test"]


def test_the_rule_step_has_binary_cleans_data_and_binary_icde24s_rule(tiny_data):
    rule, clean = get_protocol("binary-clean-icde24rule"), get_protocol("binary-clean")
    assert rule.epochs == get_protocol("binary-icde24").epochs and default_form(rule) == "coded"
    mine, theirs = rule.split(tiny_data, 4), clean.split(tiny_data, 4)
    for part in ("train", "val", "test", "test_prior"):
        assert _pairs(getattr(mine, part)) == _pairs(getattr(theirs, part)), part
    assert rule.has_validation and rule.seeds == 10
