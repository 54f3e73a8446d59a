"""One contract over every selectable propensity estimator, built-in or installed plug-in
(one contract over the registry): found through :data:`PROPENSITIES`, each is checked for shapes and
dtype, values in (0, 1], determinism, and estimating from the training part only, by atrec's public
checks (:mod:`atrec.testing.propensity`, what ``check_propensity`` runs), each a test here. An
estimator that applies to some datasets only (``datasets``, e.g. coat-shipped, logistic) is checked
on the first of them that the shared data holds (Coat), installed in a session data folder."""

import pytest

from atrec.propensity.registry import PROPENSITIES, propensity_names
from atrec.testing.propensity import PropensityChecks

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
def checks(data_for, request):
    """The :class:`PropensityChecks` of the test's estimator, on the data it is checked on."""
    name = request.node.callspec.params["name"]
    return PropensityChecks(PROPENSITIES.get(name), data_for(name))


@pytest.mark.parametrize("name", NAMES)
def test_estimates_have_the_splits_shapes_and_values_in_0_1(name, checks):
    checks.shapes_and_values()


@pytest.mark.parametrize("name", NAMES)
def test_the_same_split_gives_the_same_estimates(name, checks):
    checks.same_split_same_estimates()


@pytest.mark.parametrize("name", NAMES)
def test_estimates_come_from_the_training_part_only(name, checks):
    checks.from_training_part_only()


@pytest.mark.parametrize("name", NAMES)
def test_stacked_weights_are_inverse_propensities(name, checks):
    checks.weights_are_inverse_propensities()


@pytest.mark.parametrize("name", NAMES)
def test_registered_class_declares_the_contract(name, checks):
    entry = PROPENSITIES.entry(name)
    assert entry.cls.name == name and entry.cls.selectable is True
    assert isinstance(entry.origin, str) and entry.origin
    checks.declares_the_contract()


@pytest.mark.parametrize("name", NAMES)
def test_calibrated_probabilities_average_the_density(name, checks):
    checks.calibrated_average_the_density()
