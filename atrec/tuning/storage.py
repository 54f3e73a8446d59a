"""Where Optuna studies live: storage URLs and opening them safely for many workers.

The default storage is the SQLite file ``<results>/optuna.db``; any other Optuna/SQLAlchemy URL
(``postgresql://...``, ``mysql+pymysql://...``) is used as given. Opening a storage creates
Optuna's tables when they are missing; for SQLite that happens under a file lock, so workers
started together do not collide (see :func:`open_storage`). Every failure is an
:class:`~atrec.errors.AtrecError` with a one-line message.
"""

from __future__ import annotations

import contextlib
import fcntl
import sqlite3
import warnings
from pathlib import Path

import optuna
import sqlalchemy
import sqlalchemy.event
import sqlalchemy.exc
from optuna.exceptions import ExperimentalWarning

from atrec.errors import AtrecError
from atrec.paths import results_dir

STORAGE_FILE = "optuna.db"


def default_storage_url() -> str:
    """The embedded SQLite file ``<results>/optuna.db`` as an absolute ``sqlite:///`` URL."""
    return "sqlite:///" + str((results_dir() / STORAGE_FILE).resolve())


def storage_label(url: str) -> str:
    """``url`` with any password masked, for tables and the tuned parameter file."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparsable URL is shown as given (it has no password)
        return url


def _sqlite_path(url: str) -> Path | None:
    if not url.startswith("sqlite:///"):
        return None
    rest = url[len("sqlite:///"):].split("?", 1)[0]
    return Path(rest) if rest and rest != ":memory:" else None


@contextlib.contextmanager
def file_lock(path: Path):
    """An exclusive ``fcntl.flock`` on ``path`` (created if needed) for the ``with`` block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def open_storage(url: str | None = None, worker=None):
    """An Optuna ``RDBStorage`` for ``url`` (default :func:`default_storage_url`) with heartbeats.

    ``worker``: a :class:`atrec.tuning.study.WorkerSettings` (heartbeat interval and grace
    period; default its defaults).

    SQLite files: connections wait up to 60 s for a lock held by another process; the schema
    of a new file is created under a file lock, so workers started together do not collide;
    the file is put in WAL mode with ``synchronous=NORMAL`` (a commit no longer waits for two
    fsyncs: Optuna commits about 18 times per trial, which cost 0.2 s per trial, several times
    a Coat run). WAL needs every worker on the same machine (no network file system): for
    several machines use a server database such as PostgreSQL.

    Raises :class:`AtrecError` naming the URL when it cannot be opened.
    """
    if worker is None:
        from atrec.tuning.study import WorkerSettings

        worker = WorkerSettings()
    url = url or default_storage_url()
    sqlite = _sqlite_path(url)
    kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(warnings.catch_warnings())
            warnings.simplefilter("ignore", ExperimentalWarning)  # heartbeats: stable since 2.9
            if sqlite is not None:
                sqlite.parent.mkdir(parents=True, exist_ok=True)
                stack.enter_context(file_lock(sqlite.with_name(sqlite.name + ".lock")))
                with contextlib.closing(sqlite3.connect(sqlite, timeout=60)) as conn:
                    conn.execute("PRAGMA journal_mode=WAL")
            storage = optuna.storages.RDBStorage(
                url, engine_kwargs=kwargs, heartbeat_interval=worker.heartbeat_interval,
                grace_period=worker.grace_period)
    except (ImportError, ValueError, sqlalchemy.exc.SQLAlchemyError, sqlite3.Error,
            OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise AtrecError(
            f"cannot open Optuna storage {storage_label(url)}: {reason}; give a URL such as "
            f"sqlite:///results/optuna.db or postgresql://user@host/db (with its driver "
            f"installed)") from None
    if sqlite is not None:
        sqlalchemy.event.listen(storage.engine, "connect", _sqlite_normal_sync)
        storage.engine.dispose()  # connections opened so far lack the pragma
    return storage


def _sqlite_normal_sync(dbapi_connection, _record) -> None:
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")
