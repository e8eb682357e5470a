"""Markdown tables of the benchmark reports, written one way.

``markdown_table(header, rows)`` writes a whole table; ``rule(columns)`` the separator line under a
header a report writes itself (``rule(5)``: five left-aligned columns; ``rule("rrl")``: two
right-aligned then one left-aligned column), so no report counts ``---|`` by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def rule(columns: int | str) -> str:
    """The separator line of a table of ``columns`` columns: a count (all left-aligned), or
    one letter per column, ``l`` (left) or ``r`` (right)."""
    if isinstance(columns, int):
        columns = "l" * columns
    cells = {"l": "---", "r": "---:"}
    return "|" + "|".join(cells[c] for c in columns) + "|"


def markdown_table(
    header: Sequence[str], rows: Iterable[Sequence[Any]], align: str = ""
) -> list[str]:
    """A Markdown table: the header line, the rule, one line per row (cells as ``str``)."""
    lines = ["| " + " | ".join(header) + " |", rule(align or len(header))]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines
