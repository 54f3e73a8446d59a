"""The bound on compiled loops (:mod:`atrec.learners.compiled`): a release drops the loops and
TensorFlow's context, and the fits after it give the same bits; the policy releases only before
a new shape, above the bound, with no fit running."""

import math

import pytest

from atrec.errors import AtrecError
from atrec.experiments.params import HyperParams
from atrec.experiments.runner import validation_loss
from atrec.learners import at, compiled, mf
from atrec.protocol import ATSettings, TrainSettings

SHORT = TrainSettings(steps=20, batch_size=64)
SHORT_AT = ATSettings(pre_steps=10, iterations=2, steps_per_iteration=2, batch_size=64)


@pytest.mark.parametrize("with_at", [False, True])
def test_fits_after_a_release_give_the_same_bits(tiny_data, with_at):
    params = HyperParams.from_values({"dim": 5, "lam": 1e-3, "epsilon": 0.1})

    def value():
        return validation_loss(tiny_data, "item", with_at, params, settings=SHORT,
                               at_settings=SHORT_AT)

    before = value()
    cache = at._compiled if with_at else mf._fit_loop
    assert cache.cache_info().currsize > 0
    releases = compiled.releases
    compiled.release()
    assert compiled.releases == releases + 1
    assert cache.cache_info().currsize == 0            # the loops were dropped
    after = value()                                     # compiled again, in a new context
    assert after == before and math.isfinite(before)


@pytest.fixture
def counted(monkeypatch):
    """``compiled.release`` replaced by a counter (the policy alone, no TensorFlow reset)."""
    calls = []
    monkeypatch.setattr(compiled, "release", lambda: (calls.append(1), compiled._keys.clear()))
    monkeypatch.setattr(compiled, "_keys", set())
    return calls


def test_a_release_comes_only_before_a_new_shape_above_the_bound(counted, monkeypatch):
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "1")       # every process is above 1 MB
    with compiled.before_fit("a"):
        pass
    assert counted == []                                # nothing compiled yet: nothing to drop
    with compiled.before_fit("a"):
        pass
    assert counted == []                                # a shape it holds: kept
    with compiled.before_fit("b"):
        pass
    assert counted == [1]                               # a new shape: released first
    with compiled.before_fit("b"), compiled.before_fit("c"):
        pass
    assert counted == [1]                               # never while another fit runs


def test_no_release_under_the_bound_or_without_one(counted, monkeypatch):
    for bound in ("1000000", "0"):
        monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", bound)
        for key in "abc":
            with compiled.before_fit(key):
                pass
    assert counted == []


def test_the_bound_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("ATREC_MEMORY_BOUND_MB", raising=False)
    assert compiled.bound_mb() == compiled.BOUND_MB
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "1500")
    assert compiled.bound_mb() == 1500
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "lots")
    with pytest.raises(AtrecError, match="ATREC_MEMORY_BOUND_MB=lots: give the memory bound"):
        compiled.bound_mb()
