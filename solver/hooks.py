"""What a family declares for the command line, as data: :class:`Parameter`,
:class:`Generator` (``placement generate <family>``), :class:`Importer` (``placement
import <format>``) and :class:`Exporter` (``placement export <format>``).

A family lists them in its object's ``generators``, ``importers`` and ``exporters``; the command line spells
the flags from the parameters' names and types, and writes the command that reproduces a
generated file from the same declarations, so no family spells a flag itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

PARAMETER_TYPES = (
    "str",
    "path",
    "int",
    "seed",
    "positive_int",
    "non_negative_int",
    "float",
    "non_negative_float",
    "positive_float",
    "fraction",
    "probability",
    "fraction_pair",
    "name_list",
    "path_count",
    "flag",
)
"""The value types a :class:`Parameter` may have (every integer within 32 bits): ``int``,
``seed`` >= 0 (a generator's), ``positive_int`` >= 1, ``non_negative_int`` >= 0, ``float`` finite, ``non_negative_float`` finite >= 0, ``positive_float`` finite > 0, ``fraction`` in [0, 1], ``probability`` in (0, 1],
``fraction_pair`` ``F`` or ``LOW,HIGH`` in [0, 1] (a tuple), ``name_list`` ``A,B,...`` (a tuple),
``path_count`` ``FILE:N`` with N >= 1 (a tuple), ``flag`` a switch (a bool). The command line
maps each name to its converter (:mod:`placement.api.argtypes`)."""


@dataclass(frozen=True)
class Parameter:
    """One input of a :class:`Generator` or an :class:`Importer`.

    Attributes
    ----------
    name:
        The Python name, the key of ``build``'s dict; the option is ``--name`` with ``_`` as
        ``-`` (``fan_out`` -> ``--fan-out``), or the positional argument itself.
    type:
        One of :data:`PARAMETER_TYPES`.
    default:
        The value when not given (ignored for ``required`` and positional parameters).
    required:
        The option must be given.
    help, metavar, choices:
        As in ``--help`` (``metavar`` None: the upper-cased name).
    positional:
        An argument without a flag (an input file, say).
    repeated:
        May be given several times; the value is the list of them.
    shown:
        Always written in the command that makes the instance again (sizes, seed, the
        shape); other options only when they differ from their default.
    maximum:
        The largest value of an integer parameter (a count): what the family's own limits
        (:mod:`placement.solver.limits`, its validation, its memory) can take; larger values
        are refused before anything is built.
    """

    name: str
    type: str = "str"
    default: Any = None
    required: bool = False
    help: str = ""
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    positional: bool = False
    repeated: bool = False
    shown: bool = False
    maximum: int | None = None

    def __post_init__(self) -> None:
        if self.type not in PARAMETER_TYPES:
            raise ValueError(
                f"parameter {self.name!r}: type {self.type!r} not in {PARAMETER_TYPES}"
            )

    @property
    def flag(self) -> str:
        """``--fan-out`` for ``fan_out``."""
        return "--" + self.name.replace("_", "-")

    def words(self, value: Any) -> list[str]:
        """The command-line words that give ``value`` (none for an unset flag or None)."""
        if value is None or value is False:
            return []
        if self.type == "flag":
            return [self.flag]
        values = value if self.repeated else [value]
        out: list[str] = []
        for v in values:
            text = _format_value(v, self.type)
            out += [text] if self.positional else [self.flag, text]
        return out

    def always_in_command(self) -> bool:
        """Whether the reproduce command names this parameter whatever its value."""
        return self.positional or self.required or self.shown


def _format_value(value: Any, kind: str = "") -> str:
    """A value of a parameter of type ``kind`` as typed on the command line: floats as short
    as exact (``6``, ``0.93``), lists and pairs joined by commas, ``FILE:N`` for a path count."""
    if kind == "path_count":
        return f"{value[0]}:{value[1]}"
    if kind in ("name_list", "fraction_pair"):
        return ",".join(_format_value(v) for v in value)
    if isinstance(value, float):
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    return str(value)


def command_words(
    parameters: Iterable[Parameter], values: dict[str, Any], names: Iterable[str] | None = None
) -> list[str]:
    """The command-line words of the parameters called ``names`` (all when None), in
    declaration order."""
    wanted = None if names is None else set(names)
    words: list[str] = []
    for p in parameters:
        if wanted is None or p.name in wanted:
            words += p.words(values.get(p.name, p.default))
    return words


def reproduce_command(
    words: Iterable[str], parameters: tuple[Parameter, ...], values: dict[str, Any]
) -> str:
    """The command that makes an instance again: ``words`` (``placement generate gpu``), the
    parameters that define it (positional, required, ``shown``), ``--out`` (``FILE`` when
    none), then every other option that differs from its default. Only the parameters in
    ``values`` are named (a generator leaves out those its variant does not read)."""
    given = [p for p in parameters if p.name in values]
    always = [p.name for p in given if p.always_in_command()]
    changed = [p.name for p in given if not p.always_in_command() and values[p.name] != p.default]
    return " ".join(
        [
            *words,
            *command_words(parameters, values, always),
            "--out",
            str(values.get("out") or "FILE"),
            *command_words(parameters, values, changed),
        ]
    )


SEED = Parameter(
    "seed",
    "seed",
    0,
    metavar="S",
    shown=True,
    help="random seed; the same seed and sizes give the same file (default: 0)",
)
"""The ``--seed`` every generator takes (generators depend on no other randomness)."""


@dataclass(frozen=True)
class Generator:
    """``placement generate <family>``: seeded synthetic instances of a family.

    ``build(params)`` gets every parameter's value by name, plus ``out`` (the file the
    instance goes to, None for standard output), and returns the typed instance with its
    ``name`` and ``description`` set; it may raise
    :class:`~placement.solver.errors.InputError`. The family keeps ``GENERATORS`` in
    ``models/<family>/generate.py``.
    """

    family: str
    help: str
    description: str
    parameters: tuple[Parameter, ...]
    build: Callable[[dict[str, Any]], Any]

    def command(self, values: dict[str, Any]) -> str:
        """``placement generate <family> ...``: see :func:`reproduce_command`."""
        return reproduce_command(("placement", "generate", self.family), self.parameters, values)


@dataclass(frozen=True)
class Importer:
    """``placement import <format>``: a public file format read into an instance of a family.

    ``build(params)`` gets the parameters by name (input paths among them) plus ``out``, reads
    the files and returns the typed instance; it raises
    :class:`~placement.solver.errors.InputError` naming the file, line or field and the
    expected value on a malformed input. The family keeps ``IMPORTERS`` in the module of its
    loader.
    """

    format: str
    family: str
    help: str
    description: str
    parameters: tuple[Parameter, ...]
    build: Callable[[dict[str, Any]], Any]

    def command(self, values: dict[str, Any]) -> str:
        """``placement import <format> ...``: see :func:`reproduce_command`."""
        return reproduce_command(("placement", "import", self.format), self.parameters, values)


@dataclass(frozen=True)
class Exporter:
    """``placement export <format>``: a checked solution written as another system's objects.

    The command line reads the instance and the solution files, refuses a solution the
    family's checker rejects, and calls ``build(instance, solution, params)`` with the
    parameters by name; it returns the JSON document to write (for example a Kubernetes
    ``v1 List`` of Bindings). It raises :class:`~placement.solver.errors.InputError` naming
    the file or field when the instance lacks what the format needs. The family keeps
    ``EXPORTERS`` beside its importer of the same format.
    """

    format: str
    family: str
    help: str
    description: str
    parameters: tuple[Parameter, ...]
    build: Callable[[Any, Any, dict[str, Any]], Any]
