"""How large an instance may be: the per-instance list sizes that every entry point holds to.

The service refuses a request whose lists are longer (``placement serve --limit`` may change
its copy), and the generators refuse sizes that would make such an instance, before building
anything, so that nothing the project writes is refused by the project on the way back in.
"""

from __future__ import annotations

from placement.solver.errors import InputError

__all__ = ["SIZE_LIMITS", "check_count", "size_limit"]

SIZE_LIMITS: dict[str, int] = {
    "jobs": 100_000,
    "nodes": 100_000,
    "gpus": 1_000_000,
    "tasks": 100_000,
    "items": 1_000_000,
}
"""Per-instance size limits: a list named like a key (``jobs``, ``nodes``, ``tasks``, ...)
may hold at most that many entries; ``gpus`` limits a family's GPU count; ``items`` applies
to every other list."""


def size_limit(name: str) -> int:
    """The most entries a list called ``name`` may hold (``items`` for lists not named)."""
    return SIZE_LIMITS.get(name, SIZE_LIMITS["items"])


def check_count(field: str, value: object, low: int, high: int) -> None:
    """Refuse ``value`` unless it is an integer from ``low`` to ``high`` (an
    :class:`~placement.solver.errors.InputError` naming ``field``)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError.single(field, value, f"an integer from {low} to {high}")
