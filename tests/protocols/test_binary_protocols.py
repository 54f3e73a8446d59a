"""The binary protocols' splits against docs/protocols.md ("The binary protocols"), and
binary-clean's promise: no test label reaches training, tuning or selection (a run with every
evaluated test label flipped trains, selects and tunes exactly as the run with the true ones), and
its one selection rule reads the MCAR slice carved from the training side."""

from dataclasses import replace

import numpy as np
import pytest

from atrec.data.ratings import Ratings
from atrec.data.splits import MCAR_EVAL_FRACTION, MCAR_SPLIT_SEED, shuffle_cut
from atrec.experiments.fitting import compute_group, validation_loss
from atrec.experiments.spec import RunSpec
from atrec.protocols import get_protocol
from atrec.params.lookup import HyperParams

SMALL = {"dim": 4, "lam": 1e-4, "lr": 0.05, "batch_size": 64, "gamma": 0.05,
         "prop_batch": 256, "prop_lam": 1e-4}


def test_icde24_split_binarises_and_leaves_the_5pct_slice_in_the_test_set(tiny_data):
    sp = get_protocol("binary-icde24").split(tiny_data, 7)
    assert np.array_equal(sp.train.rating, (tiny_data.train.rating >= 3).astype(np.int8))
    assert len(sp.val) == 0 and len(sp.train) == 400
    # the first draw of the run's stream: RandomState(seed).permutation(n_test)[:int(0.05 n)]
    slice_rows = np.random.RandomState(7).permutation(240)[:12]
    assert np.array_equal(sp.test_prior.item, tiny_data.test.item[slice_rows])
    assert len(sp.test) == 240 and np.array_equal(sp.test.user, tiny_data.test.user)
    other = get_protocol("binary-icde24").split(tiny_data, 8)
    assert not np.array_equal(other.test_prior.item, sp.test_prior.item)   # drawn per seed


def test_icde24_indexes_yahoo_by_its_one_based_ids(tiny_data):
    yahoo = replace(tiny_data, name="yahoo")
    sp = get_protocol("binary-icde24").split(yahoo, 0)
    assert (sp.num_users, sp.num_items) == (41, 31)
    # the training triplets shuffled by a permutation drawn from the seed
    order = np.random.default_rng([0, 2020]).permutation(400)
    assert np.array_equal(sp.train.user, tiny_data.train.user[order] + 1)
    assert np.array_equal(sp.train.item, tiny_data.train.item[order] + 1)
    assert sp.train.user.min() >= 1 and sp.test.item.min() >= 1


def test_clean_split_removes_the_slice_from_the_test_set(tiny_data):
    sp = get_protocol("binary-clean").split(tiny_data, 3)
    assert (len(sp.train), len(sp.val)) == (360, 40)
    key = lambda r: set(zip(r.user.tolist(), r.item.tolist()))
    assert not key(sp.test_prior) & key(sp.test)
    assert len(sp.test_prior) + len(sp.test) == 240
    assert key(sp.test) == key(sp.test_full)


def _flipped(data, part="test"):
    """``data`` with the labels of binary-clean's evaluated test pairs (``part="test"``) or of
    its MCAR slice carved from the training side (``part="slice"``) flipped."""
    t = data.test
    rest, evaluated = shuffle_cut(len(t), MCAR_EVAL_FRACTION, MCAR_SPLIT_SEED)
    rows = evaluated if part == "test" else rest
    flipped = t.rating.copy()
    flipped[rows] = np.where(t.rating[rows] >= 3, 1, 5).astype(t.rating.dtype)
    return replace(data, test=Ratings(t.user, t.item, flipped))


@pytest.mark.parametrize("method", ["mf", "mf-ips"])
def test_no_test_label_reaches_training_or_selection_under_clean(small_mnar, method):
    params = HyperParams.from_values({k: v for k, v in SMALL.items()
                                      if method == "mf-ips" or k in ("dim", "lam", "lr",
                                                                      "batch_size")})
    spec = RunSpec(small_mnar.name, "none", False, params, "test", (0, 1), method=method,
                   protocol="binary-clean")
    true, _ = compute_group(small_mnar, spec, [0, 1])
    flip, _ = compute_group(_flipped(small_mnar), spec, [0, 1])
    for a, b in zip(true, flip):
        assert a["trace"] == b["trace"]                      # training and validation
        assert a["metrics"]["best_step"] == b["metrics"]["best_step"]          # selection
        assert a["metrics"]["best_val_loss"] == b["metrics"]["best_val_loss"]
        assert a["metrics"]["mse"] != b["metrics"]["mse"]    # the test labels did change
    # the tuning objective reads the validation part only
    assert validation_loss(small_mnar, "none", False, params, method=method,
                           protocol="binary-clean") == validation_loss(
        _flipped(small_mnar), "none", False, params, method=method, protocol="binary-clean")


def test_the_clean_selection_reads_the_mcar_slice(small_mnar):
    """binary-clean's one rule selects on the MCAR slice carved from the training side: its
    labels move the criterion (the slice is read), the test pairs' labels do not (above)."""
    params = HyperParams.from_values({k: SMALL[k] for k in ("dim", "lam", "lr", "batch_size")})
    spec = RunSpec(small_mnar.name, "none", False, params, "test", (0, 1), method="mf",
                   protocol="binary-clean")
    true, _ = compute_group(small_mnar, spec, [0, 1])
    flip, _ = compute_group(_flipped(small_mnar, "slice"), spec, [0, 1])
    for a, b in zip(true, flip):
        assert a["trace"]["train_loss"][:2] == b["trace"]["train_loss"][:2]   # same training
        assert a["trace"]["val_loss"][0] != b["trace"]["val_loss"][0]          # other criterion
        assert a["protocol"]["settings"]["selection"] == "mcar-auc"
        assert a["protocol"]["settings"]["unit"] == "steps"
