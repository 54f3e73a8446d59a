"""A throwaway PostgreSQL server for the tests, started and stopped by the test session itself.

Why this way: the tests of shared tuning storage need a real server (the races they guard
against live in PostgreSQL's catalogue, not in a mock), and CI is a fresh machine with only
what ``pip install -e '.[dev]'`` installs. The ``pgserver`` package (in the ``dev`` extra)
ships relocatable PostgreSQL binaries; this module runs them directly rather than through
``pgserver.get_server``, because that listens on a Unix socket only, keeps a lock file and
process list in a per-user runtime folder, and as root chmods every parent folder of its
install and data paths. Here everything lives in one temporary folder, removed on
:meth:`LocalPostgres.stop`, and the server listens on 127.0.0.1 only, on a free port.

PostgreSQL refuses to run as root. Run as root (containers, this workplace), the server runs
as the unprivileged ``nobody`` account instead: the binaries are copied into the temporary
folder (34 MB, well under a second), because ``nobody`` usually cannot reach the
interpreter's site-packages (e.g. under ``/root``), and the data folder is given to ``nobody``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

SERVER_SETTINGS = """
# written by tests/local_postgres.py: local, throwaway, fast
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 100
fsync = off
synchronous_commit = off
full_page_writes = off
"""


def pgserver_bindir() -> Path:
    """The folder of the PostgreSQL binaries that the ``pgserver`` package ships."""
    with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR on import
        warnings.simplefilter("ignore")
        import pgserver
    return Path(pgserver.pg_config(["--bindir"]).strip())


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalPostgres:
    """One PostgreSQL server in a temporary folder: :meth:`start`, :meth:`database`, :meth:`stop`.

    ``user`` is the superuser name inside the server (trust authentication, local only).
    """

    def __init__(self, user: str = "postgres") -> None:
        self.user = user
        self.port: int | None = None
        self.root = Path(tempfile.mkdtemp(prefix="atrec-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "run" / "server.log"
        self._account = pwd.getpwnam("nobody") if os.geteuid() == 0 else None
        self._databases = 0

    # --- running the binaries ---------------------------------------------------------------

    def _run(self, tool: str, *args: str, timeout: float = 120) -> str:
        """Run ``tool`` (a binary of the server) as the server's account; its stdout."""
        demote = {}
        if self._account is not None:
            demote = {"user": self._account.pw_uid, "group": self._account.pw_gid,
                      "extra_groups": []}
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C",
               "HOME": str(self.root), "TZ": "UTC"}
        proc = subprocess.run([str(self.bindir / tool), *args], check=False, capture_output=True,
                              text=True, env=env, cwd=self.root, timeout=timeout, **demote)
        if proc.returncode != 0:
            log = self.log.read_text()[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{tool} {' '.join(args)} failed ({proc.returncode}):\n"
                               f"{proc.stdout}{proc.stderr}\n{log}")
        return proc.stdout

    def _give(self, path: Path) -> None:
        if self._account is not None:
            os.chown(path, self._account.pw_uid, self._account.pw_gid)

    # --- life cycle ---------------------------------------------------------------------------

    def start(self, attempts: int = 3) -> LocalPostgres:
        """initdb a fresh cluster and start the server on a free 127.0.0.1 port (tries again on
        another port if one was taken in between)."""
        source = pgserver_bindir()
        if self._account is not None:
            self.root.chmod(0o755)
            # the wheel's binaries find their libraries through an RPATH relative to
            # themselves ($ORIGIN/../../../pgserver.libs): keep <site>/pgserver/pginstall and
            # <site>/pgserver.libs in the same places relative to each other
            site = source.parents[2]
            copy = self.root / "site"
            shutil.copytree(source.parent, copy / source.parent.relative_to(site), symlinks=True)
            for libs in site.glob("pgserver*.libs"):
                shutil.copytree(libs, copy / libs.name, symlinks=True)
            for path in [copy, *copy.rglob("*")]:
                if not path.is_symlink():  # readable, and runnable where the owner may run it
                    mode = path.stat().st_mode
                    path.chmod(mode | 0o044 | (0o011 if path.is_dir() or mode & 0o100 else 0))
            self.bindir = copy / source.relative_to(site)
        else:
            self.bindir = source
        self.data.mkdir(mode=0o700)
        self.log.parent.mkdir()
        self._give(self.data)
        self._give(self.log.parent)
        self._run("initdb", "-D", str(self.data), "-U", self.user, "--auth=trust",
                  "--encoding=UTF8", "--no-locale", "--no-sync")
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(SERVER_SETTINGS)
        for attempt in range(attempts):
            self.port = free_port()
            try:
                self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                          "-o", f"-p {self.port}", "start")
                return self
            except RuntimeError:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.5)
        return self

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove the temporary folder."""
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60",
                          "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    # --- databases ---------------------------------------------------------------------------

    def url(self, database: str, driver: str = "postgresql") -> str:
        """The SQLAlchemy URL of ``database`` on this server (``driver``: the URL scheme)."""
        return f"{driver}://{self.user}@127.0.0.1:{self.port}/{database}"

    def database(self) -> str:
        """Create a new, empty database; return its name."""
        import psycopg

        self._databases += 1
        name = f"atrec_test_{self._databases}"
        with psycopg.connect(host="127.0.0.1", port=self.port, user=self.user,
                             dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name
