"""argparse value types of the command line: each rejects a bad value with
"got VALUE, expected WHAT", which the CLI prints as a one-line usage error (exit 2)."""

from __future__ import annotations

import argparse
import math


def int_at_least(text: str, low: int) -> int:
    """An integer >= ``low``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected an integer >= {low}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"got {value}, expected an integer >= {low}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    return int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    return int_at_least(text, 0)


def _number(text: str, expected: str, ok: object) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected {expected}") from None
    if not (math.isfinite(value) and ok(value)):  # type: ignore[operator]
        raise argparse.ArgumentTypeError(f"got {text!r}, expected {expected}")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds > 0."""
    return _number(text, "a finite number of seconds > 0", lambda v: v > 0)


def fraction(text: str) -> float:
    """A number in [0, 1]."""
    return _number(text, "a number in [0, 1]", lambda v: 0 <= v <= 1)


def relative_gap(text: str) -> float:
    """A number in [0, 1)."""
    return _number(text, "a number in [0, 1)", lambda v: 0 <= v < 1)


def name_list(text: str) -> tuple[str, ...]:
    """Comma-separated non-empty names."""
    names = tuple(part.strip() for part in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(f"got {text!r}, expected names separated by commas")
    return names


def port(text: str) -> int:
    """A TCP port, 0..65535 (0 = any free port)."""
    value = int_at_least(text, 0)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"got {value}, expected a port in 0..65535")
    return value


def limit_setting(text: str) -> tuple[str, int]:
    """``NAME=N``: a per-instance size limit."""
    name, sep, number = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"got {text!r}, expected NAME=N, e.g. jobs=50000")
    return name.strip(), int_at_least(number, 1)
