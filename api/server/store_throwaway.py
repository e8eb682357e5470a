"""A throw-away PostgreSQL cluster on loopback, for the tests and benchmarks of the shared job
store: ``initdb`` and ``pg_ctl`` from the distribution's package (Debian:
``/usr/lib/postgresql/<version>/bin``), run as the unprivileged ``postgres`` user when we are
root (``initdb`` refuses root), listening on 127.0.0.1 at a free port and on a unix socket
in its own directory. Nothing of it outlives :meth:`ThrowawayPostgres.remove`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

SUPERUSER = "placement"
"""The cluster's superuser (trust authentication on loopback)."""


def find_binaries() -> Path | None:
    """The newest PostgreSQL ``bin`` folder with ``initdb`` and ``pg_ctl`` (None if absent)."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
    )
    for initdb in reversed(found):
        folder = Path(initdb).parent
        if (folder / "pg_ctl").exists():
            return folder
    return None


def free_port() -> int:
    """A TCP port free on 127.0.0.1 at this moment."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThrowawayPostgres:
    """One cluster: ``start()``, ``stop()`` (and ``start()`` again: the data stays),
    ``remove()``. ``durable=False`` turns off fsync (tests); benchmarks keep it on."""

    def __init__(self, durable: bool = False, binaries: Path | None = None):
        self.bin = binaries or find_binaries()
        if self.bin is None:
            raise RuntimeError("PostgreSQL binaries not found under /usr/lib/postgresql/*/bin")
        self.durable = durable
        self.dir = Path(tempfile.mkdtemp(prefix="placement-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.port = free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            # initdb refuses to run as root: the package's postgres user owns the cluster.
            user = pwd.getpwnam("postgres")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        os.chmod(self.dir, 0o755)
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "-A", "trust",
            "--no-sync", "-E", "UTF8", "--locale", "C",
        )  # fmt: skip

    def _run(self, *cmd: str) -> None:
        proc = subprocess.run(
            [*self._as, *cmd], capture_output=True, text=True, timeout=120, cwd=self.dir
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{Path(cmd[0]).name} failed: {proc.stderr.strip()[-2000:]}")

    @property
    def url(self) -> str:
        """The URL of its ``postgres`` database."""
        return self.url_of("postgres")

    def url_of(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200"
            + ("" if self.durable else " -c fsync=off -c synchronous_commit=off")
        )
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options,
                  "-l", str(self.log), "-w", "-t", "60", "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: connections are cut, like a database outage)."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def new_database(self) -> str:
        """Create an empty database; returns its URL."""
        # psycopg only here: the throw-away cluster is for tests and benchmarks.
        import psycopg

        name = f"placement_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url_of(name)

    def remove(self) -> None:
        """Stop the server if it runs and delete the cluster."""
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)


def new_database(server_url: str) -> str:
    """Create an empty database on the server of ``server_url`` (a superuser's URL); returns
    the URL of the new database."""
    import psycopg  # as in ThrowawayPostgres.new_database

    name = f"placement_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = server_url.partition("?")
    head, _, _ = base.rpartition("/")
    return f"{head}/{name}"
