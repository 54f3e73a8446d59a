"""Storage: PostgreSQL URLs and driver, and a real PostgreSQL server shared by workers.

URLs: ``postgresql://`` pinned to psycopg 3, a missing driver named in one line. Server: the
session's ``postgres`` fixture (tests/local_postgres.py) is a real PostgreSQL, started and
stopped by the tests; ``atrec tune`` workers started together on a fresh database must all
finish, with exactly the requested trials. (The SQLite checks, in-memory URLs included, are with
the other ``atrec tune`` input errors in ``test_tuning.py``.)
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import yaml
from click.testing import CliRunner
from optuna.trial import TrialState

from atrec.cli import main
from atrec.errors import AtrecError
from atrec.tuning import WorkerSettings, run_study, storage

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("url, resolved", [
    ("postgresql://me:pw@db:5432/atrec", "postgresql+psycopg://me:pw@db:5432/atrec"),
    ("postgresql+psycopg://me@db/atrec", "postgresql+psycopg://me@db/atrec"),
    ("sqlite:///results/optuna.db", "sqlite:///results/optuna.db"),
])
def test_postgresql_urls_use_psycopg_3(url, resolved):
    # whatever SQLAlchemy's default PostgreSQL driver is, postgresql:// means psycopg 3
    assert storage.resolve_url(url) == resolved


def test_missing_driver_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` now fails
    with pytest.raises(AtrecError, match=r"PostgreSQL storage needs a driver: .*postgres extra"):
        storage.open_storage("postgresql+psycopg://me@localhost/atrec")
    result = CliRunner().invoke(
        main, ["tune", "--quiet", "--storage", "postgresql://me@localhost/atrec"],
        env={"ATREC_RESULTS_DIR": str(tmp_path)})
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.strip().splitlines() == [
        ("error: PostgreSQL storage needs a driver: install atrec's postgres extra "
         "(pip install -e '.[postgres]' in the atrec folder)")]


# --- a real PostgreSQL server (the session's ``postgres`` fixture) -----------------------------

def test_both_postgresql_url_forms_share_one_study(postgres):
    # postgresql:// and postgresql+psycopg:// reach the same database; the second resumes
    fast = WorkerSettings(heartbeat_interval=1, grace_period=2, poll_seconds=0.1)
    db = postgres.database()
    first = run_study("forms", lambda p: p.lam, False, 2, postgres.url(db), worker=fast)
    assert (first.complete, first.ran) == (2, 2)
    again = run_study("forms", lambda p: p.lam, False, 3, postgres.url(db, "postgresql+psycopg"),
                      worker=fast)
    assert (again.complete, again.ran) == (3, 1)


# Each worker is `python -m atrec tune ...` run after its slow imports and a start line, so all
# of them open the fresh database within milliseconds of each other, as workers launched at once
# on several machines do. (Without the line, TensorFlow's import time spreads their starts.)
WORKER = """
import os, runpy, sys, time
from pathlib import Path
import atrec.cli, atrec.experiments.fitting, atrec.tuning.study  # noqa: F401  (slow imports)

ready, peers = Path(sys.argv[1]), int(sys.argv[2])
(ready / str(os.getpid())).touch()
while len(list(ready.iterdir())) < peers:
    time.sleep(0.005)
sys.argv = ["atrec", *sys.argv[3:]]
runpy.run_module("atrec", run_name="__main__", alter_sys=True)
"""


def test_workers_started_together_on_a_fresh_database(postgres, coat_dir, tmp_path):
    n_trials, n_workers = 6, 3
    url = postgres.url(postgres.database())
    ready = tmp_path / "ready"
    ready.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2",
               ATREC_DATA_DIR=str(coat_dir), ATREC_RESULTS_DIR=str(tmp_path / "results"))
    args = ["tune", "--dataset", "coat", "--propensity", "item", "--without-at",
            "--trials", str(n_trials), "--storage", url, "--quiet", "--format", "json"]
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(ready), str(n_workers), *args],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                              cwd=tmp_path)
             for _ in range(n_workers)]
    rows = []
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-3000:]
        rows.append(json.loads(out)[0])
    # every worker saw the study finish at exactly n_trials; none lost or counted twice
    assert [r["trials"] for r in rows] == [n_trials] * n_workers
    assert sum(r["ran"] for r in rows) == n_trials
    trials = optuna.load_study(study_name="atrec-coat-item",
                               storage=storage.resolve_url(url)).get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    assert len(complete) == n_trials
    # anything else gave way before sampling (a surplus trial), it was not a lost run
    assert all(t.state == TrialState.FAIL and t.user_attrs.get("surplus") and not t.params
               for t in trials if t.state != TrialState.COMPLETE)
    best = min(complete, key=lambda t: (t.value, t.number))
    entry = yaml.safe_load((tmp_path / "results" / "tuned_params.yaml").read_text())["coat"]["item"]
    assert {k: entry[k] for k in ("dim", "lam")} == best.params and "epsilon" not in entry
    assert (entry["best_trial"], entry["best_value"], entry["trials"]) == \
        (best.number, best.value, n_trials)
