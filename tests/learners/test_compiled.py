"""The bound on compiled loops (:mod:`atrec.runtime.compiled`): a release drops the loops and
TensorFlow's context, and the fits after it give the same bits; the policy releases only before
a new shape, with no fit running, when the fit could take the process above the bound (its
resident size plus the rise expected of a fit of its kind, :mod:`atrec.runtime.memwatch`)."""

import math
import time

import numpy as np
import pytest

from atrec.errors import AtrecError
from atrec.experiments.fitting import validation_loss
from atrec.learners import at, mf
from atrec.run_settings import ATSettings, TrainSettings
from atrec.params.lookup import HyperParams
from atrec.runtime import compiled, memwatch

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
    monkeypatch.setattr(compiled, "_grows", {})
    monkeypatch.setattr(compiled, "_overs", {})
    return calls


def _hold_mb(mb: int) -> None:
    """Write ``mb`` MB, keep them for ten samples of the watch, then free them."""
    block = np.ones(mb * 2**18, np.float32)
    time.sleep(10 * memwatch.INTERVAL_S)
    del block


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


def test_a_fit_learns_its_rise_and_releases_come_before_it_would_pass_the_bound(counted,
                                                                               monkeypatch):
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "0")       # learn, never release
    with compiled.before_fit("a", kind="big"):
        _hold_mb(200)                                       # 200 MB up, and back down
    assert 150 < compiled.expected_rise("big") < 400
    assert compiled.expected_rise("new kind") == compiled.expected_rise("big")

    now = compiled.rss_mb()
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", str(now + 500))
    with compiled.before_fit("b", kind="big"):              # now + 200 fits under the bound
        pass
    assert counted == []
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", str(now + 100))
    with compiled.before_fit("c", kind="big"):              # under it now, not with the rise
        pass
    assert counted == [1]
    with compiled.before_fit("d", kind="small"):            # rises its own: none seen yet,
        pass                                                # so the largest of any kind
    assert counted == [1, 1]
    with compiled.before_fit("e", kind="small"):            # "small" rose by about 0 since
        pass
    assert counted == [1, 1]


def test_fits_that_overlap_learn_no_rise(counted, monkeypatch):
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "0")
    with compiled.before_fit("a", kind="x"), compiled.before_fit("b", kind="y"):
        _hold_mb(100)
    assert compiled.expected_rise("x") == compiled.expected_rise("y") == 0.0


def test_the_watch_sees_a_peak_that_is_gone_when_it_ends():
    with memwatch.Peak() as watch:
        _hold_mb(200)
    assert watch.rise > 150 and memwatch.rss_mb() < watch.peak - 150


def test_what_a_new_shape_kept_counts_and_the_last_one_is_expected_again(counted, monkeypatch):
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "0")
    with compiled.before_fit("first", kind="k"):            # what the process's first fit kept
        kept = [np.ones(300 * 2**18, np.float32)]           # is TensorFlow's start, not a loop
    assert compiled.expected_rise("k") < 50
    with compiled.before_fit("a", kind="k"):                # a new shape that keeps 150 MB
        kept.append(np.ones(150 * 2**18, np.float32))
    assert 120 < compiled.expected_rise("k") < 250
    with compiled.before_fit("a", kind="k"):                # a shape held: what it keeps is
        kept.append(np.ones(150 * 2**18, np.float32))       # not a loop, not counted
    assert 120 < compiled.expected_rise("k") < 250
    with compiled.before_fit("b", kind="k"):                # the last new shape kept nothing
        pass
    assert compiled.expected_rise("k") < 50
