"""Numbers and lists of names written for people: one style for the command line's summaries
and the families' summary rows."""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["NAMES_PER_ROW", "fmt_num", "names_or_more", "natural_key"]

NAMES_PER_ROW = 8
"""Names listed on one row of a summary at most."""


def fmt_num(value: float | int | None) -> str:
    """A number for people: integers without ``.0``, others with up to 6 decimals."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer():
            return str(int(value))
        if abs(value) < 1e-4:
            return f"{value:.3g}"
        return f"{value:.6f}".rstrip("0").rstrip(".")
    return str(value)


def natural_key(name: str) -> list[Any]:
    """A sort key putting ``p2`` before ``p10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def names_or_more(names: list[str], limit: int = NAMES_PER_ROW) -> str:
    """``a, b, c`` or ``a, b, ... N more``."""
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", ... {len(names) - limit} more"
