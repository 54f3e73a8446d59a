"""The compilation cache on disk (:mod:`atrec.runtime.compilecache`): entries are checked and
pruned, a bad folder turns the cache off with one line, and a loop loaded from the cache in a
new process, whose TensorFlow counter stands elsewhere, gives the bits of the loop compiled in
the first process and writes no entry of its own."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from atrec.runtime import cacheentries, compilecache

ENTRY = b"\x0a\x03abc" + b"\x12\x05hello" + b"\x1a\x04code"   # key, HLO, executable


def write(path: Path, data: bytes, age_s: float = 0.0) -> Path:
    path.write_bytes(data)
    stamp = time.time() - age_s
    os.utime(path, (stamp, stamp))
    return path


@pytest.mark.parametrize("data, whole", [
    (ENTRY, True),
    (ENTRY[:-1], False),                        # truncated executable
    (ENTRY[:10], False),                        # no executable
    (b"\x0a\x03abc\x12\x05hello", False),       # fields 1 and 2 only
    (b"garbage", False),
    (b"", False),
])
def test_entry_ok_accepts_whole_entries_only(tmp_path, data, whole):
    assert cacheentries.entry_ok(write(tmp_path / "e.pb", data)) is whole


def test_sweep_removes_broken_entries_stale_temporaries_and_the_oldest(tmp_path):
    big = b"\x0a\x01k\x12\x01h\x1a\x83\x80\x40" + b"x" * (2**20 + 3)   # a 1 MB executable
    old = write(tmp_path / "old.pb", big, age_s=300)
    mid = write(tmp_path / "mid.pb", big, age_s=200)
    new = write(tmp_path / "new.pb", big, age_s=100)
    broken = write(tmp_path / "broken.pb", big[:-5])
    stale = write(tmp_path / "x.pb123.tmp", b"partial", age_s=7200)
    writing = write(tmp_path / "y.pb456.tmp", b"partial")
    assert all(cacheentries.entry_ok(p) for p in (old, mid, new))
    removed = cacheentries.sweep(tmp_path, limit_mb=2.5)
    assert removed == 3
    assert sorted(p.name for p in tmp_path.glob("*.pb*")) == [mid.name, new.name, writing.name]
    assert not broken.exists() and not stale.exists() and not old.exists()
    listed = (tmp_path / cacheentries.CHECKED).read_text().split()
    assert listed[::3] == [mid.name, new.name]           # the pruned entry is off the list


def test_sweep_reads_again_only_entries_it_has_not_found_whole(tmp_path, monkeypatch):
    kept = [write(tmp_path / f"e{i}.pb", ENTRY, age_s=100) for i in range(3)]
    reads = []
    real = cacheentries.entry_ok
    monkeypatch.setattr(cacheentries, "entry_ok", lambda p: reads.append(p.name) or real(p))
    assert cacheentries.sweep(tmp_path) == 0
    assert sorted(reads) == ["e0.pb", "e1.pb", "e2.pb"]
    reads.clear()
    assert cacheentries.sweep(tmp_path) == 0
    assert reads == []                                   # all on the list, unchanged
    write(kept[0], ENTRY[:-1], age_s=100)                 # cut short after it was listed
    write(kept[1], ENTRY + b"\x1a\x01x")                  # rewritten: another size and time
    assert cacheentries.sweep(tmp_path) == 1
    assert sorted(reads) == ["e0.pb", "e1.pb"]
    assert not kept[0].exists() and kept[1].exists() and kept[2].exists()
    reads.clear()
    assert cacheentries.sweep(tmp_path, trust_list=False) == 0
    assert sorted(reads) == ["e1.pb", "e2.pb"]           # told not to trust it: every entry


def test_a_damaged_list_only_means_reading_every_entry(tmp_path, monkeypatch):
    write(tmp_path / "e.pb", ENTRY)
    broken = write(tmp_path / "f.pb", ENTRY[:-1])
    (tmp_path / cacheentries.CHECKED).write_bytes(b"\xff\xfe garbage\nf.pb x y\n")
    assert cacheentries.sweep(tmp_path) == 1 and not broken.exists()
    stat = broken.with_name("e.pb").stat()
    listed = (tmp_path / cacheentries.CHECKED).read_text()
    assert listed == f"e.pb {stat.st_size} {stat.st_mtime_ns}\n"


@pytest.fixture
def clean_flags(monkeypatch):
    monkeypatch.delenv("TF_XLA_FLAGS", raising=False)
    monkeypatch.delenv(compilecache._MARK, raising=False)
    monkeypatch.setattr(compilecache, "_folder", compilecache._folder)
    return monkeypatch


def test_configure_points_tensorflow_at_a_folder_per_machine(clean_flags, tmp_path):
    clean_flags.setenv(compilecache.CACHE_ENV, str(tmp_path / "cache"))
    folder = compilecache.configure()
    assert folder.parent == tmp_path / "cache" and folder.name.startswith("tf")
    assert folder.is_dir() and compilecache.folder() == folder
    assert os.environ["TF_XLA_FLAGS"] == f"--tf_xla_persistent_cache_directory={folder}"
    clean_flags.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true")
    assert compilecache.configure() != folder          # other compiler flags: other code


def test_a_child_process_decides_for_itself(clean_flags, tmp_path):
    # configure() of a parent leaves its flag in the environment that children inherit
    clean_flags.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=0")
    clean_flags.setenv(compilecache.CACHE_ENV, str(tmp_path / "parent"))
    parent = compilecache.configure()
    clean_flags.setenv(compilecache.CACHE_ENV, str(tmp_path / "child"))
    child = compilecache.configure()
    assert child.parent == tmp_path / "child" and compilecache.folder() == child
    assert os.environ["TF_XLA_FLAGS"].split() == [
        "--tf_xla_auto_jit=0", f"--tf_xla_persistent_cache_directory={child}"]
    assert str(parent) not in os.environ["TF_XLA_FLAGS"]
    clean_flags.setenv(compilecache.CACHE_ENV, "off")
    assert compilecache.configure() is None
    assert os.environ["TF_XLA_FLAGS"] == "--tf_xla_auto_jit=0"     # the user's flag stays


def test_configure_keeps_the_users_choices(clean_flags, tmp_path):
    clean_flags.setenv(compilecache.CACHE_ENV, "off")
    assert compilecache.configure() is None and "TF_XLA_FLAGS" not in os.environ
    assert compilecache.folder() is None
    mine = f"--tf_xla_persistent_cache_directory={tmp_path}"
    clean_flags.setenv("TF_XLA_FLAGS", mine)
    clean_flags.setenv(compilecache.CACHE_ENV, str(tmp_path / "cache"))
    assert compilecache.configure() is None and os.environ["TF_XLA_FLAGS"] == mine
    assert not (tmp_path / "cache").exists()


def test_a_folder_that_cannot_be_used_turns_the_cache_off_in_one_line(clean_flags, tmp_path,
                                                                      capsys):
    blocker = write(tmp_path / "a-file", b"")
    clean_flags.setenv(compilecache.CACHE_ENV, str(blocker))
    assert compilecache.configure() is None and "TF_XLA_FLAGS" not in os.environ
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(blocker) in err and compilecache.CACHE_ENV in err
    clean_flags.delenv(compilecache.CACHE_ENV)
    clean_flags.setenv("XDG_CACHE_HOME", str(blocker))            # the default, unusable
    assert compilecache.configure() is None and "TF_XLA_FLAGS" not in os.environ
    assert capsys.readouterr().err == ""                          # silent: not on every command


FIT = r"""
import hashlib, json, sys
import numpy as np
from atrec.data.synthetic import make_synthetic
from atrec.params.lookup import HyperParams
from atrec.experiments.fitting import validation_loss
from atrec.runtime import compilecache, compiled
from atrec.run_settings import ATSettings, TrainSettings
import tensorflow as tf

for k in range(int(sys.argv[1])):        # move TensorFlow's own name counter along
    tf.function(lambda x: x * 2.0 + k)(tf.constant(1.0))
data = make_synthetic(num_users=50, num_items=40, n_train=500, n_test_users=20,
                      test_per_user=8, dim=3, seed=3, name="c").data
params = HyperParams.from_values({"dim": 4, "lam": 1e-3, "epsilon": 0.2})
def value(with_at):
    return validation_loss(data, "item", with_at, params,
                           settings=TrainSettings(steps=15, batch_size=64),
                           at_settings=ATSettings(pre_steps=6, iterations=2,
                                                  steps_per_iteration=2, batch_size=64))
kinds = {"mf": [False], "at": [True]}[sys.argv[2]]
values = [value(with_at) for with_at in kinds]
entries = len(list(compilecache.folder().glob("*.pb")))
compiled.release()                        # a new context: the loops are loaded again
again = [value(with_at) for with_at in kinds]
print(json.dumps({"values": [float(v).hex() for v in values],
                  "again": [float(v).hex() for v in again], "entries": entries,
                  "after_release": len(list(compilecache.folder().glob("*.pb")))}))
"""


def run_fit(cache: Path, shift: int, kind: str) -> dict:
    env = {**os.environ, compilecache.CACHE_ENV: str(cache)}   # with this process's flag
    out = subprocess.run([sys.executable, "-c", FIT, str(shift), kind], check=False, env=env,
                         text=True, capture_output=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def mf_cache(tmp_path_factory) -> tuple[Path, dict]:
    """A cache folder where one process compiled MF-IPS's loop, and what that process said.
    Made once: the tests below read it or damage a copy (a process costs seconds)."""
    cache = tmp_path_factory.mktemp("mf-cache")
    return cache, run_fit(cache, shift=0, kind="mf")


def test_a_loop_loaded_from_the_cache_gives_the_compiled_bits(mf_cache, tmp_path):
    cache, first = mf_cache
    assert first["entries"] == 1                     # MF-IPS's loop, compiled and kept
    assert first["after_release"] == 1               # loaded after the release
    assert first["again"] == first["values"]
    second = run_fit(cache, shift=5, kind="mf")      # another process, other TensorFlow names
    assert second["entries"] == 1 and second["after_release"] == 1      # loaded, not compiled
    assert second["values"] == first["values"] and second["again"] == first["values"]
    fresh = run_fit(tmp_path / "elsewhere", shift=0, kind="mf")   # compiled in an empty folder
    assert fresh["values"] == first["values"]


def test_at_loaded_from_the_cache_gives_the_compiled_bits(tmp_path):
    first = run_fit(tmp_path, shift=0, kind="at")
    assert first["entries"] == 1 and first["after_release"] == 1
    # another process, its TensorFlow counter moved (the harder case: one with the same
    # counter loads under the same names)
    other = run_fit(tmp_path, shift=5, kind="at")
    assert other["entries"] == 1 and other["after_release"] == 1        # loaded, not compiled
    assert other["values"] == other["again"] == first["again"] == first["values"]
    fresh = run_fit(tmp_path / "elsewhere", shift=0, kind="at")
    assert fresh["values"] == first["values"]


def test_a_truncated_entry_is_removed_and_compiled_again(mf_cache, tmp_path):
    cache, first = mf_cache
    shutil.copytree(cache, tmp_path, dirs_exist_ok=True)     # the module's folder stays whole
    folder, = tmp_path.iterdir()
    for entry in folder.glob("*.pb"):
        entry.write_bytes(entry.read_bytes()[:1000])
    again = run_fit(tmp_path, shift=0, kind="mf")
    assert again["values"] == first["values"] and again["entries"] == 1
    assert all(cacheentries.entry_ok(p) for p in folder.glob("*.pb"))


BROKEN_WHILE_RUNNING = FIT.split("kinds = ")[0] + r"""
value(False)
compiled.release()
import shutil
for entry in compilecache.folder().glob("*.pb"):      # damaged after the start-up check
    if sys.argv[2] == "cut":
        entry.write_bytes(entry.read_bytes()[:1000])
    elif sys.argv[2] == "folder":                      # read by TensorFlow as an empty entry
        entry.unlink()
        entry.mkdir()
    else:                                              # another loop's entry under this name
        other = make_synthetic(num_users=50, num_items=40, n_train=500, n_test_users=20,
                               test_per_user=8, dim=3, seed=3, name="c").data
        validation_loss(other, "item", False, HyperParams.from_values({"dim": 5, "lam": 1e-3}),
                        settings=TrainSettings(steps=15, batch_size=64))
        for made in compilecache.folder().glob("*.pb"):
            if made != entry:
                made.replace(entry)
        compiled.release()
        break
from atrec.errors import AtrecError
try:
    value(False)
except AtrecError as err:
    print(json.dumps({"error": str(err),
                      "left": len(list(compilecache.folder().glob("*.pb")))}))
"""


@pytest.mark.parametrize("damage, says", [("cut", "could not be read"),
                                           ("folder", "did not match its name"),
                                           ("swapped", "did not match its name")])
def test_an_entry_damaged_while_running_stops_with_one_line(tmp_path, damage, says):
    env = {**os.environ, compilecache.CACHE_ENV: str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", BROKEN_WHILE_RUNNING, "0", damage], check=False,
                         env=env, text=True, capture_output=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    said = json.loads(out.stdout.strip().splitlines()[-1])
    assert said["left"] == 0                                      # the damaged entry is gone
    assert "\n" not in said["error"] and "run the command again" in said["error"]
    assert str(tmp_path) in said["error"] and says in said["error"]


def test_an_entry_pruned_by_another_process_while_read_is_named(monkeypatch, tmp_path):
    import tensorflow as tf

    monkeypatch.setattr(compilecache, "_folder", tmp_path)
    gone = tf.errors.NotFoundError(None, None, f"{tmp_path}/xla_compile_cache__1__2__XLA_CPU_JIT"
                                               f".pb; No such file or directory")
    assert "another process" in compilecache._cache_problem(gone)
    elsewhere = tf.errors.NotFoundError(None, None, "/data/ratings.npz; No such file or directory")
    assert compilecache._cache_problem(elsewhere) is None       # not the cache: the loop's own
    plain = tf.errors.InvalidArgumentError(None, None, "Incompatible shapes: [3] vs. [4]")
    assert compilecache._cache_problem(plain) is None
