"""One contract over every registered method, built-in or installed plug-in
(after zr-obp's ``test_all_estimators``): a method found through :data:`METHODS` gets these tests
without writing any.

The checks are atrec's public ones (:mod:`atrec.testing.methods`, what ``check_method`` runs),
each a test here per method, without and (when the class declares ``serves_in_at``) with
asymmetric tri-training: the result's shapes, the same seed giving the same numbers bit for bit,
a seed's record the same bits whether it is trained with other seeds or alone (as ``atrec train``
trains them), the record ``run_config`` writes, and
hyperparameter checks that name the bad value. A method with options is checked once per
option value (:func:`atrec.methods.options.option_cases`: DR-JL's imputation, normalisation,
weighting and blocks, each value one run). Small synthetic data and few steps keep it fast.
"""

import math

import pytest

from atrec.methods.options import case_id, option_cases
from atrec.methods.registry import METHODS
from atrec.testing.methods import MethodChecks
from atrec.testing.params import bad_hyperparameter_cases

# collected now: the registry loads the installed plug-ins on this first use
METHOD_NAMES = METHODS.names()
# (method, option case): each distinct run once
RUNS = [(name, options) for name in METHOD_NAMES for options in option_cases(METHODS.get(name))]


def _id(name: str, options: dict, with_at: bool) -> str:
    where = f"[{case_id(options)}]" if options else ""
    return name + where + ("+at" if with_at else "")


CASES = [pytest.param(name, options, False, id=_id(name, options, False))
         for name, options in RUNS] + [
    pytest.param(name, options, True, id=_id(name, options, True)) for name, options in RUNS
    if METHODS.get(name).serves_in_at]


@pytest.fixture(scope="module")
def checks(small_mnar):
    """``checks(name, options)``: the :class:`MethodChecks` of a registered method with those
    options, made once per module, so its fits are shared by the tests below."""
    cache = {}

    def get(name, options=None):
        key = (name, tuple(sorted((options or {}).items())))
        if key not in cache:
            cache[key] = MethodChecks(METHODS.get(name), small_mnar, options)
        return cache[key]

    return get


# --- shapes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, options, with_at", CASES)
def test_result_has_the_contracts_shapes(name, options, with_at, checks):
    checks(name, options).result_shapes(with_at)


# --- determinism and stacking ------------------------------------------------------------------

@pytest.mark.parametrize("name, options, with_at", CASES)
def test_the_same_seeds_give_the_same_numbers(name, options, with_at, checks):
    checks(name, options).same_seeds_same_numbers(with_at)


@pytest.mark.parametrize("name, options, with_at", CASES)
def test_a_seeds_record_is_the_same_bits_whichever_seeds_it_is_trained_with(
        name, options, with_at, checks, tmp_path, monkeypatch):
    # No memory bound: this process holds gigabytes of other tests' loops, and a release before
    # each method's run would drop the loops the stacked fits compiled (minutes more); the bound
    # is tested in tests/learners/test_compiled.py.
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "0")
    checks(name, options).record_same_bits_whichever_seeds(with_at, tmp_path)


# --- the record run_config writes --------------------------------------------------------------

@pytest.mark.parametrize("name, options, with_at", CASES)
def test_run_config_writes_a_record_of_the_schema(name, options, with_at, checks, tmp_path,
                                                   monkeypatch):
    # The check sets the runner's canonical width (20 at this size) to its stack of 3 seeds, so
    # the run has the shape of the stacked fit and reuses that compiled loop. No memory bound
    # either: this process holds gigabytes of other tests' loops, and a release before each
    # method's run would drop the loops the stacked fits compiled (2 minutes more); the bound
    # is tested in tests/learners/test_compiled.py.
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "0")
    checks(name, options).run_writes_a_record(with_at, tmp_path)


# --- hyperparameter checks ---------------------------------------------------------------------

def _bad_cases():
    """(method, hyperparameter, with_at, replacement or MISSING, fragment of the message)."""
    return [pytest.param(name, key, with_at, value, fragment,
                         id=f"{name}-{key}-{_label(value)}")
            for name in METHOD_NAMES
            for key, with_at, value, fragment in bad_hyperparameter_cases(METHODS.get(name))]


def _label(value) -> str:
    if isinstance(value, str):
        return "string"
    if not isinstance(value, (int, float)):
        return "missing"
    return "nan" if math.isnan(value) else ("negative" if value < 0 else "absurd")


@pytest.mark.parametrize("name, key, with_at, value, fragment", _bad_cases())
def test_bad_hyperparameters_are_value_errors_naming_the_value(name, key, with_at, value,
                                                               fragment, checks):
    checks(name).bad_hyperparameter(key, with_at, value, fragment)


@pytest.mark.parametrize("name", METHOD_NAMES)
def test_parameters_must_be_a_mapping(name, checks):
    checks(name).parameters_must_be_a_mapping()


# --- what every registered class declares ------------------------------------------------------

@pytest.mark.parametrize("name", METHOD_NAMES)
def test_registered_class_declares_the_contract(name, checks):
    entry = METHODS.entry(name)
    assert entry.cls.name == name
    assert isinstance(entry.origin, str) and entry.origin
    checks(name).declares_the_contract()
    for options in option_cases(entry.cls):
        checks(name, options).learner_serves_in_at()

