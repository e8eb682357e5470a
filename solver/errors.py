"""Errors a user can act on.

Every rejection of user input is an :class:`InputError` that names the file (when there is
one), the JSON path of the bad field, the bad value and what was expected. The command line
prints it as one line and exits with code 2; the gRPC service maps it to INVALID_ARGUMENT.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any


class Shown(str):
    """A value shown as it is in a message (a description such as ``a JSON list``), not
    quoted like the user's own text."""

    __slots__ = ()


def show_value(value: Any) -> str:
    """The bad value as a message shows it: quoted text, numbers as written, JSON names."""
    if isinstance(value, Shown):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or abs(value) >= 1e7:
            return f"{value:.6g}"
        return repr(value)
    if isinstance(value, int) and abs(value) >= 10**12:
        digits = str(abs(value))
        sign = "-" if value < 0 else ""
        rest = digits[1:6].rstrip("0")
        return f"{sign}{digits[0]}{'.' + rest if rest else ''}e{len(digits) - 1}"
    return repr(value)


SHOWN_CHARS = 240
"""The most characters of a bad value an error quotes: room for a file path in full (the
user must see where the tool looked), not for a whole list."""


@dataclass
class FieldError:
    """One bad field: where it is, what it holds, and what was expected."""

    path: str
    value: Any
    expected: str

    def __str__(self) -> str:
        shown = show_value(self.value)
        if len(shown) > SHOWN_CHARS:  # a huge value (a list, a blob) stays one readable line
            shown = shown[: SHOWN_CHARS - 3] + "..."
        if not self.path:
            return f"got {shown}, expected {self.expected}"
        return f"{self.path}: got {shown}, expected {self.expected}"


@dataclass
class InputError(Exception):
    """Bad user input. ``errors`` lists every bad field found (at least one)."""

    errors: list[FieldError]
    file: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def single(cls, path: str, value: Any, expected: str, file: str | None = None) -> InputError:
        """An error about one field."""
        return cls([FieldError(path, value, expected)], file=file)

    def with_file(self, file: str) -> InputError:
        """The same error, naming the file it came from."""
        self.file = file
        return self

    def __str__(self) -> str:
        prefix = f"{self.file}: " if self.file else ""
        first = str(self.errors[0])
        more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
        return prefix + first + more


class ValidationCollector:
    """Collects field errors while validating, then raises them together."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def add(self, path: str, value: Any, expected: str) -> None:
        """Record one bad field (a path already reported keeps its first error: the declared
        range of a field is checked first, the family's finer rules after it)."""
        if any(e.path == path for e in self.errors):
            return
        self.errors.append(FieldError(path, value, expected))

    def require(self, ok: bool, path: str, value: Any, expected: str) -> bool:
        """Record a bad field unless ``ok``; return ``ok``."""
        if not ok:
            self.add(path, value, expected)
        return ok

    def unique_name(self, path: str, name: str, seen: Container[str], noun: str) -> bool:
        """Record a bad ``path`` unless ``name`` is non-empty (``a non-empty <noun> name``) and
        not in ``seen``, the names so far (``a <noun> name used once``); return whether it
        is both. The caller adds it to ``seen``."""
        return self.require(bool(name), path, name, f"a non-empty {noun} name") and self.require(
            name not in seen, path, name, f"a {noun} name used once"
        )

    def raise_if_any(self) -> None:
        """Raise an :class:`InputError` listing every recorded field error."""
        if self.errors:
            raise InputError(list(self.errors))
