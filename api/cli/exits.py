"""Exit codes and the one-line messages of the command line.

A user error (missing file, malformed JSON, a bad value, a bad option) is one line on stderr
naming the file and the JSON path of the bad field, and exit code 2; never a traceback.
"""

from __future__ import annotations

import sys

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
"""SIGTERM (128 + 15, what a shell reports for it); the solution or CSV is still written."""


def exit_for_signal(signum: int) -> int:
    """The exit code of a run stopped by ``signum``: 128 + its number, as a shell reports a
    process killed by it (SIGINT 130, SIGTERM 143, SIGHUP 129), though the run stopped
    cleanly and wrote what it had."""
    return 128 + int(signum)


EXIT_CODES = """\
exit codes:
  0    success: solve found a checked solution or proved infeasibility; check found the
       solution feasible; batch solved every file; generate wrote the file
  1    solve found no solution; check found violations; batch had a failing file
  2    user error: missing file, malformed JSON, bad value, bad option, an output that
       cannot be written (full, read-only) (one line on stderr:
       "placement: error: FILE: json.path: got VALUE, expected WHAT")
  3    internal error (set PLACEMENT_DEBUG=1 to see the traceback)
  130  interrupted by Ctrl-C (solve still prints and writes the best solution it found;
       batch writes its CSV, rows not solved marked skipped)
  143  stopped by SIGTERM (129: SIGHUP): as Ctrl-C, the best solution or the CSV written
"""

DEBUG_ENV = "PLACEMENT_DEBUG"
"""Set to a non-empty value to print the traceback of an internal error."""


class ExitWith(Exception):
    """Leave with an exit code (the message was already printed)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def err(line: str) -> None:
    """One line on stderr, prefixed like every message of the tool."""
    print(f"placement: {line}", file=sys.stderr, flush=True)
