"""The ``placement`` command line: solve, check, batch, generate, import, plot, bench and serve.

Every command reads and writes the proto3 JSON form of the placement/v1 schema. A user error
(missing file, malformed JSON, a bad value, a bad option) is one line on stderr naming the
file and the JSON path of the bad field, and exit code 2; never a traceback. See
``docs/cli.md``.

:mod:`.parser` builds the parser; one module per command group does the work (:mod:`.solve`
for solve and check, :mod:`.batch`, :mod:`.bench`, :mod:`.files` for generate, import and
plot, :mod:`.serve`); :mod:`.summary` prints results for people, :mod:`.exits` holds the exit
codes, :mod:`.entry` the entry point :func:`main` (the ``placement`` console script).
"""

from placement.api.cli.entry import main

__all__ = ["main"]
