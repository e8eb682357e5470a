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

EXIT_CODES = """\
exit codes:
  0    success: solve found a checked solution or proved infeasibility; check found the
       solution feasible; batch solved every file; generate wrote the file
  1    solve found no solution; check found violations; batch had a failing file
  2    user error: missing file, malformed JSON, bad value, bad option, an output that
       cannot be written (full, read-only) (one line on stderr:
       "placement: error: FILE: json.path: got VALUE, expected WHAT")
  3    internal error (set PLACEMENT_DEBUG=1 to see the traceback)
  130  interrupted by Ctrl-C (solve still prints and writes the best solution it found)
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
