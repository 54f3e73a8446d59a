"""Claims on seeds: two ``atrec train`` processes on one results folder split the work, a dead
owner's claim is taken over, and Ctrl-C saves the group in progress and stops with exit 130."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from atrec.experiments.locks import STALE_AFTER_S, GroupClaim, Holder, claim_path, try_claim
from atrec.results.records import load_record

REPO = Path(__file__).resolve().parents[2]
TRAIN = ["train", "--dataset", "coat", "--propensity", "item,user", "--seeds", "4",
         "--format", "csv"]
LINE = re.compile(r"^\[(\d)/4\] coat (\S+): (\d) seed\(s\) trained, (\d) reused; (\d+)/16 seeds, "
                  r"\d+:\d\d elapsed")


def _env(coat_dir, results) -> dict:
    return dict(os.environ, ATREC_DATA_DIR=str(coat_dir), ATREC_RESULTS_DIR=str(results),
                PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")


def _start(coat_dir, results, *extra) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "atrec", *TRAIN, *extra], cwd=REPO,
                            env=_env(coat_dir, results), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _records(results: Path) -> dict:
    """Every record under ``results`` without its provenance (time stamps, command, elapsed)."""
    out = {}
    for path in sorted((results / "runs").rglob("seed-*.json")):
        record = load_record(path)
        record.pop("provenance")
        out[str(path.relative_to(results))] = record
    return out


def _trained(csv_text: str) -> dict:
    lines = csv_text.strip().splitlines()
    head = lines[0].split(",")
    rows = [dict(zip(head, line.split(","))) for line in lines[1:]]
    return {(r["propensity"], r["AT"]): int(r["trained"]) for r in rows}


def _leftover_claims(results: Path) -> list:
    return [p for p in results.rglob(".seed-*") if p.is_file()]


@pytest.fixture(scope="module")
def reference(coat_dir, tmp_path_factory) -> dict:
    """The records of one uninterrupted process, and its progress lines."""
    results = tmp_path_factory.mktemp("reference")
    proc = _start(coat_dir, results)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    lines = [m for m in map(LINE.match, err.splitlines()) if m]
    assert [int(m.group(1)) for m in lines] == [1, 2, 3, 4], err
    assert [int(m.group(5)) for m in lines] == [4, 8, 12, 16], err
    assert "left" in err.splitlines()[0]            # an estimate of the time left
    return _records(results)


def test_two_processes_share_the_work(coat_dir, tmp_path, reference):
    procs = [_start(coat_dir, tmp_path) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    trained = [_trained(out) for out, _ in outs]
    for config in trained[0]:        # every seed trained once, by one process or the other
        assert trained[0][config] + trained[1][config] == 4, trained
    assert sum(sum(t.values()) for t in trained) == 16
    for _, err in outs:              # each process reports all four configurations
        assert len([m for m in map(LINE.match, err.splitlines()) if m]) == 4, err
    assert _records(tmp_path) == reference
    assert not _leftover_claims(tmp_path)


def test_ctrl_c_saves_the_group_in_progress_and_a_rerun_completes(coat_dir, tmp_path, reference):
    proc = _start(coat_dir, tmp_path)
    while len(list((tmp_path / "runs").rglob("seed-*.json"))) < 4 and proc.poll() is None:
        time.sleep(0.02)
    time.sleep(1.5)     # the first group is saved; the second (item-at, about 8 s) is training
    proc.send_signal(signal.SIGINT)
    sent = time.time()
    out, err = proc.communicate(timeout=120)
    waited = time.time() - sent
    assert proc.returncode == 130, err
    last = err.strip().splitlines()[-1]
    m = re.fullmatch(r"interrupted: (\d) of 4 configurations done; (\d+) of 16 seeds left: run the "
                     r"same command again to resume them", last)
    assert m, err
    saved = _records(tmp_path)                  # valid records, each equal to the reference's
    assert saved and all(reference[k] == v for k, v in saved.items())
    assert len(saved) == 16 - int(m.group(2)) and len(saved) >= 8   # the group in progress too
    assert not _leftover_claims(tmp_path)
    newest = max(p.stat().st_mtime for p in (tmp_path / "runs").rglob("seed-*.json"))
    print(f"\nCtrl-C answered {waited:.1f} s after SIGINT; exit {sent + waited - newest:.2f} s "
          f"after the last record was written")
    assert sent + waited - newest < 3
    rerun = _start(coat_dir, tmp_path, "--quiet")
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0 and err == "", err      # --quiet: no progress lines
    assert sum(_trained(out).values()) == int(m.group(2))
    assert _records(tmp_path) == reference


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _plant(folder: Path, seed: int, host: str, pid: int, created: float) -> Path:
    path = claim_path(folder, seed)
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"host": host, "pid": pid, "started": None, "created": created}))
    return path


def test_a_dead_owners_claim_is_taken_over(tmp_path):
    me = socket.gethostname()
    _plant(tmp_path, 0, me, _dead_pid(), time.time())
    _plant(tmp_path, 1, "elsewhere", 1, time.time() - STALE_AFTER_S - 1)
    got = try_claim(tmp_path, [0, 1])
    assert isinstance(got, GroupClaim)
    assert json.loads(claim_path(tmp_path, 0).read_text())["pid"] == os.getpid()
    got.release()
    assert not list(tmp_path.iterdir())


def test_a_live_claim_is_left_to_its_owner(tmp_path):
    me = socket.gethostname()
    _plant(tmp_path, 1, me, os.getppid(), time.time())
    held = try_claim(tmp_path, [0, 1])
    assert isinstance(held, Holder) and str(held) == f"{me}:{os.getppid()}"
    assert not claim_path(tmp_path, 0).exists()     # all or nothing
    _plant(tmp_path, 1, "elsewhere", 1, time.time() - 60)   # another host, recent: live
    assert isinstance(try_claim(tmp_path, [1]), Holder)


def test_run_config_takes_over_a_stale_claim(tiny_data, tmp_path):
    from atrec.experiments.driver import run_config
    from atrec.experiments.spec import RunSpec
    from atrec.run_settings import TrainSettings
    from atrec.params.lookup import HyperParams
    from atrec.results.records import record_path

    spec = RunSpec("tiny", "item", False, HyperParams(4, 1e-3), "published", (0, 1),
                   TrainSettings(steps=20, batch_size=32))
    folder = record_path(spec.dataset, spec.key, spec.label, 0, tmp_path).parent
    _plant(folder, 0, socket.gethostname(), _dead_pid(), time.time())
    outcome = run_config(tiny_data, spec, tmp_path)
    assert outcome.trained == [0, 1]
    assert not _leftover_claims(tmp_path)
