"""One contract over every registered binary method, built-in (named variants included) or
installed plug-in: a method found through the binary registry gets these tests without writing
any (one contract over the registry).

The checks are atrec's public ones (:mod:`atrec.testing.binary`, what ``check_binary_method``
runs), each a test here per method: the declarations and reference values, a fit under each
binary protocol's settings (shapes, probabilities, the epoch its rule selects), each seed's
numbers the same bits beside another seed as beside itself, AT's two predictors and fit for a
method that serves in AT, and bad hyperparameters giving a ``ValueError`` that names the value.
Small synthetic data and three epochs keep it fast; the fits are shared by the tests of a
method (:class:`BinaryMethodChecks`).
"""

import functools

import pytest

from atrec.methods.binary.registry import BINARY_METHODS
from atrec.testing.binary import PROTOCOLS, BinaryMethodChecks

# collected now: the registry loads the installed plug-ins on this first use
NAMES = BINARY_METHODS.names()
FITS = [pytest.param(name, protocol, id=f"{name}-{protocol}")
        for name in NAMES for protocol in PROTOCOLS]


@pytest.fixture(scope="module")
def checks(small_mnar):
    """``checks(name)``: the :class:`BinaryMethodChecks` of a registered binary method, made
    once per module, so its fits are shared by the tests below."""
    return functools.cache(lambda name: BinaryMethodChecks(BINARY_METHODS.get(name), small_mnar))


@pytest.mark.parametrize("name", NAMES)
def test_registered_binary_class_declares_the_contract(name, checks):
    assert BINARY_METHODS.entry(name).cls.name == name
    checks(name).declares_the_contract()
    checks(name).reference_values()


@pytest.mark.parametrize("name", NAMES)
def test_bad_hyperparameters_are_value_errors_naming_the_value(name, checks):
    checks(name).parameters_must_be_a_mapping()
    checks(name).bad_hyperparameters()


@pytest.mark.parametrize("name, protocol", FITS)
def test_a_fit_has_the_contracts_shapes_and_epoch(name, protocol, checks):
    checks(name).result_shapes(protocol)


@pytest.mark.parametrize("name, protocol", FITS)
def test_a_seeds_numbers_are_the_same_bits_beside_any_seed(name, protocol, checks):
    checks(name).replicas_are_independent(protocol)


@pytest.mark.parametrize("name", [n for n in NAMES if BINARY_METHODS.get(n).serves_in_at])
def test_a_method_that_serves_in_at_gives_it_two_predictors(name, checks):
    checks(name).serves_in_at()
