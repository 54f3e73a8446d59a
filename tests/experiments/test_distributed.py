"""The run grid on a real Dask cluster (``--scheduler``): records equal to a local run's bit for
bit, resume, a worker killed mid-run, and one-line errors.

A LocalCluster of two single-threaded worker processes, listening on 127.0.0.1 only, is shared
by the module (TensorFlow compiles per process: the workers pay it once) and closed by its
fixture even when a test fails. Dask comes with the dev extra: these tests never skip.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import distributed
import pytest
from click.testing import CliRunner

import atrec
from atrec.cli import main
from atrec.errors import AtrecError
from atrec.experiments.fitting import loop_family
from atrec.experiments.training import TrainRequest, plan_request, train
from atrec.names import config_key
from atrec.results.records import iter_records, record_path

REPO = Path(__file__).resolve().parents[2]
SEEDS = [0, 1, 2]
# Two of Table 1's propensities: with and without AT they make four configurations of three
# loop families (the two AT ones share one, so training family by family reorders them), and
# nb-uniform's dim 50 trains its seeds in pairs, two groups. The other four propensities would
# add runs of the same kinds, not cases (tests/experiments/test_runner.py trains all six).
PROPENSITIES = ["uniform", "nb-uniform"]
# what a record's numbers are; provenance (command, created, elapsed_s) may differ
COMPARED = ("metrics", "trace", "val_loss_trace", "params", "protocol", "params_source", "variant")


def _request() -> TrainRequest:
    """Coat, :data:`PROPENSITIES` without and with AT, MF-IPS, published parameters."""
    return TrainRequest(["coat"], PROPENSITIES, [False, True], SEEDS)


def _by_run(root: Path) -> dict:
    """The records under ``root`` by (config key, seed)."""
    out = {}
    for record in iter_records(root, "coat"):
        key = "-".join([record["propensity"]] + (["at"] if record["with_at"] else []))
        out[(key, record["seed"])] = record
    return out


def _assert_equal_runs(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for run, record in got.items():
        for field in COMPARED:
            assert record.get(field) == want[run].get(field), (run, field)


@pytest.fixture(scope="module")
def coat_env(coat_dir):
    """``ATREC_DATA_DIR`` pointing at the installed Coat copy for the module."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATREC_DATA_DIR", str(coat_dir))
        yield coat_dir


@pytest.fixture(scope="module")
def local_runs(coat_env, tmp_path_factory) -> dict:
    """The reference: the whole request trained in this process, as ``atrec train`` does."""
    root = tmp_path_factory.mktemp("local-runs")
    start = time.perf_counter()
    outcomes = train(_request(), root=root)
    print(f"\nlocal run: {len(outcomes)} configurations x {len(SEEDS)} seeds in "
          f"{time.perf_counter() - start:.1f} s")
    runs = _by_run(root)
    assert len(runs) == 4 * len(SEEDS)
    return runs


@pytest.fixture(scope="module")
def cluster():
    """Two single-threaded worker processes on 127.0.0.1, closed at the end of the module."""
    local = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     host="127.0.0.1", dashboard_address=None,
                                     env={"TF_CPP_MIN_LOG_LEVEL": "2"})
    try:
        yield local
    finally:
        local.close()


@pytest.fixture
def client(cluster):
    """A second client of the cluster, for looking at its workers (not for training)."""
    with distributed.Client(cluster.scheduler_address, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=60)
        yield c


def _atrec_file() -> str:
    import atrec as worker_atrec

    return worker_atrec.__file__


def test_two_workers_give_the_local_records_bit_for_bit(cluster, client, local_runs, tmp_path,
                                                        monkeypatch):
    # the workers must run this checkout's atrec, not another installed one
    assert set(client.run(_atrec_file).values()) == {atrec.__file__}
    submitted = []
    submit = distributed.Client.submit

    def spy(self, func, *args, key=None, **kwargs):      # Dask's own submit, its order noted
        submitted.append(key)
        return submit(self, func, *args, key=key, **kwargs)

    monkeypatch.setattr(distributed.Client, "submit", spy)
    family = {plan.spec.key: loop_family(data, plan.spec)
              for data, plans in plan_request(_request(), tmp_path / "plan") for plan in plans}
    start = time.perf_counter()
    outcomes = train(_request(), root=tmp_path, scheduler=cluster.scheduler_address)
    print(f"\nLocalCluster (2 workers): {time.perf_counter() - start:.1f} s")
    assert len(outcomes) == 4
    assert [o.spec.key for o in outcomes] == [config_key(p, at, m)    # in training order
                                              for m, p, at in _request().configurations()]
    # groups come back from the workers in any order (nb-uniform, dim 50, is two groups)
    assert all(sorted(o.trained) == SEEDS and o.reused == [] for o in outcomes)
    _assert_equal_runs(_by_run(tmp_path), local_runs)
    # the client wrote them, with its own command line, not the worker's
    record = outcomes[0].records[0]
    assert "dask" not in record["provenance"]["command"]
    # handed to Dask family by family, as atrec train runs them: no family comes back once left
    order = [family[key.split("-", 2)[2].rsplit("-", 2)[0]] for key in submitted]
    runs = [f for n, f in enumerate(order) if n == 0 or f != order[n - 1]]
    assert len(order) == 5 and len(runs) == len(set(runs)) < 4, order


def test_resume_sends_only_the_missing_groups(cluster, client, local_runs, tmp_path):
    missing = {"uniform", "nb-uniform-at"}    # whole configurations: groups as in the full run
    for (key, seed), record in local_runs.items():
        if key not in missing and (key, seed) != ("uniform-at", 1):
            (path := record_path("coat", key, "published", seed, tmp_path)).parent.mkdir(
                parents=True, exist_ok=True)
            path.write_text(json.dumps(record))
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("seed-*.json")}
    with distributed.get_task_stream(client=client) as stream:
        outcomes = train(_request(), root=tmp_path, scheduler=cluster.scheduler_address)
    tasks = [t["key"] for t in stream.data if str(t["key"]).startswith("atrec-")]
    assert len(tasks) == len(missing) + 1, tasks    # one group each, and seed 1 of uniform-at
    trained = {o.spec.key: o.trained for o in outcomes if o.trained}
    assert trained == {"uniform": SEEDS, "nb-uniform-at": SEEDS, "uniform-at": [1]}
    assert {p: p.stat().st_mtime_ns for p in before} == before   # reused records untouched
    got = _by_run(tmp_path)
    assert len(got) == len(local_runs)
    _assert_equal_runs({r: got[r] for r in local_runs if r[0] in missing},
                       {r: v for r, v in local_runs.items() if r[0] in missing})


def test_cli_train_with_scheduler_writes_the_records(cluster, local_runs, tmp_path, monkeypatch):
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    result = CliRunner().invoke(main, ["train", "--propensity", "uniform", "--without-at",
                                       "--seeds", "3", "--scheduler", cluster.scheduler_address,
                                       "--format", "csv", "-q"])
    assert result.exit_code == 0, result.output
    assert "coat,mf-ips,uniform,without,published,authors,3" in result.output
    _assert_equal_runs(_by_run(tmp_path),
                       {r: v for r, v in local_runs.items() if r[0] == "uniform"})


def test_a_killed_worker_does_not_stop_the_grid(cluster, client, local_runs, tmp_path):
    """SIGKILL a busy worker process once the first configuration is saved: Dask reruns its task
    elsewhere and every record is still written, equal to the local run's."""
    pids = client.run(os.getpid)
    killed = {}

    def kill_a_busy_worker(outcome):
        if killed:
            return
        busy = [w for w, keys in client.processing().items() if keys and w in pids]
        assert busy, "no worker had a task to lose"
        killed["worker"], killed["pid"] = busy[0], pids[busy[0]]
        killed["tasks"] = list(client.processing()[busy[0]])
        os.kill(pids[busy[0]], signal.SIGKILL)

    outcomes = train(_request(), root=tmp_path, scheduler=cluster.scheduler_address,
                     progress=kill_a_busy_worker)
    assert killed["tasks"], killed
    assert all(sorted(o.trained) == SEEDS for o in outcomes)   # groups return in any order
    _assert_equal_runs(_by_run(tmp_path), local_runs)
    # the process is gone (its nanny starts a fresh one, which the cluster keeps)
    client.wait_for_workers(2, timeout=60)
    assert killed["pid"] not in client.run(os.getpid).values()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_nothing_listening_is_a_one_line_error(coat_env, tmp_path):
    address = f"tcp://127.0.0.1:{_free_port()}"
    env = dict(os.environ, ATREC_DATA_DIR=str(coat_env), ATREC_RESULTS_DIR=str(tmp_path))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "atrec", "train", "--propensity", "item",
                           "--without-at", "--seeds", "2", "--scheduler", address],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    seconds = time.perf_counter() - start
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"error: cannot reach a Dask scheduler at {address}")
    assert "dask scheduler" in lines[0] and "dask worker" in lines[0]
    assert seconds < 40, seconds
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("scheduler", ["local:0", "local:x", "localhost"])
def test_bad_local_cluster_sizes_are_refused(scheduler):
    from atrec.experiments.distributed import parse_local

    if scheduler == "localhost":     # an address that happens to start with "local"
        with pytest.raises(AtrecError, match="local:N"):
            parse_local(scheduler)
    else:
        with pytest.raises(AtrecError, match=f"--scheduler {scheduler}: give local:N"):
            parse_local(scheduler)


def test_reproduce_passes_the_scheduler_to_training(reproduce_env):
    """``atrec reproduce --scheduler`` reaches the training stage (a bad value fails there)."""
    tmp_path = reproduce_env
    result = CliRunner().invoke(main, ["reproduce", "--seeds", "1", "--no-variance",
                                       "--scheduler", "local:0"])
    assert result.exit_code == 2, result.output
    assert "[train" not in result.output and "[preprocess" in result.output
    assert "error: --scheduler local:0: give local:N" in result.output
    assert not (tmp_path / "results" / "runs").exists()


def test_missing_dask_names_the_extra(coat_env, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)   # as if the extra were not installed
    monkeypatch.setenv("ATREC_RESULTS_DIR", str(tmp_path))
    result = CliRunner().invoke(main, ["train", "--propensity", "item", "--without-at",
                                       "--seeds", "1", "--scheduler", "local:2"])
    assert result.exit_code == 2
    assert result.output.strip() == (
        "error: --scheduler needs Dask: pip install -e '.[dask]' in the atrec folder")


def test_the_base_install_does_not_import_dask():
    code = ("import sys, atrec.cli, atrec.experiments.fitting, atrec.experiments.distributed; "
            "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_local_workers_log_at_atrecs_quiet_level(monkeypatch):
    """The workers of local:N get this process's TensorFlow log level (atrec's 3 unless the
    user set one): at 2 they printed the compilation cache's 'machine type' and parse lines,
    logged as errors, between the progress lines."""
    import distributed

    from atrec.experiments import distributed as dist

    seen = {}

    class Stop(Exception):
        pass

    def fake_cluster(**kwargs):
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(distributed, "LocalCluster", fake_cluster)
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    with pytest.raises(Stop), dist.connect("local:1"):
        pass
    assert seen["env"] == {"TF_CPP_MIN_LOG_LEVEL": "3"}
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")     # a user who wants every line
    with pytest.raises(Stop), dist.connect("local:1"):
        pass
    assert seen["env"] == {"TF_CPP_MIN_LOG_LEVEL": "0"}
