"""Errors a user can act on.

Every rejection of user input is an :class:`InputError` that names the file (when there is
one), the JSON path of the bad field, the bad value and what was expected. The command line
prints it as one line and exits with code 2; the gRPC service maps it to INVALID_ARGUMENT.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class FieldError:
    """One bad field: where it is, what it holds, and what was expected."""

    path: str
    value: Any
    expected: str

    def __str__(self) -> str:
        shown = repr(self.value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
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
        """Record one bad field."""
        self.errors.append(FieldError(path, value, expected))

    def require(self, ok: bool, path: str, value: Any, expected: str) -> bool:
        """Record a bad field unless ``ok``; return ``ok``."""
        if not ok:
            self.add(path, value, expected)
        return ok

    def raise_if_any(self) -> None:
        """Raise an :class:`InputError` listing every recorded field error."""
        if self.errors:
            raise InputError(list(self.errors))
