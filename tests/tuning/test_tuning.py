"""Tuning: search space, study runner (resume, killed workers, shared storage), export, CLI.

Most tests drive :func:`atrec.tuning.study.run_study` with a cheap fake objective (a function of the
parameters with a known minimum), so they exercise Optuna and the storage, not training. One
test tunes the real objective on tiny data with 20 steps, one runs ``atrec tune`` on Coat.
"""

import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import optuna
import pytest
import yaml
from click.testing import CliRunner
from optuna.trial import TrialState

from atrec import tuning
from atrec.cli import main
from atrec.errors import AtrecError
from atrec.experiments.fitting import validation_loss
from atrec.learners import at, mf
from atrec.params.lookup import HyperParams, get_params
from atrec.tuning import (
    Progress,
    SearchSpace,
    StudyOutcome,
    TuneRequest,
    WorkerSettings,
    export_best,
    run_study,
    storage,
    study_name,
    tune,
)

REPO = Path(__file__).resolve().parents[2]
FAST = WorkerSettings(heartbeat_interval=1, grace_period=2, poll_seconds=0.1)


def fake_loss(params: HyperParams) -> float:
    """Minimum 0 at dim 20, lam 1e-3 (and epsilon 0.1)."""
    loss = ((params.dim - 20) / 10) ** 2 + (math.log10(params.lam) + 3) ** 2
    if params.epsilon is not None:
        loss += (math.log10(params.epsilon) + 1) ** 2
    return loss


class Counting:
    """A fake objective that records every call."""

    def __init__(self):
        self.calls = []

    def __call__(self, params):
        self.calls.append(params)
        return fake_loss(params)


def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'studies.db'}"


def trials_of(storage_url, name):
    return optuna.load_study(study_name=name, storage=storage_url).get_trials(deepcopy=False)


def states(trials):
    return sorted(t.state.name for t in trials)


# --- names, search space, settings -------------------------------------------------------------

def test_study_names():
    assert study_name("atrec", "coat", "item", True) == "atrec-coat-item-at"
    assert study_name("x", "yahoo", "nb-true", False) == "x-yahoo-nb-true"


@pytest.mark.parametrize("kwargs, message", [
    ({"dim_low": 0}, "dim range"),
    ({"dim_high": 48}, "end on the grid"),
    ({"lam_low": 0.0}, "lam range"),
    ({"epsilon_low": 1.0, "epsilon_high": 0.5}, "epsilon range"),
])
def test_search_space_rejects(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SearchSpace(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    ({"heartbeat_interval": 0}, "heartbeat_interval"),
    ({"heartbeat_interval": 5, "grace_period": 5}, "grace_period"),
    ({"poll_seconds": 0}, "poll_seconds"),
    ({"max_failures": 0}, "max_failures"),
])
def test_worker_settings_reject(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WorkerSettings(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    ({"trials": 0}, "--trials 0"),
    ({"study_prefix": "a b"}, "--study-prefix"),
    ({"study_prefix": ""}, "--study-prefix"),
])
def test_tune_request_rejects(kwargs, message):
    with pytest.raises(AtrecError, match=message):
        TuneRequest(("coat",), ("item",), (False,), **kwargs)


@pytest.mark.parametrize("with_at", [False, True])
def test_sampled_trials_respect_the_search_space(with_at):
    # 40 trials: 10 random start-up draws, then 30 from TPE's model
    study_storage = optuna.storages.InMemoryStorage()
    out = run_study("space", fake_loss, with_at, 40, study_storage, worker=FAST)
    trials = optuna.load_study(study_name="space", storage=study_storage).trials
    assert out.complete == 40 and len(trials) == 40
    dims = [t.params["dim"] for t in trials]
    lams = [t.params["lam"] for t in trials]
    assert set(dims) <= set(range(5, 51, 5)) and len(set(dims)) > 3
    assert all(1e-6 <= v <= 1.0 for v in lams)
    # log-uniform: the start-up draws cover several decades, not just the top one
    assert min(lams[:10]) < 1e-3 < max(lams[:10])
    if with_at:
        eps = [t.params["epsilon"] for t in trials]
        assert all(1e-3 <= v <= 1.0 for v in eps)
        assert out.best_params.epsilon is not None
    else:
        assert all("epsilon" not in t.params for t in trials)
        assert out.best_params.epsilon is None
    # TPE finds the known minimum's neighbourhood
    assert out.best_value < 1.0
    assert out.best_value == min(t.value for t in trials)


# --- one worker: completes, resumes, reproducible ---------------------------------------------

def test_small_real_study_completes_and_exports(tiny_data, tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path / "results"))
    settings = mf.TrainSettings(steps=20, batch_size=64)
    request = TuneRequest(("tiny",), ("item", "uniform"), (False,), trials=3,
                          storage=url(tmp_path), settings=settings, worker=FAST)
    seen: list[Progress] = []
    outcomes = tune(request, progress=seen.append, loader=lambda name: tiny_data)
    assert [o.study for o in outcomes] == ["atrec-tiny-item", "atrec-tiny-uniform"]
    assert [(o.complete, o.ran) for o in outcomes] == [(3, 3), (3, 3)]
    assert [p.complete for p in seen] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert all(p.target == 3 for p in seen)
    for o in outcomes:
        # the exported best is the objective's value at those parameters, recomputed
        params, label = get_params("tuned", "tiny", o.propensity, False)
        assert params == o.best_params and label.startswith("tuned:")
        again = validation_loss(tiny_data, o.propensity, False, params, settings=settings)
        assert again == pytest.approx(o.best_value, rel=1e-6)
        values = [t.value for t in trials_of(url(tmp_path), o.study)]
        assert o.best_value == min(values)
    entry = yaml.safe_load((tmp_path / "results" / "tuned_params.yaml").read_text())["tiny"]["item"]
    assert entry["study"] == "atrec-tiny-item" and entry["trials"] == 3
    assert entry["storage"] == url(tmp_path) and entry["best_value"] == outcomes[0].best_value


def test_studies_run_family_by_family_and_release_between(tiny_data, tmp_path, monkeypatch):
    """Studies that share compiled loops (one method, with or without AT) run together, and
    the loops of a finished family are dropped before the next (atrec.runtime.compiled)."""
    from atrec.runtime import compiled

    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path / "results"))
    request = TuneRequest(("tiny",), ("item", "uniform"), (False, True), trials=1,
                          storage=url(tmp_path), settings=mf.TrainSettings(steps=10, batch_size=64),
                          at_settings=at.ATSettings(pre_steps=4, iterations=1,
                                                    steps_per_iteration=2, batch_size=64),
                          worker=FAST)
    before = compiled.releases
    outcomes = tune(request, loader=lambda name: tiny_data)
    assert [o.study for o in outcomes] == ["atrec-tiny-item", "atrec-tiny-uniform",
                                           "atrec-tiny-item-at", "atrec-tiny-uniform-at"]
    assert compiled.releases == before + 1


@pytest.mark.parametrize("with_at", [False, True])
def test_tune_config_with_injected_objective(with_at, tiny_data, tmp_path, monkeypatch):
    # an injected objective stands in for training; the study, export and lookup are real
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    out = tuning.tune_config(tiny_data, "nb-true", with_at, 4, url(tmp_path),
                             objective=fake_loss, objective_note="fake", worker=FAST)
    assert (out.study, out.complete) == (study_name("atrec", "tiny", "nb-true", with_at), 4)
    params, _ = get_params("tuned", "tiny", "nb-true", with_at)
    assert params == out.best_params and fake_loss(params) == out.best_value
    assert (params.epsilon is not None) == with_at
    stored = optuna.load_study(study_name=out.study, storage=url(tmp_path)).user_attrs["atrec"]
    defaults = at.ATSettings() if with_at else mf.TrainSettings()
    assert stored["objective"] == "fake" and stored["settings"] == defaults.as_dict()


def test_small_real_at_study(tiny_data, tmp_path):
    # the real AT objective, few steps, one dim (one compilation); epsilon is searched
    settings = at.ATSettings(pre_steps=5, iterations=2, steps_per_iteration=2, batch_size=32)
    objective = tuning.make_objective(tiny_data, "item", True, at_settings=settings)
    space = SearchSpace(dim_low=5, dim_high=5)
    out = run_study("at", objective, True, 3, url(tmp_path), space=space, worker=FAST)
    assert (out.complete, out.ran) == (3, 3)
    trials = trials_of(url(tmp_path), "at")
    assert len({t.params["epsilon"] for t in trials}) == 3
    again = validation_loss(tiny_data, "item", True, out.best_params, at_settings=settings)
    assert again == pytest.approx(out.best_value, rel=1e-6)


def test_resume_runs_only_the_missing_trials(tmp_path):
    first, second = Counting(), Counting()
    out = run_study("resume", first, False, 2, url(tmp_path), worker=FAST)
    assert (out.complete, out.ran, len(first.calls)) == (2, 2, 2)
    seen = []
    out = run_study("resume", second, False, 4, url(tmp_path), worker=FAST, progress=seen.append)
    assert (out.complete, out.ran, len(second.calls)) == (4, 2, 2)
    assert [p.complete for p in seen] == [2, 3, 4]
    assert seen[0].best_value == min(fake_loss(p) for p in first.calls)
    # a finished study runs nothing more
    third = Counting()
    assert run_study("resume", third, False, 4, url(tmp_path), worker=FAST).ran == 0
    assert third.calls == []
    # the resumed trials are new points, not a replay of the first ones
    assert set(map(repr, second.calls)).isdisjoint(map(repr, first.calls))


def test_one_worker_is_reproducible(tmp_path):
    a, b = Counting(), Counting()
    run_study("r", a, True, 12, f"sqlite:///{tmp_path / 'a.db'}", worker=FAST)
    run_study("r", b, True, 12, f"sqlite:///{tmp_path / 'b.db'}", worker=FAST)
    assert a.calls == b.calls
    # trial 0 comes from the documented per-trial seed, not from global state
    seed = tuning.PerTrialTPESampler(123).seed_for(0)
    assert seed == int(np.random.SeedSequence([123, 0]).generate_state(1)[0])


def test_trial_left_running_without_heartbeat_neither_counts_nor_blocks(tmp_path):
    storage_url = url(tmp_path)
    study = optuna.create_study(study_name="orphan", storage=storage_url)
    study.ask()  # a client that died right after creating its trial: RUNNING, no heartbeat
    out = run_study("orphan", Counting(), False, 2, storage_url, worker=FAST)
    assert out.complete == 2
    assert states(trials_of(storage_url, "orphan")) == ["COMPLETE", "COMPLETE", "FAIL"]


def test_a_trial_whose_worker_died_before_its_first_heartbeat_does_not_block(tmp_path):
    """The objective had started (the trial names its worker) but the heartbeat thread had not
    written yet when the worker was killed: Optuna never finds that trial stale, so it must be
    failed after the grace period, or every other worker waits for it forever."""
    storage_url = url(tmp_path)
    study = optuna.create_study(study_name="silent", storage=storage_url)
    trial = study.ask()
    trial.set_user_attr("worker", "elsewhere:1")   # atrec.tuning.study.WORKER_ATTR
    done = {}
    thread = threading.Thread(target=lambda: done.update(
        out=run_study("silent", Counting(), False, 2, storage_url, worker=FAST)), daemon=True)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "the study waited for a trial that had no heartbeat"
    assert done["out"].complete == 2
    assert states(trials_of(storage_url, "silent")) == ["COMPLETE", "COMPLETE", "FAIL"]


WORKER = """
import json, math, sys, time
from pathlib import Path
from atrec.tuning import WorkerSettings, run_study

url, name, n, sleep, ready, peers = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), \
    Path(sys.argv[5]), int(sys.argv[6])
ready.mkdir(exist_ok=True)
(ready / str(time.time())).touch()
while len(list(ready.iterdir())) < peers:  # start together
    time.sleep(0.01)

def objective(p):
    time.sleep(sleep)
    return (p.dim - 20) ** 2 / 100 + (math.log10(p.lam) + 3) ** 2

worker = WorkerSettings(heartbeat_interval=1, grace_period=2, poll_seconds=0.1)
out = run_study(name, objective, False, n, url, worker=worker)
print(json.dumps({"ran": out.ran, "complete": out.complete}))
"""


def start_worker(tmp_path, name, n, sleep, peers=1):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, url(tmp_path), name, str(n), str(sleep),
         str(tmp_path / f"ready-{name}"), str(peers)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)


def test_two_worker_processes_reach_exactly_the_requested_trials(tmp_path):
    procs = [start_worker(tmp_path, "shared", 8, 0.3, peers=2) for _ in range(2)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    trials = trials_of(url(tmp_path), "shared")
    assert sum(t.state == TrialState.COMPLETE for t in trials) == 8
    assert sum(r["ran"] for r in results) == 8
    assert all(r["complete"] == 8 and r["ran"] >= 1 for r in results)  # both did work
    # any trial beyond the 8 gave way before sampling, and says so
    for t in trials:
        if t.state != TrialState.COMPLETE:
            assert t.state == TrialState.FAIL and t.user_attrs.get("surplus") and not t.params
    workers = {t.user_attrs["worker"] for t in trials if t.state == TrialState.COMPLETE}
    assert len(workers) == 2


def test_killed_worker_trial_is_failed_and_the_study_finishes(tmp_path):
    proc = start_worker(tmp_path, "killed", 3, 600.0)  # its first trial never ends
    deadline = time.time() + 60
    try:
        while time.time() < deadline:
            try:
                running = [t for t in trials_of(url(tmp_path), "killed")
                           if t.state == TrialState.RUNNING and "worker" in t.user_attrs]
            except KeyError:  # study not created yet
                running = []
            if running:
                break
            time.sleep(0.1)
        assert running, "the worker never started a trial"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    resumed = Counting()
    out = run_study("killed", resumed, False, 3, url(tmp_path), worker=FAST)
    assert (out.complete, out.ran) == (3, 3)
    trials = trials_of(url(tmp_path), "killed")
    assert trials[running[0].number].state == TrialState.FAIL
    assert states(trials) == ["COMPLETE"] * 3 + ["FAIL"]


def test_objective_errors_and_nan_stop_the_worker(tmp_path):
    with pytest.raises(AtrecError, match="3 trials in a row failed"):
        run_study("nan", lambda p: float("nan"), False, 5, url(tmp_path),
                  worker=WorkerSettings(heartbeat_interval=1, grace_period=2, max_failures=3))
    with pytest.raises(ZeroDivisionError):
        run_study("boom", lambda p: 1 / 0, False, 5, url(tmp_path), worker=FAST)
    assert states(trials_of(url(tmp_path), "boom")) == ["FAIL"]


def test_study_with_other_settings_is_refused(tmp_path):
    run_study("s", fake_loss, False, 1, url(tmp_path), worker=FAST, attrs={"steps": 500})
    with pytest.raises(AtrecError, match="made with other steps"):
        run_study("s", fake_loss, False, 2, url(tmp_path), worker=FAST, attrs={"steps": 20})


@pytest.mark.parametrize("bad, message", [
    ("nosuchdb://x/y", "cannot open Optuna storage"),
    # a folder that does not exist is not created (atrec creates none outside its own)
    ("sqlite:////proc/no/such/dir/x.db", "the folder /proc/no/such/dir does not exist")])
def test_bad_storage_is_one_line_error(bad, message):
    with pytest.raises(AtrecError, match=message) as info:
        storage.open_storage(bad)
    assert "\n" not in str(info.value)


def test_storage_label_hides_passwords():
    assert storage.storage_label("postgresql://me:secret@db:5432/optuna") == \
        "postgresql://me:***@db:5432/optuna"


# --- export -------------------------------------------------------------------------------------

def outcome(dataset, propensity, with_at, params, value=1.0):
    return StudyOutcome(study=study_name("atrec", dataset, propensity, with_at), target=25,
                        complete=25, best_value=value, best_params=params, best_trial=7,
                        storage="sqlite:///x.db", dataset=dataset, propensity=propensity,
                        with_at=with_at)


def test_export_merges_and_get_params_reads_it(tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    export_best([outcome("coat", "item", True, HyperParams(20, 1e-3, 0.16))])
    export_best([outcome("coat", "user", False, HyperParams(15, 2e-3)),
                 outcome("yahoo", "item", False, None)])  # no best trial: skipped
    assert get_params("tuned", "coat", "item", True)[0] == HyperParams(20, 1e-3, 0.16)
    assert get_params("tuned", "coat", "user", False)[0] == HyperParams(15, 2e-3)
    with pytest.raises(AtrecError, match="no parameters for yahoo/item"):
        get_params("tuned", "yahoo", "item", False)
    # the published set is untouched
    assert get_params("published", "coat", "item", True)[0] == HyperParams(20, 0.0010069424705032128,
                                                                          0.16376442797241736)


def test_concurrent_exports_lose_nothing(tmp_path):
    path = tmp_path / "tuned.yaml"
    props = ["uniform", "user", "item", "user-item", "nb-uniform", "nb-true"]

    def export(with_at):
        for k, p in enumerate(props):
            export_best([outcome("coat", p, with_at, HyperParams(5 * (k + 1), 1e-3,
                                                                 0.1 if with_at else None))], path)

    threads = [threading.Thread(target=export, args=(a,)) for a in (False, True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    table = yaml.safe_load(path.read_text())
    assert len(table["coat"]) == 12
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_export_refuses_a_corrupt_file(tmp_path):
    path = tmp_path / "tuned.yaml"
    path.write_text("coat: [1, 2\n")
    with pytest.raises(AtrecError, match="not valid YAML"):
        export_best([outcome("coat", "item", False, HyperParams(5, 1e-3))], path)
    assert path.read_text() == "coat: [1, 2\n"


# --- CLI ----------------------------------------------------------------------------------------

def test_cli_tune_on_coat_then_params_tuned(coat_dir, tmp_path):
    env = {"ATREC_DATA_DIR": str(coat_dir), "ATREC_RESULTS_DIR": str(tmp_path)}
    args = ["tune", "--dataset", "coat", "--propensity", "item", "--without-at", "--trials", "2",
            "--format", "json"]
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["study"], r["trials"], r["ran"]) for r in rows] == [("atrec-coat-item", 2, 2)]
    assert (tmp_path / "optuna.db").exists()
    # a second call resumes: nothing left to run
    again = json.loads(CliRunner().invoke(main, args, env=env).stdout)
    assert again[0]["ran"] == 0 and again[0]["best val loss"] == rows[0]["best val loss"]
    table = yaml.safe_load((tmp_path / "tuned_params.yaml").read_text())
    assert table["coat"]["item"]["dim"] == rows[0]["dim"]
    assert table["coat"]["item"]["lam"] == rows[0]["lam"]


@pytest.mark.parametrize("args, message", [
    (["--storage", "nosuchdb://x"], "cannot open Optuna storage nosuchdb://x"),
    (["--dataset", "imdb"], "unknown dataset 'imdb'"),
    (["--study-prefix", "a b"], "--study-prefix"),
    (["--dataset", "yahoo"], "yahoo is not downloaded"),
    # in-memory SQLite: each connection (the heartbeat thread's too) would get its own database
    (["--storage", "sqlite://"], "give a file path, e.g. sqlite:///results/optuna.db"),
    (["--storage", "sqlite:///"], "give a file path, e.g. sqlite:///results/optuna.db"),
    (["--storage", "sqlite:///:memory:"], "give a file path, e.g. sqlite:///results/optuna.db"),
])
def test_cli_tune_bad_input_is_one_line(args, message, coat_dir, tmp_path):
    result = CliRunner().invoke(main, ["tune", "--quiet", *args],
                                env={"ATREC_RESULTS_DIR": str(tmp_path / "results"),
                                     "ATREC_DATA_DIR": str(coat_dir)})
    assert result.exit_code == (3 if "downloaded" in message else 2)
    assert message in result.stderr and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "results" / "optuna.db").exists()


def test_waiting_for_a_killed_workers_trial_is_said_once(tmp_path):
    """Target 1 and a killed worker's trial RUNNING: the resumed worker can only wait for its
    heartbeat to go stale, and says so in one line naming the trial and the worker."""
    proc = start_worker(tmp_path, "wait", 1, 600.0)
    deadline = time.time() + 60
    running = []
    try:
        while time.time() < deadline and not running:
            try:
                running = [t for t in trials_of(url(tmp_path), "wait")
                           if t.state == TrialState.RUNNING and "worker" in t.user_attrs]
            except KeyError:
                pass
            time.sleep(0.1)
        assert running, "the worker never started a trial"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    lines: list[str] = []
    slow = WorkerSettings(heartbeat_interval=1, grace_period=6, poll_seconds=0.1)
    out = run_study("wait", Counting(), False, 1, url(tmp_path), worker=slow, notice=lines.append)
    assert out.complete == 1
    owner = running[0].user_attrs["worker"]
    assert len(lines) == 1, lines
    assert re.fullmatch(rf"waiting up to \d+ s for trial 0 of worker {re.escape(owner)} \(no "
                        rf"heartbeat for \d+ s\) before counting it failed", lines[0]), lines
