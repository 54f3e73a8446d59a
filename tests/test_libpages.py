"""Library pages given back (:mod:`atrec.runtime.libpages`): which mappings count as a library's, the
kernel really drops their resident pages, and the compiled-loop policy asks at the moments its
docstring names."""

import mmap
import time

import numpy as np

from atrec.runtime import compiled, libpages, memwatch

MAPS = """\
55d0c0a00000-55d0c0a01000 r--p 00000000 fd:00 11 /usr/bin/python3.11
7f0000000000-7f0000200000 r-xp 00000000 fd:00 12 /opt/tf/libtensorflow_cc.so.2
7f0000200000-7f0000300000 r--p 00200000 fd:00 12 /opt/tf/libtensorflow_cc.so.2
7f0000300000-7f0000310000 rw-p 00300000 fd:00 12 /opt/tf/libtensorflow_cc.so.2
7f0000400000-7f0000401000 r-xp 00000000 fd:00 13 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000500000-7f0000600000 rw-p 00000000 00:00 0
7f0000600000-7f0000700000 r--s 00000000 fd:00 14 /data/store/ratings.npy
7f0000700000-7f0000701000 r--p 00000000 fd:00 15 /site-packages/numpy/_umath.cpython-311-x86_64-linux-gnu.so
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
"""


def test_only_read_only_mappings_of_shared_libraries_are_taken():
    assert libpages.library_ranges(MAPS) == [
        (0x7f0000000000, 0x7f0000200000), (0x7f0000200000, 0x7f0000300000),
        (0x7f0000400000, 0x7f0000401000), (0x7f0000700000, 0x7f0000701000)]


def test_the_kernel_drops_a_read_libraries_pages(tmp_path):
    path = tmp_path / "libbig.so"
    path.write_bytes(np.arange(16 * 2**20, dtype=np.int32).tobytes())      # 64 MB
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        view = np.frombuffer(m, np.int32)
        assert int(view[::1024].sum()) > 0                  # every page read: resident
        before = libpages.file_mb()
        assert not libpages.give_back(above_mb=before + 1)      # too few pages: not asked
        assert libpages.file_mb() > before - 1
        assert libpages.give_back(above_mb=0)
        assert before - libpages.file_mb() > 48
        assert int(view[-1]) == 16 * 2**20 - 1              # read back from the file
        del view


def test_the_policy_gives_back_before_the_first_fit_and_after_each_new_loop(monkeypatch):
    calls = []
    monkeypatch.setattr(libpages, "give_back", lambda: calls.append(1) or True)
    for name, value in (("_keys", set()), ("_grows", {}), ("_overs", {}), ("_entered", 0)):
        monkeypatch.setattr(compiled, name, value)
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "1000000")
    with compiled.before_fit("a"):
        assert calls == [1]                             # before the first fit: the import's
    assert calls == [1, 1]                              # after a new loop: its compilation's
    with compiled.before_fit("a"):
        pass
    assert calls == [1, 1]                              # a loop held: nothing new was read
    with compiled.before_fit("b"), compiled.before_fit("c"):
        pass
    assert calls == [1, 1]                              # not while fits overlap
    with compiled.before_fit("d"):
        pass
    assert calls == [1, 1, 1]
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "0")    # no bound: atrec leaves memory alone
    monkeypatch.setattr(compiled, "_entered", 0)
    with compiled.before_fit("e"):
        pass
    assert calls == [1, 1, 1]


def test_a_steady_watch_gives_back_each_slack_read_and_not_before(monkeypatch):
    resident = [100.0]
    asked = []

    def give_back(above_mb=libpages.SLACK_MB):
        asked.append(resident[0])
        resident[0] = 30.0                              # what stays after a give-back
        return True

    monkeypatch.setattr(libpages, "file_mb", lambda: resident[0])
    monkeypatch.setattr(libpages, "give_back", give_back)
    steady = libpages.Steady()                          # level: 100 MB when the fit starts
    for now in (120.0, 150.0, 164.0):
        resident[0] = now
        steady()
    assert asked == []                                  # not SLACK_MB more yet
    resident[0] = 165.0
    steady()
    assert asked == [165.0] and steady.level == 30.0    # read back from 30 MB on
    resident[0] = 90.0
    steady()
    assert asked == [165.0]
    resident[0] = 95.0
    steady()
    assert asked == [165.0, 95.0]


def test_the_watch_calls_its_hook_on_every_sample():
    calls = []
    with memwatch.Peak(lambda: calls.append(1)):
        time.sleep(20 * memwatch.INTERVAL_S)
    assert len(calls) >= 5


def test_only_a_fit_that_makes_a_new_loop_watches_its_pages(monkeypatch):
    made = []
    monkeypatch.setattr(libpages, "Steady", lambda: made.append(1) or (lambda: None))
    monkeypatch.setattr(libpages, "give_back", lambda: True)
    for name, value in (("_keys", set()), ("_grows", {}), ("_overs", {}), ("_entered", 0)):
        monkeypatch.setattr(compiled, name, value)
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "1000000")
    with compiled.before_fit("a"):
        pass
    assert made == [1]
    with compiled.before_fit("a"):
        pass
    assert made == [1]                                  # a loop held: nothing to read
    monkeypatch.setenv("ATREC_MEMORY_BOUND_MB", "0")
    with compiled.before_fit("b"):
        pass
    assert made == [1]                                  # no bound: atrec leaves memory alone


def test_a_failing_hook_is_dropped_and_the_watch_keeps_sampling(monkeypatch):
    calls = []

    def hook():
        calls.append(1)
        raise OSError("no /proc here")

    readings = iter(range(100, 100000))
    monkeypatch.setattr(memwatch, "rss_mb", lambda: float(next(readings)))
    with memwatch.Peak(hook) as watch:
        time.sleep(20 * memwatch.INTERVAL_S)
    assert calls == [1]                                 # called once, then dropped
    assert watch.peak > watch.start + 5                 # the samples went on after it
