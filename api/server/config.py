"""Settings of ``placement serve``: plain, frozen data with the defaults documented once."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from placement.api.server import tls
from placement.solver import InputError
from placement.solver.limits import SIZE_LIMITS
from placement.solver.schema.v1 import placement_pb2

DEFAULT_LIMITS: dict[str, int] = dict(SIZE_LIMITS)
"""The per-instance size limits a server starts with (``--limit NAME=N`` changes them): the
library's :data:`~placement.solver.limits.SIZE_LIMITS`, which the generators honour too."""


def known_limits() -> tuple[str, ...]:
    """The names ``--limit`` accepts: those of :data:`DEFAULT_LIMITS` and every list of the
    ``placement.v1.Instance`` schema (what the server counts, see ``count_lists``)."""
    names = set(DEFAULT_LIMITS)
    seen: set[str] = set()
    stack = [placement_pb2.Instance.DESCRIPTOR]
    while stack:
        descriptor = stack.pop()
        if descriptor.full_name in seen:
            continue
        seen.add(descriptor.full_name)
        for fd in descriptor.fields:
            if fd.is_repeated:
                names.add(fd.name)
            if fd.message_type is not None:
                stack.append(fd.message_type)
    return tuple(sorted(names))


WORKER_FOOTPRINT_MIB = 200
"""Memory one warm solve worker holds (measured: about 150 MiB RSS once the solver libraries
and every family are loaded; rounded up for the solve's own data)."""
WORKERS_PER_CORE = 8
"""More workers than this per core only share the cores thinner (each solves one request)."""
MAX_QUEUE = 10_000
"""Largest ``--queue``: every queued call holds a gRPC handler thread and its request."""
MAX_MESSAGE_MIB = 2047
"""gRPC's message size limit is a 32-bit signed byte count: at most 2 GiB - 1."""


def memory_available_mib() -> int | None:
    """Memory the machine can still give (``MemAvailable`` of ``/proc/meminfo``; else the
    free physical pages), in MiB; None when it cannot be told."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20
    except (AttributeError, ValueError, OSError):
        return None


def max_workers() -> tuple[int, str]:
    """The most solve workers this machine can hold, and the rule that gives it: at most
    :data:`WORKERS_PER_CORE` per core and one per :data:`WORKER_FOOTPRINT_MIB` MiB of
    available memory (never below 1)."""
    cores = os.cpu_count() or 1
    bound = WORKERS_PER_CORE * cores
    rule = f"{WORKERS_PER_CORE} per core x {cores} cores"
    memory = memory_available_mib()
    if memory is not None:
        bound = min(bound, memory // WORKER_FOOTPRINT_MIB)
        rule += f", and one per {WORKER_FOOTPRINT_MIB} MiB of the {memory} MiB available"
    return max(1, bound), rule


def default_db_path() -> Path:
    """``$XDG_STATE_HOME/placement/jobs.sqlite3`` (``~/.local/state/...`` by default)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(base) / "placement" / "jobs.sqlite3"


@dataclass(frozen=True)
class ServerConfig:
    """How the service runs.

    Attributes
    ----------
    host, port:
        Where to listen. Without TLS the default host is 127.0.0.1 (plaintext is for local
        use); with TLS, 0.0.0.0. Port 0 picks a free port.
    workers:
        Solve worker processes (each solves one request at a time).
    max_queue:
        Requests that may wait for a worker; beyond ``workers + max_queue`` in flight, a
        call gets RESOURCE_EXHAUSTED at once.
    max_pending_jobs:
        Queued asynchronous jobs; SubmitJob beyond it gets RESOURCE_EXHAUSTED.
    default_time_limit_s, max_time_limit_s:
        The solver's limit when neither the request nor a deadline gives one, and the most a
        request may ask for.
    deadline_margin_s, deadline_margin_s_per_mb:
        Kept free before the client's deadline: ``deadline_margin_s`` plus
        ``deadline_margin_s_per_mb`` per MB of the request (a larger instance has a larger
        answer to build, check, encode and send; see :meth:`margin_for` and docs/api.md for
        the measurement), at most 30 % of the time left. The solver stops that much earlier,
        and if the worker has not answered by half of it before the deadline, the call is
        answered with the best incumbent so far.
    grace_s:
        How long a solve may overrun its limit before the watchdog kills its worker.
    shutdown_grace_s:
        At SIGTERM: how long the solves of calls in progress may run on (new calls get
        UNAVAILABLE); then they are stopped and answered with their best checked solution.
    max_message_bytes:
        Largest request or response message.
    limits:
        Per-instance size limits (see :data:`DEFAULT_LIMITS`).
    db_path:
        The job store: an SQLite file (``:memory:`` keeps nothing across restarts) or a
        PostgreSQL URL ``postgresql://USER[:PASSWORD]@HOST:PORT/DB`` that replicas share.
    job_lease_s:
        How long a replica's claim on a job lasts without renewal (it renews every 0.25 s):
        after a replica dies, its jobs run elsewhere this much later.
    retention_s:
        How long finished jobs are kept.
    tls_cert, tls_key, client_ca:
        PEM files: the server certificate and key (TLS); a client CA makes it mutual TLS
        (clients must present a certificate it signed).
    allowed_clients:
        With mutual TLS: the client certificate names (common name or DNS subject
        alternative name) allowed to call; a client with another certificate from the CA is
        authenticated but gets PERMISSION_DENIED. Empty = every certificate the CA signed.
    tokens:
        Accepted bearer tokens (``authorization: Bearer <token>`` metadata); empty = no
        token auth. The health service answers without a token (for load balancer probes).
    metrics_port:
        Serve Prometheus metrics on this port (None = off).
    """

    host: str | None = None
    port: int = 50051
    workers: int = field(default_factory=lambda: max(1, os.cpu_count() or 1))
    max_queue: int = 64
    max_pending_jobs: int = 10_000
    default_time_limit_s: float = 10.0
    max_time_limit_s: float = 3600.0
    deadline_margin_s: float = 0.1
    deadline_margin_s_per_mb: float = 4.0
    grace_s: float = 1.0
    shutdown_grace_s: float = 5.0
    max_message_bytes: int = 64 * 1024 * 1024
    limits: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    db_path: str = field(default_factory=lambda: str(default_db_path()))
    retention_s: float = 7 * 24 * 3600.0
    job_lease_s: float = 10.0
    tls_cert: str | None = None
    tls_key: str | None = None
    client_ca: str | None = None
    tokens: tuple[str, ...] = ()
    allowed_clients: tuple[str, ...] = ()
    metrics_port: int | None = None

    def margin_for(self, request_bytes: int) -> float:
        """Seconds kept free before a deadline for a request of ``request_bytes``."""
        return self.deadline_margin_s + self.deadline_margin_s_per_mb * request_bytes / 1e6

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    @property
    def bind_host(self) -> str:
        if self.host:
            return self.host
        return "0.0.0.0" if self.tls else "127.0.0.1"

    def check_files(self, names: dict[str, str] | None = None) -> None:
        """Read and check the TLS files (see :mod:`placement.api.server.tls`); raises
        InputError naming the setting (``names`` maps ``tls_cert``, ``tls_key`` and
        ``client_ca`` to what to call them, e.g. the command-line options)."""
        names = names or {}
        tls.read_key_pair(
            names.get("tls_cert", "tls_cert"),
            self.tls_cert,
            names.get("tls_key", "tls_key"),
            self.tls_key,
        )
        if self.client_ca is not None:
            tls.read_ca(names.get("client_ca", "client_ca"), self.client_ca)

    def validate(self, names: dict[str, str] | None = None) -> list[str]:
        """Problems with the settings, one line each (empty when fine); ``names`` maps a
        setting to what to call it, e.g. its command-line option (as in :meth:`check_files`)."""
        names = names or {}

        def name(setting: str) -> str:
            return names.get(setting, setting)

        problems = []
        most, rule = max_workers()
        if not 1 <= self.workers <= most:
            problems.append(
                f"{name('workers')}: got {self.workers}, expected 1..{most} on this machine "
                f"({rule})"
            )
        if not 0 <= self.max_queue <= MAX_QUEUE:
            problems.append(
                f"{name('max_queue')}: got {self.max_queue}, expected 0..{MAX_QUEUE} (each "
                "queued call holds a handler thread and its request)"
            )
        mib = self.max_message_bytes / 2**20
        memory = memory_available_mib()
        top = MAX_MESSAGE_MIB if memory is None else max(1, min(MAX_MESSAGE_MIB, memory))
        if not 0 < mib <= top:
            why = "gRPC's limit is 2 GiB - 1 bytes"
            if memory is not None:
                why += f", and no more than the {memory} MiB of memory available"
            problems.append(f"{name('max_message_mib')}: got {mib:g}, expected 1..{top} ({why})")
        if not 0 <= self.port <= 65535:
            problems.append(f"{name('port')}: got {self.port}, expected 0..65535")
        try:
            self.check_files()
        except InputError as exc:
            problems.append(str(exc))
        if self.allowed_clients and not self.client_ca:
            problems.append(f"{name('allowed_clients')}: needs mutual TLS ({name('client_ca')})")
        if self.client_ca and not self.tls:
            problems.append(
                f"{name('client_ca')}: mutual TLS needs {name('tls_cert')} and {name('tls_key')} too"
            )
        if self.job_lease_s < 1.0:
            problems.append(f"{name('job_lease_s')}: got {self.job_lease_s}, expected at least 1 s")
        if not 0 < self.default_time_limit_s <= self.max_time_limit_s:
            problems.append(
                f"{name('default_time_limit_s')}: got {self.default_time_limit_s}, expected in "
                f"(0, {name('max_time_limit_s')}={self.max_time_limit_s}]"
            )
        return problems
