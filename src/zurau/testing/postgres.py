"""A throwaway PostgreSQL server for tests and pipelines, with logical replication on.

:class:`TemporaryPostgres` runs ``initdb`` into a fresh temporary directory with the installed
PostgreSQL binaries, then starts ``postgres`` on a port of 127.0.0.1 that was free a moment ago,
its unix socket in that directory, ``wal_level=logical`` (which a stock server lacks, and change
data capture needs), trust authentication for the superuser ``postgres``, and no fsync (the data
is thrown away). It never touches any other PostgreSQL server on the machine: it has its own data
directory and port, and signals go only to the process it started, by its process id.

* :meth:`~TemporaryPostgres.start` returns once the server accepts connections (or raises, with
  the server's log tail in the message); :meth:`~TemporaryPostgres.stop` is a fast shutdown
  (SIGINT); :meth:`~TemporaryPostgres.kill` is ``kill -9`` of the postmaster. Both keep the data
  directory, so :meth:`start` again brings the same database back on the same port.
  :meth:`~TemporaryPostgres.close` stops it and deletes the directory. As a context manager the
  server lives for the ``with`` block.
* The binaries come from ``bindir`` if given, else ``$ZURAU_POSTGRES_BINDIR``, else the newest
  ``/usr/lib/postgresql/<version>/bin`` (Debian's layout), else ``initdb`` on ``PATH``; with none
  :class:`PostgresNotFoundError` says what is missing and how to install it.
* PostgreSQL refuses to run as root: when this process is root the server runs as the system user
  ``postgres`` (created by every distribution's server package) and the directory is handed to it.
* Zurau's pytest plugin offers one as the session-scoped fixture ``zurau_postgres``.

Only the standard library is imported here.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Self

from zurau.testing.broker_process import HOST, free_port

#: The settings every temporary server gets (``settings`` of the constructor add to them).
DEFAULT_SETTINGS: dict[str, str] = {
    "wal_level": "logical",
    "max_replication_slots": "20",
    "max_wal_senders": "20",
    "fsync": "off",
    "full_page_writes": "off",
    "shared_buffers": "32MB",
    "max_connections": "50",
    "log_min_messages": "warning",
    "logging_collector": "off",
}
REQUIRED_BINARIES = ("initdb", "postgres", "pg_isready")
#: Debian's layout: one ``<version>/bin`` per installed server version.
POSTGRES_ROOT = Path("/usr/lib/postgresql")
SUPERUSER = "postgres"
LOG_TAIL_LINES = 20
_VERSION_DIR = re.compile(r"^\d+(\.\d+)?$")


class PostgresNotFoundError(RuntimeError):
    """No usable PostgreSQL server binaries on this machine."""


def _has_binaries(bindir: Path) -> bool:
    return all((bindir / name).is_file() for name in REQUIRED_BINARIES)


def find_postgres_bindir(bindir: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding ``initdb``, ``postgres`` and ``pg_isready``.

    Looked for in ``bindir``, ``$ZURAU_POSTGRES_BINDIR``, the newest ``/usr/lib/postgresql/*/bin``
    and ``PATH``, in that order; :class:`PostgresNotFoundError` names what is missing."""
    explicit = bindir if bindir is not None else os.environ.get("ZURAU_POSTGRES_BINDIR")
    if explicit:
        path = Path(explicit)
        if not _has_binaries(path):
            missing = [n for n in REQUIRED_BINARIES if not (path / n).is_file()]
            raise PostgresNotFoundError(f"{path} lacks the PostgreSQL server binaries {', '.join(missing)}")
        return path
    candidates = []
    root = POSTGRES_ROOT
    if root.is_dir():
        versions = [d for d in root.iterdir() if _VERSION_DIR.match(d.name)]
        versions.sort(key=lambda d: tuple(int(p) for p in d.name.split(".")), reverse=True)
        candidates += [d / "bin" for d in versions]
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    for candidate in candidates:
        if _has_binaries(candidate):
            return candidate
    raise PostgresNotFoundError(
        "no PostgreSQL server binaries (initdb, postgres, pg_isready) found in /usr/lib/postgresql/*/bin "
        "or on PATH: install the server (Debian/Ubuntu: apt-get install postgresql) or set "
        "ZURAU_POSTGRES_BINDIR to the directory holding them"
    )


class TemporaryPostgres:
    """A PostgreSQL server in a temporary directory on 127.0.0.1 (see the module docstring).

    ``host``, ``port``, ``user`` and ``dbname`` (``postgres``) are the connection parameters;
    :attr:`dsn` is a libpq connection string and :meth:`connect_kwargs` the same as a dict."""

    start_timeout = 30.0

    def __init__(
        self,
        bindir: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        settings: Mapping[str, str] | None = None,
        base_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.bindir = find_postgres_bindir(bindir)
        self.host = HOST
        self.port = port or free_port()
        self.user = SUPERUSER
        self.dbname = "postgres"
        self.settings = {**DEFAULT_SETTINGS, **(settings or {})}
        self._base_dir = base_dir
        self.directory: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._run_as: pwd.struct_passwd | None = None

    # -- paths -----------------------------------------------------------------------------------
    @property
    def data_dir(self) -> Path:
        assert self.directory is not None, "server not initialised"
        return self.directory / "data"

    @property
    def log_path(self) -> Path:
        assert self.directory is not None, "server not initialised"
        return self.directory / "postgres.log"

    @property
    def dsn(self) -> str:
        return f"host={self.host} port={self.port} user={self.user} dbname={self.dbname}"

    def connect_kwargs(self) -> dict[str, object]:
        return {"host": self.host, "port": self.port, "user": self.user, "dbname": self.dbname}

    @property
    def pid(self) -> int:
        assert self.proc is not None, "server not started"
        return self.proc.pid

    # -- lifecycle -------------------------------------------------------------------------------
    def _uid(self) -> int | None:
        return None if self._run_as is None else self._run_as.pw_uid

    def _gid(self) -> int | None:
        return None if self._run_as is None else self._run_as.pw_gid

    def _extra_groups(self) -> list[int] | None:
        return None if self._run_as is None else []

    def _run_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        env["LANG"] = "C"
        if self._run_as is not None:
            env["HOME"] = self._run_as.pw_dir
        return env

    def initdb(self) -> None:
        """Create the temporary directory and the database cluster in it (once)."""
        if self.directory is not None:
            return
        if os.geteuid() == 0:
            try:
                self._run_as = pwd.getpwnam(SUPERUSER)
            except KeyError:
                raise PostgresNotFoundError(
                    "running as root, and PostgreSQL refuses to: no system user 'postgres' to run it as "
                    "(the server package creates it; or run the tests as an ordinary user)"
                ) from None
        self.directory = Path(tempfile.mkdtemp(prefix="zurau-postgres-", dir=self._base_dir))
        if self._run_as is not None:
            os.chown(self.directory, self._run_as.pw_uid, self._run_as.pw_gid)
        result = subprocess.run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(self.data_dir),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
                "--no-instructions",
            ],
            capture_output=True,
            env=self._run_env(),
            user=self._uid(),
            group=self._gid(),
            extra_groups=self._extra_groups(),
        )
        if result.returncode != 0:
            output = (result.stdout + result.stderr).decode(errors="replace")
            raise RuntimeError(f"initdb failed with {result.returncode}:\n{output}")
        lines = [f"{k} = '{v}'" for k, v in self.settings.items()]
        lines += [
            f"listen_addresses = '{self.host}'",
            f"port = {self.port}",
            f"unix_socket_directories = '{self.directory}'",
        ]
        with open(self.data_dir / "postgresql.auto.conf", "a") as conf:
            conf.write("\n".join(lines) + "\n")

    def start(self) -> Self:
        """Start the server (initialising the directory first if needed); returns once it accepts
        connections."""
        self.initdb()
        assert self.directory is not None
        if self.proc is not None and self.proc.poll() is None:
            return self
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [str(self.bindir / "postgres"), "-D", str(self.data_dir)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._run_env(),
                start_new_session=True,
                user=self._uid(),
            group=self._gid(),
            extra_groups=self._extra_groups(),
            )
        try:
            self._wait_ready()
        except BaseException:
            self.kill()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        assert self.proc is not None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}; {self._log_tail()}")
            ready = subprocess.run(
                [str(self.bindir / "pg_isready"), "-q", "-h", self.host, "-p", str(self.port), "-U", SUPERUSER, "-t", "1"],
                env=self._run_env(),
            )
            if ready.returncode == 0:
                return
            time.sleep(0.1)
        raise TimeoutError(f"postgres did not accept connections within {self.start_timeout}s; {self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            text = ""
        tail = "\n".join(text.splitlines()[-LOG_TAIL_LINES:])
        return f"the end of {self.log_path}:\n{tail}"

    def stop(self, timeout: float = 10.0, *, immediate: bool = False) -> None:
        """Fast shutdown (SIGINT: clients are disconnected, the server checkpoints and exits), or
        with ``immediate`` an immediate one (SIGQUIT: no checkpoint, the next start recovers).

        A fast shutdown waits for logical replication clients to confirm everything sent to
        them; after ``timeout`` seconds it becomes an immediate shutdown, then a SIGKILL of the
        server's process group (its own processes: it runs in a session of its own)."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGQUIT if immediate else signal.SIGINT)
        for escalation in (signal.SIGQUIT, signal.SIGKILL):
            try:
                proc.wait(timeout)
                break
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, escalation)
        self._wait_for_children(proc.pid)

    def kill(self) -> None:
        """``kill -9`` of the server's process group (the postmaster and its backends; the next
        start recovers)."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
            self._wait_for_children(proc.pid)

    @staticmethod
    def _wait_for_children(pgid: int, timeout: float = 10.0) -> None:
        """Until no process of the server's group is left (they hold its shared memory)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)

    def close(self) -> None:
        """Stop the server and delete its directory."""
        self.stop()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["DEFAULT_SETTINGS", "PostgresNotFoundError", "TemporaryPostgres", "find_postgres_bindir"]
