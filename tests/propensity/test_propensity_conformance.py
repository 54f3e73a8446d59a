"""One contract over every selectable propensity estimator, built-in or installed plug-in
(STYLE.md item 11): found through :data:`PROPENSITIES`, each is checked for shapes and dtype,
values in (0, 1], determinism, and estimating from the training part only. An estimator that
applies to some datasets only (``datasets``, e.g. coat-shipped, logistic) is checked on the
first of them that the shared data holds (Coat), installed in a session data folder."""

import dataclasses

import numpy as np
import pytest

from atrec.data.ratings import Ratings
from atrec.data.splits import make_split
from atrec.experiments.inputs import stack_inputs
from atrec.propensity.registry import PROPENSITIES, get_estimator, propensity_names

# collected now: the registry loads the installed plug-ins on this first use
NAMES = propensity_names()


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory):
    """A data folder with Coat and ML-100K installed (ratings and side files) from the shared
    copy."""
    from conftest import SHARED

    from atrec.data.download import download

    folder = tmp_path_factory.mktemp("conformance-data")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATREC_DATA_DIR", str(folder))
        for name in ("coat", "ml-100k"):
            download(name, source=SHARED / name, quiet=True)
    return folder


@pytest.fixture
def data_for(small_mnar, shared_dir, monkeypatch):
    """``data_for(name)``: the data set that estimator ``name`` is checked on."""
    from atrec.data.preprocess import load_data

    def pick(name):
        datasets = PROPENSITIES.get(name).datasets
        if datasets is None:
            return small_mnar
        monkeypatch.setenv("ATREC_DATA_DIR", str(shared_dir))
        return load_data("coat" if "coat" in datasets else datasets[0])
    return pick


@pytest.fixture
def split(data_for, request):
    return make_split(data_for(request.node.callspec.params["name"]), 3)


def _other(ratings: Ratings, num_users: int, num_items: int, seed: int) -> Ratings:
    """Ratings of the same length at other random cells with other values."""
    rng = np.random.default_rng(seed)
    n = len(ratings)
    return Ratings.from_arrays(rng.integers(0, num_users, n), rng.integers(0, num_items, n),
                               rng.integers(1, 6, n))


@pytest.mark.parametrize("name", NAMES)
def test_estimates_have_the_splits_shapes_and_values_in_0_1(name, split):
    est = get_estimator(name).estimate(split)
    for part, ratings in (("train", split.train), ("val", split.val)):
        values = getattr(est, part)
        assert isinstance(values, np.ndarray) and values.dtype == np.float32, part
        assert values.shape == (len(ratings),), part
        assert np.isfinite(values).all() and (values > 0).all() and (values <= 1).all(), part


@pytest.mark.parametrize("name", NAMES)
def test_the_same_split_gives_the_same_estimates(name, data_for, split):
    a = get_estimator(name).estimate(split)
    b = get_estimator(name).estimate(make_split(data_for(name), 3))
    np.testing.assert_array_equal(a.train, b.train, strict=True)
    np.testing.assert_array_equal(a.val, b.val, strict=True)


@pytest.mark.parametrize("name", NAMES)
def test_estimates_come_from_the_training_part_only(name, split):
    """Other validation, test and (unless the estimator reads MCAR ratings) MCAR prior parts
    leave the training estimates where they were; a pair gets the same propensity in train and
    validation."""
    cls = PROPENSITIES.get(name)
    nu, ni = split.num_users, split.num_items
    changed = {"val": _other(split.val, nu, ni, 1), "test": _other(split.test, nu, ni, 2)}
    if not cls.uses_mcar:
        changed["test_prior"] = _other(split.test_prior, nu, ni, 3)
        changed["test_full"] = _other(split.test_full, nu, ni, 4)
    base = get_estimator(name).estimate(split)
    other = dataclasses.replace(split, **changed)
    np.testing.assert_array_equal(get_estimator(name).estimate(other).train, base.train,
                                  strict=True)
    # validation pairs that are copies of training pairs get the training pairs' values
    idx = np.arange(0, len(split.train), 7)[:len(split.val)]
    copied = dataclasses.replace(split, val=split.train.take(idx))
    np.testing.assert_array_equal(get_estimator(name).estimate(copied).val, base.train[idx],
                                  strict=True)


@pytest.mark.parametrize("name", NAMES)
def test_stacked_weights_are_inverse_propensities(name, data_for):
    inputs = stack_inputs(data_for(name), name, [0, 1])
    for k, sp in enumerate(inputs.splits):
        est = get_estimator(name).estimate(sp)
        np.testing.assert_array_equal(inputs.train["weight"][k], (1.0 / est.train).astype(np.float32))
        assert (inputs.val["weight"][k] >= 1).all()


@pytest.mark.parametrize("name", NAMES)
def test_registered_class_declares_the_contract(name):
    entry = PROPENSITIES.entry(name)
    cls = entry.cls
    assert cls.name == name and isinstance(cls.label, str) and cls.label
    assert isinstance(cls.description, str) and cls.description
    assert isinstance(cls.uses_mcar, bool) and isinstance(cls.paper_row, bool)
    assert cls.selectable is True and isinstance(entry.origin, str) and entry.origin


@pytest.mark.parametrize("name", NAMES)
def test_calibrated_probabilities_average_the_density(name, split):
    """Every selectable estimator can be calibrated: P = p |O| / S in (0, 1], and (before
    clipping) the mean of P over all cells is the training density."""
    est = get_estimator(name)
    cal = est.calibrated(split)
    pairs = est.estimate(split)
    assert cal.train.dtype == np.float32 and cal.train.shape == pairs.train.shape
    assert (cal.train > 0).all() and (cal.train <= 1).all() and (cal.val <= 1).all()
    assert cal.n_observed == len(split.train)
    assert cal.num_cells == split.num_users * split.num_items
    if cal.n_clipped == 0:
        np.testing.assert_allclose(cal.train, pairs.train * cal.scale, rtol=1e-6)
    try:
        cells = est.cell_propensities(split)
    except Exception:  # rating-dependent (NB): the expected sum is tested on its own
        return
    assert cells.shape == (split.num_users, split.num_items)
    np.testing.assert_allclose(cells.sum(), cal.cells_sum, rtol=1e-9)
    np.testing.assert_allclose((cells * cal.scale).mean(), cal.density, rtol=1e-9)
    np.testing.assert_allclose(cells[split.train.user, split.train.item], pairs.train, rtol=1e-6)
