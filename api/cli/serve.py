"""``placement serve``: the gRPC service."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from placement.api.cli.exits import EXIT_USAGE, ExitWith, err
from placement.solver import InputError

OPTION_NAMES = {
    "tls_cert": "--tls-cert",
    "tls_key": "--tls-key",
    "client_ca": "--client-ca",
    "allowed_clients": "--allow-client",
    "workers": "--workers",
    "max_queue": "--queue",
    "max_message_mib": "--max-message-mib",
    "port": "--port",
    "job_lease_s": "--lease-seconds",
    "default_time_limit_s": "--default-time-limit",
    "max_time_limit_s": "--max-time-limit",
}
"""What errors about the settings call them: the options."""


def cmd_serve(args: argparse.Namespace) -> int:
    """``placement serve``."""
    # The server (grpc, pebble, prometheus) only for this command: start-up time of the others.
    from placement.api.server import tls
    from placement.api.server.app import serve
    from placement.api.server.config import (
        DEFAULT_LIMITS,
        ServerConfig,
        default_db_path,
        known_limits,
    )

    tokens: tuple[str, ...] = ()
    if args.token_file:
        tokens = tls.read_token_lines("--token-file", args.token_file)
    known = known_limits()
    for name, _ in args.limit:
        if name not in known:
            raise InputError.single("--limit", name, f"one of the known limits: {', '.join(known)}")
    limits = dict(DEFAULT_LIMITS)
    limits.update(dict(args.limit))
    config = ServerConfig(
        host=args.host,
        port=args.port,
        workers=args.workers or max(1, os.cpu_count() or 1),
        max_queue=args.queue,
        default_time_limit_s=args.default_time_limit,
        max_time_limit_s=args.max_time_limit,
        grace_s=args.grace,
        shutdown_grace_s=args.shutdown_grace,
        max_message_bytes=args.max_message_mib * 1024 * 1024,
        limits=limits,
        db_path=args.db or str(default_db_path()),
        retention_s=args.retention,
        job_lease_s=args.lease_seconds,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        client_ca=args.client_ca,
        allowed_clients=tuple(args.allow_client),
        tokens=tokens,
        metrics_port=args.metrics_port,
    )
    config.check_files(OPTION_NAMES)  # named after the options, before anything starts
    problems = config.validate(OPTION_NAMES)
    if problems:
        err(f"error: {problems[0]}" + (f" (and {len(problems) - 1} more)" if problems[1:] else ""))
        raise ExitWith(EXIT_USAGE)
    _configure_server_logging()
    from placement.api.server.jobs import JobStoreError  # as above
    from placement.api.server.store import redact_url

    try:
        return serve(config)
    except JobStoreError as exc:
        # The URL's password never reaches a log line or the terminal.
        shown = redact_url(config.db_path) if "://" in config.db_path else config.db_path
        raise InputError.single("--db", shown, f"a usable job database ({exc})") from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise InputError.single(
            "--port", f"{config.bind_host}:{config.port}", f"an address to listen on ({reason})"
        ) from None


def _configure_server_logging() -> None:
    """Access log: JSON lines on stderr; other messages as ``placement: level: ...``."""
    access = logging.getLogger("placement.access")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    access.handlers[:] = [handler]
    access.setLevel(logging.INFO)
    access.propagate = False
