"""Storage: PostgreSQL URLs and driver, and a real PostgreSQL server shared by workers.

URLs: ``postgresql://`` pinned to psycopg 3, a missing driver named in one line. Server: the
session's ``postgres`` fixture (tests/local_postgres.py) is a real PostgreSQL, started and
stopped by the tests; ``atrec tune`` workers started together on a fresh database must all
finish, with exactly the requested trials. (The SQLite checks, in-memory URLs included, are with
the other ``atrec tune`` input errors in ``test_tuning.py``.)
"""

import sys

import pytest
from click.testing import CliRunner

from atrec.cli import main
from atrec.errors import AtrecError
from atrec.tuning import storage
from atrec.tuning.study import WorkerSettings, run_study


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
        "error: PostgreSQL storage needs a driver: install atrec's postgres extra "
        "(pip install -e '.[postgres]' in the atrec folder)"]


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
