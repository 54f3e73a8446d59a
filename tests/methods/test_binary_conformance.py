"""One contract over every registered binary method, built-in or installed plug-in, in each of
its forms under each protocol (each distinct run once, :func:`fit_cases`): a method found
through the binary registry gets these tests without writing any (one contract over the registry).

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
from atrec.methods.options import case_id
from atrec.testing.binary import BinaryMethodChecks, fit_cases

# collected now: the registry loads the installed plug-ins on this first use
NAMES = BINARY_METHODS.names()
FITS = [pytest.param(name, protocol, options,
                     id=f"{name}-{protocol}" + (f"-{case_id(options)}" if options else ""))
        for name in NAMES for protocol, options in fit_cases(BINARY_METHODS.get(name))]


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


@pytest.mark.parametrize("name, protocol, options", FITS)
def test_a_fit_has_the_contracts_shapes_and_epoch(name, protocol, options, checks):
    checks(name).result_shapes(protocol, options)


@pytest.mark.parametrize("name, protocol, options", FITS)
def test_a_seeds_numbers_are_the_same_bits_beside_any_seed(name, protocol, options, checks):
    checks(name).replicas_are_independent(protocol, options)


@pytest.mark.parametrize("name", [n for n in NAMES if BINARY_METHODS.get(n).serves_in_at])
def test_a_method_that_serves_in_at_gives_it_two_predictors(name, checks):
    checks(name).serves_in_at()
