"""The entry point ``placement`` runs: parse, dispatch to the command, map errors to exit codes."""

from __future__ import annotations

import errno
import logging
import os
import signal
import sys
import traceback
from collections.abc import Sequence

from placement.api.cli.exits import (
    DEBUG_ENV,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    ExitWith,
    err,
    exit_for_signal,
)
from placement.api.cli.parser import build_parser
from placement.api.interrupt import Stopped
from placement.solver import InputError

_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})
"""Errors of writing an output that are the machine's, not the program's: the output is full,
read-only or failing (exit 2, one line naming it)."""


class _LineFormatter(logging.Formatter):
    """Log records as ``placement: warning: ...`` lines, like the tool's other messages."""

    def format(self, record: logging.LogRecord) -> str:
        return f"placement: {record.levelname.lower()}: {record.getMessage()}"


def _configure_logging(quiet: bool) -> None:
    """Library warnings (e.g. a failed backend) as one line each; none when quiet.

    What they say is also in the result's ``message``, so --quiet and --json lose nothing.
    """
    logger = logging.getLogger("placement")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LineFormatter())
    logger.handlers[:] = [handler]
    logger.propagate = False
    if os.environ.get(DEBUG_ENV):
        logger.setLevel(logging.DEBUG)
    else:
        logger.setLevel(logging.ERROR if quiet else logging.WARNING)


def _command(argv: Sequence[str] | None) -> str:
    """The command word of ``argv`` (its first word that is not an option), or ``""``."""
    words = sys.argv[1:] if argv is None else argv
    return next((w for w in words if not w.startswith("-")), "")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    Parameters
    ----------
    argv:
        Arguments without the program name; ``sys.argv[1:]`` when None.
    """
    try:
        args = build_parser(_command(argv)).parse_args(argv)
        _configure_logging(getattr(args, "quiet", False) or getattr(args, "json", False))
        code = int(args.handler(args))
        sys.stdout.flush()  # a full or failing standard output is reported here, not at exit
        return code
    except InputError as exc:
        err(f"error: {exc}")
        return EXIT_USAGE
    except ExitWith as exc:
        return exc.code
    except Stopped as exc:
        err(f"stopped by {signal.Signals(exc.signum).name}")
        return exit_for_signal(exc.signum)
    except KeyboardInterrupt:
        err("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): silence the flush at exit, as the docs advise.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
    except OSError as exc:
        if exc.errno not in _WRITE_ERRNOS:
            return _internal(exc)
        where = exc.filename or "standard output"
        err(f"error: {where}: could not write ({os.strerror(exc.errno)})")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, exit 3
        return _internal(exc)


def _internal(exc: BaseException) -> int:
    """Report an unexpected error in one line (the traceback with PLACEMENT_DEBUG)."""
    err(f"internal error: {type(exc).__name__}: {exc}")
    if os.environ.get(DEBUG_ENV):
        traceback.print_exception(exc)
    else:
        err(f"(set {DEBUG_ENV}=1 to see the traceback; please report it)")
    return EXIT_INTERNAL
