"""placement: exact and heuristic placement solvers as a Python library.

Nine problem families (``gpu``, ``dag``, ``partition``, ``entanglement``, ``mc``,
``dispatch``, ``sharding``, ``fl``, ``serving``) behind one engine:
a greedy fallback, an independent checker, an exact backend (CP-SAT or a MILP) and the best
checked solution with its bound. The three functions here are the short way in::

    import placement

    result = placement.solve("instances/gpu/tiny.json", time_limit_s=5)
    print(result)                       # status, objective, bound, gap, stop reason, time
    report = placement.check(result.instance, result.solution)

:func:`load` reads an instance (a file path, JSON text, a dict or a typed instance),
:func:`solve` solves it, :func:`check` runs the family's independent checker. The engine is
:mod:`placement.solver`, the families are ``placement.models.<family>``, files and the CLI
are in :mod:`placement.api`; docs/library.md walks through each family.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields as dataclass_fields
from dataclasses import replace
from pathlib import Path
from typing import Any

from placement.solver.errors import InputError, Shown
from placement.solver.family import (
    CheckReport,
    family_of,
    get_family,
    instance_from_document,
    start_envelope,
    validate,
)
from placement.solver.jsonform import (
    check_file_kind,
    json_type_name,
    load_json,
    parse_json_text,
    solution_message,
    start_message,
)
from placement.solver.options import SolveOptions
from placement.solver.portfolio import solve as _solve
from placement.solver.result import Result


def _version() -> str:
    # Local: importlib.metadata costs ~50 ms at start-up; only __version__ needs it.
    from importlib import metadata

    try:
        return metadata.version("placement-solver")
    except metadata.PackageNotFoundError:  # a checkout on sys.path, not installed
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        try:
            import tomllib  # local: only needed in an uninstalled checkout

            return tomllib.loads(pyproject.read_text())["project"]["version"]
        except (OSError, KeyError, ValueError):
            return "0+unknown"


def __getattr__(name: str) -> Any:
    """``__version__``, computed on first use (the installed distribution's version)."""
    if name == "__version__":
        version = _version()
        globals()["__version__"] = version
        return version
    raise AttributeError(f"module 'placement' has no attribute {name!r}")


__all__ = ["InputError", "Result", "SolveOptions", "__version__", "check", "load", "solve"]


def _document(source: Any, what: str) -> tuple[dict[str, Any], str | None]:
    """The JSON document of ``source`` (a path, JSON text or a dict), and its file name."""
    if isinstance(source, dict):
        return source, None
    if isinstance(source, str) and not source.strip():
        raise InputError.single(
            "", Shown("an empty string"), f"{what}: a file path, JSON text or a dict"
        )
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and not source.lstrip().startswith(("{", "["))
    ):
        return load_json(source), os.fspath(source)
    if isinstance(source, str):
        return parse_json_text(source), None
    plain = source is None or isinstance(source, int | float | list)
    shown = (
        json_type_name(source) if plain else Shown(f"an object of class {type(source).__name__}")
    )
    raise InputError.single(
        "", shown, f"{what}: a file path, JSON text, a dict or a typed {what.split()[-1]}"
    )


def load(source: Any) -> Any:
    """The validated typed instance of ``source``.

    Parameters
    ----------
    source:
        A path to an instance file (``str`` or ``os.PathLike``), the JSON text of one, its
        content as a dict (``{"name": ..., "gpu": {...}}``), or a typed instance built in code
        (validated with the rules files meet, and returned).

    Raises
    ------
    InputError
        Naming the file (if any), the field path and what was expected.
    """
    if hasattr(source, "family_name"):
        validate(source)
        return source
    document, file = _document(source, "an instance")
    try:
        check_file_kind(document, "instance")
        return instance_from_document(document)
    except InputError as exc:
        raise (exc.with_file(file) if file else exc) from None


def solve(
    source: Any, options: SolveOptions | None = None, *, start: Any = None, **option_fields: Any
) -> Result:
    """Solve an instance (anything :func:`load` takes) and return the :class:`Result`.

    ``options`` and keyword fields of :class:`SolveOptions` combine:
    ``solve("cluster.json", time_limit_s=5, backend="cpsat")``. The result carries the
    instance, so ``result.named`` reads the solution by name and ``result.to_dict()``
    includes the solution's JSON form.

    ``start`` warm-starts the solve: an earlier :class:`Result` (of this or a slightly
    different instance), a solution file (path, JSON text or dict; the ``--json`` output of
    ``placement solve`` too) or a ``placement.v1.Solution`` message. What the instance still
    admits of it, by name, is the first incumbent; ``result.warm_start`` says what was kept.
    """
    instance = load(source)
    opts = _options(options, option_fields)
    if start is None:
        return _solve(instance, opts)
    return _solve(instance, opts, start=_start_message(start))


def _options(options: Any, fields: dict[str, Any]) -> SolveOptions:
    """``options`` (a :class:`SolveOptions`, a dict of its fields or None) with ``fields``."""
    known = {f.name for f in dataclass_fields(SolveOptions)}
    if options is None:
        options = SolveOptions()
    elif isinstance(options, Mapping):
        fields = {**options, **fields}
        options = SolveOptions()
    elif not isinstance(options, SolveOptions):
        shown = Shown(f"an object of class {type(options).__name__}")
        raise InputError.single("options", shown, "a SolveOptions or a dict of its fields")
    unknown = sorted(str(k) for k in fields if k not in known)
    if unknown:
        raise InputError.single(
            unknown[0], Shown("an unknown option"), "one of " + ", ".join(sorted(known))
        )
    return replace(options, **fields)


def _start_message(start: Any) -> Any:
    """The ``placement.v1.Solution`` of a warm start given as :func:`solve` takes it."""
    if isinstance(start, str | os.PathLike):
        document, file = _document(start, "a solution")
        try:
            return start_message(document)
        except InputError as exc:
            raise (exc.with_file(file) if file else exc) from None
    return start_envelope(start)


def check(instance: Any, solution: Any) -> CheckReport:
    """The family's independent check of ``solution`` for ``instance``.

    ``instance`` is anything :func:`load` takes; ``solution`` is a typed solution, or a
    solution file (path, JSON text or dict) whose names are resolved against the instance.
    """
    inst = load(instance)
    family = family_of(inst)
    if not hasattr(solution, "__dataclass_fields__") or isinstance(solution, dict):
        document, file = _document(solution, "a solution")
        try:
            msg = solution_message(document)
            key = msg.WhichOneof("family")
            if key != family.name:
                raise InputError.single(
                    key or "", key, f"a {family.name!r} section, the family of the instance"
                )
            solution = family.solution_from_message(inst, getattr(msg, key))
        except InputError as exc:
            raise (exc.with_file(file) if file else exc) from None
    return get_family(family.name).check(inst, solution)
