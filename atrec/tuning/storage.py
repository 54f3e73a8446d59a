"""Where Optuna studies live: storage URLs, their checks, and opening them safely for many workers.

Accepted ``--storage`` URLs:

* ``sqlite:///<path>`` (the default, ``<results>/optuna.db``): one machine, no server. An
  in-memory SQLite URL (``sqlite://``, ``sqlite:///``, ``sqlite:///:memory:``) is refused:
  every connection (Optuna's heartbeat thread opens its own) would see another empty database,
  and nothing would outlive the process.
* ``postgresql://...`` and ``postgresql+psycopg://...``: several machines, one server. Both use
  psycopg 3, installed by atrec's ``postgres`` extra (``pip install -e '.[postgres]'``). A bare
  ``postgresql://`` is pinned to it because SQLAlchemy's default PostgreSQL driver differs
  between versions (psycopg2 up to 2.0, psycopg 3 from 2.1), so the same URL would need another
  package after an upgrade. A URL naming another driver (``postgresql+psycopg2://``) is used as
  given.
* any other Optuna/SQLAlchemy URL (``mysql+pymysql://...``), used as given.

Opening a storage creates Optuna's tables when they are missing. Workers started together on a
fresh database would all try that at once (PostgreSQL then fails all but one with a unique
violation in its catalogue), so creation is serialised: under a file lock for SQLite, under a
PostgreSQL advisory lock for PostgreSQL (see :func:`open_storage`). Every failure is an
:class:`~atrec.errors.AtrecError` with a one-line message.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import sqlite3
import warnings
from dataclasses import dataclass
from pathlib import Path

from atrec.errors import AtrecError
from atrec.fileio import make_folder
from atrec.paths import require_parent, results_dir

STORAGE_FILE = "optuna.db"
# atrec is installed from its folder (make install: pip install -e '.[dev]'), not from an index
POSTGRES_INSTALL = ("install atrec's postgres extra (pip install -e '.[postgres]' in the atrec "
                    "folder)")
POSTGRES_DRIVER = "psycopg"       # psycopg 3, what the postgres extra installs
# Key of the PostgreSQL advisory lock held while Optuna's tables are created (advisory locks are
# per database; any fixed 64-bit number that other software is unlikely to use will do).
SCHEMA_LOCK_KEY = int.from_bytes(hashlib.sha256(b"atrec: optuna schema").digest()[:8], "big",
                                 signed=True)
SCHEMA_LOCK_TIMEOUT = "120s"      # a worker stuck holding it turns into an error, not a hang


@dataclass(frozen=True)
class WorkerSettings:
    """How one worker behaves in a shared study.

    ``heartbeat_interval`` (s): how often a running trial says it is alive (RDB storages).
    ``grace_period`` (s): a RUNNING trial silent for longer is taken as killed and marked FAIL.
    ``poll_seconds``: how long to wait before looking again when other workers' running trials
    already fill the target. ``max_failures``: consecutive failed trials (e.g. NaN objective)
    after which the worker stops with an error instead of trying forever.
    """

    heartbeat_interval: int = 10
    grace_period: int = 60
    poll_seconds: float = 2.0
    max_failures: int = 5

    def __post_init__(self) -> None:
        if int(self.heartbeat_interval) != self.heartbeat_interval or self.heartbeat_interval < 1:
            raise ValueError(f"heartbeat_interval must be a positive integer, got "
                             f"{self.heartbeat_interval!r}")
        if int(self.grace_period) != self.grace_period or self.grace_period <= \
                self.heartbeat_interval:
            raise ValueError(f"grace_period must be an integer above heartbeat_interval "
                             f"({self.heartbeat_interval}), got {self.grace_period!r}")
        if not self.poll_seconds > 0:
            raise ValueError(f"poll_seconds must be > 0, got {self.poll_seconds!r}")
        if self.max_failures < 1:
            raise ValueError(f"max_failures must be >= 1, got {self.max_failures!r}")


def default_storage_url() -> str:
    """The embedded SQLite file ``<results>/optuna.db`` as an absolute ``sqlite:///`` URL."""
    return "sqlite:///" + str((results_dir() / STORAGE_FILE).resolve())


def storage_label(url: str) -> str:
    """``url`` with any password masked, for tables and the tuned parameter file."""
    try:
        from sqlalchemy.engine import make_url  # about 1 s to import: only for a label

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparsable URL is shown as given (it has no password)
        return url


def _sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///<path>`` URL; ``None`` for other URLs and in-memory ones."""
    if not url.startswith("sqlite:///"):
        return None
    rest = url[len("sqlite:///"):].split("?", 1)[0]
    return Path(rest) if rest and rest != ":memory:" else None


@contextlib.contextmanager
def file_lock(path: Path):
    """An exclusive ``fcntl.flock`` on ``path`` (created if needed) for the ``with`` block."""
    make_folder(path.parent)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def resolve_url(url: str) -> str:
    """The URL :func:`open_storage` connects to: ``url`` checked, PostgreSQL pinned to psycopg 3.

    Raises :class:`AtrecError` for an in-memory SQLite URL and for a PostgreSQL URL whose
    driver is not installed (naming the extra that installs it). A URL SQLAlchemy cannot parse
    is returned as given, for Optuna to reject with its own reason.
    """
    import sqlalchemy  # about 1 s to import: only where a study is used

    try:
        parsed = sqlalchemy.engine.make_url(url)
    except sqlalchemy.exc.ArgumentError:
        return url
    backend = parsed.get_backend_name()
    if backend == "sqlite" and parsed.database in (None, "", ":memory:"):
        raise AtrecError(
            f"--storage {url}: an in-memory SQLite database is private to one connection and "
            f"lost when the worker ends; give a file path, e.g. sqlite:///results/optuna.db")
    if backend != "postgresql":
        return url
    if "+" not in parsed.drivername:
        parsed = parsed.set(drivername=f"postgresql+{POSTGRES_DRIVER}")
    driver = parsed.drivername.split("+", 1)[1]
    try:
        dialect = parsed.get_dialect()
        import_dbapi = getattr(dialect, "import_dbapi", None) or dialect.dbapi
        import_dbapi()
    except ImportError as exc:
        if driver == POSTGRES_DRIVER:
            raise AtrecError(f"PostgreSQL storage needs a driver: {POSTGRES_INSTALL}") from None
        raise AtrecError(
            f"--storage {storage_label(url)} needs the {driver} driver ({exc}): install it, or "
            f"use postgresql://... and {POSTGRES_INSTALL}") from None
    except sqlalchemy.exc.NoSuchModuleError:
        return url  # an unknown driver name: Optuna's error below names it
    return parsed.render_as_string(hide_password=False)


@contextlib.contextmanager
def _postgres_schema_lock(url: str):
    """Hold a PostgreSQL advisory lock (session level, on a connection of its own) for the block.

    Why a lock and not retries: Optuna creates its tables, a version row and an Alembic stamp
    in several statements; run by several workers at once on a fresh database, any of them can
    collide (a unique violation in ``pg_type``, a duplicate version row). Retrying after a
    collision would work only if every partial state were recoverable. With the lock, one
    worker creates the schema and the others, waiting, find it complete and create nothing.
    The lock is released when the block ends, and by the server when a worker dies while
    holding it (its connection closes), so it cannot be left behind.
    """
    import sqlalchemy  # about 1 s to import: only where a study is used

    engine = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            conn.execute(sqlalchemy.text(f"SET lock_timeout = '{SCHEMA_LOCK_TIMEOUT}'"))
            conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:key)"),
                         {"key": SCHEMA_LOCK_KEY})
            try:
                yield
            finally:
                conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:key)"),
                             {"key": SCHEMA_LOCK_KEY})
    finally:
        engine.dispose()


def open_storage(url: str | None = None, worker=None):
    """An Optuna ``RDBStorage`` for ``url`` (default :func:`default_storage_url`) with heartbeats.

    ``worker``: a :class:`WorkerSettings` (heartbeat interval and grace
    period; default its defaults). The URL is checked and resolved by :func:`resolve_url`.

    SQLite files: connections wait up to 60 s for a lock held by another process; the schema
    of a new file is created under a file lock, so workers started together do not collide;
    the file is put in WAL mode with ``synchronous=NORMAL`` (a commit no longer waits for two
    fsyncs: Optuna commits about 18 times per trial, which cost 0.2 s per trial, several times
    a Coat run). WAL needs every worker on the same machine (no network file system): for
    several machines use a server database such as PostgreSQL.

    PostgreSQL: the storage is opened (and the schema created if missing) under an advisory
    lock, so workers started together on a fresh database all survive
    (:func:`_postgres_schema_lock`).

    Raises :class:`AtrecError` naming the URL when it cannot be opened.
    """
    import optuna  # about 1 s to import: only where a study is used
    import sqlalchemy
    from optuna.exceptions import ExperimentalWarning

    if worker is None:
        worker = WorkerSettings()
    given, url = url, url or default_storage_url()
    target = resolve_url(url)
    sqlite = _sqlite_path(target)
    # a database in a folder that does not exist is refused (atrec creates none outside its
    # own); the default's folder is the results folder, atrec's own, created when missing
    if given and sqlite is not None and sqlite.parent.resolve() != results_dir().resolve():
        require_parent(sqlite, "--storage")
    kwargs = {"connect_args": {"timeout": 60}} if target.startswith("sqlite") else {}
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(warnings.catch_warnings())
            warnings.simplefilter("ignore", ExperimentalWarning)  # heartbeats: stable since 2.9
            if sqlite is not None:
                make_folder(sqlite.parent)
                stack.enter_context(file_lock(sqlite.with_name(sqlite.name + ".lock")))
                with contextlib.closing(sqlite3.connect(sqlite, timeout=60)) as conn:
                    conn.execute("PRAGMA journal_mode=WAL")
            elif target.startswith("postgresql"):
                stack.enter_context(_postgres_schema_lock(target))
            storage = optuna.storages.RDBStorage(
                target, engine_kwargs=kwargs, heartbeat_interval=worker.heartbeat_interval,
                grace_period=worker.grace_period)
    except (ImportError, ValueError, sqlalchemy.exc.SQLAlchemyError, sqlite3.Error,
            OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise AtrecError(
            f"cannot open Optuna storage {storage_label(url)}: {reason}; give a URL such as "
            f"sqlite:///results/optuna.db or postgresql://user@host/db") from None
    if sqlite is not None:
        sqlalchemy.event.listen(storage.engine, "connect", _sqlite_normal_sync)
        storage.engine.dispose()  # connections opened so far lack the pragma
    return storage


def _sqlite_normal_sync(dbapi_connection, _record) -> None:
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")
