"""The contract every problem family implements, and the registry of families.

A family lives in ``placement.models.<name>`` and exposes one :class:`Family` object. The
engine (:mod:`placement.solver.portfolio`) only talks to that object, so adding a family
touches its own folder, one line in :data:`FAMILY_MODULES`, the proto, docs and tests.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from placement.solver.cancel import CancellationToken
from placement.solver.errors import InputError
from placement.solver.jsonform import message_to_dict
from placement.solver.options import SolveOptions
from placement.solver.result import StopReason


@dataclass(frozen=True)
class CheckReport:
    """What a family's independent checker says of a solution.

    ``terms`` holds every objective tier in lexicographic order (primary first); ``senses``
    says for each whether larger (``max``) or smaller (``min``) is better.
    """

    feasible: bool
    violations: list[str]
    terms: dict[str, float]
    senses: tuple[str, ...]

    @property
    def objective(self) -> float:
        """The primary objective."""
        return next(iter(self.terms.values()))

    def score(self) -> tuple[float, ...]:
        """A tuple where larger is better in every position, rounded against float noise."""
        out = []
        for value, sense in zip(self.terms.values(), self.senses, strict=True):
            v = round(value, 6)
            out.append(v if sense == "max" else -v)
        return tuple(out)

    def better_than(self, other: CheckReport | None) -> bool:
        """True if this feasible solution is lexicographically better than ``other``."""
        if not self.feasible:
            return False
        if other is None or not other.feasible:
            return True
        return self.score() > other.score()


@dataclass
class ExactOutcome:
    """What an exact encoding reports when it returns.

    ``bound`` is a proven bound on the primary objective of the whole instance (not of a
    restricted model). ``proven_optimal`` means every objective tier was proved optimal for
    ``proven_solution``.
    """

    stop_reason: StopReason
    bound: float | None = None
    proven_optimal: bool = False
    proven_solution: Any | None = None
    proven_infeasible: bool = False
    message: str = ""
    tier_bounds: dict[str, float] = field(default_factory=dict)


class ExactContext(Protocol):
    """What the portfolio hands an exact encoding."""

    options: SolveOptions
    cancel: CancellationToken
    backend: str

    def time_left(self) -> float:
        """Seconds left before the deadline."""
        ...

    def incumbent(self) -> Any | None:
        """The best checked solution so far (use it as a hint / warm start)."""
        ...

    def proven_bound(self) -> float | None:
        """The tightest proven bound on the primary objective so far (for example the
        family's quick bound), or None. An incumbent that meets it is optimal in that tier."""
        ...

    def report(self, solution: Any, source: str, bound: float | None = None) -> bool:
        """Check ``solution``; keep it if it is feasible and improving. Returns whether kept."""
        ...


class ExactEncoding(Protocol):
    """An exact model of a family (CP-SAT or MILP)."""

    def solve(self, instance: Any, ctx: ExactContext) -> ExactOutcome:
        """Search until proved, the deadline, or cancellation; report incumbents on ``ctx``."""
        ...


class Family:
    """The base of every problem family: subclass it once per family.

    A family writes what is its own (the typed instance and its message, the heuristics, the
    checker, the encodings) and inherits the shells written once here: :meth:`validate`,
    the dict forms, :meth:`exact`. The optional members have defaults that mean "the family
    has nothing to add".

    Class attributes
    ----------------
    name:
        The registry name; also the key of the family's section in files (``"gpu"``).
    sense:
        ``"max"`` or ``"min"``: the direction of the primary objective.
    instance_type:
        The typed instance class (:meth:`validate` refuses anything else).
    encodings:
        Exact backend name -> ``"module:Class"`` of its encoding, imported on first use
        (the solver libraries load only when an exact phase runs).
    generators, importers:
        What ``placement generate`` and ``placement import`` offer for the family
        (:class:`Generator`, :class:`Importer`).
    """

    name: ClassVar[str]
    sense: ClassVar[str]
    instance_type: ClassVar[type]
    encodings: ClassVar[dict[str, str]] = {}
    generators: ClassVar[tuple[Any, ...]] = ()
    importers: ClassVar[tuple[Any, ...]] = ()

    # -- what each family writes ------------------------------------------------------

    def instance_from_message(self, msg: Any, name: str = "", description: str = "") -> Any:
        """The validated typed instance from the family's ``placement.v1`` message; raises
        InputError naming every bad field."""
        raise NotImplementedError

    def instance_to_message(self, instance: Any) -> Any:
        """The family's ``placement.v1`` message of a typed instance."""
        raise NotImplementedError

    def solution_from_message(self, instance: Any, msg: Any) -> Any:
        """The typed solution from the family's ``placement.v1`` message; raises InputError
        on names the instance does not have (feasibility is the checker's business)."""
        raise NotImplementedError

    def solution_to_message(
        self, instance: Any, solution: Any, unplaced: list[dict[str, Any]] | None = None
    ) -> Any:
        """The family's ``placement.v1`` solution message, with the reasons for unplaced
        work if given."""
        raise NotImplementedError

    def greedy(self, instance: Any, options: SolveOptions) -> Iterable[tuple[str, Any]]:
        """Named heuristic solutions; the first is the fallback. A generator is best: each
        solution is checked and reported as soon as it is yielded, and the later ones are
        skipped when the time is up."""
        raise NotImplementedError

    def check(self, instance: Any, solution: Any) -> CheckReport:
        """Independent feasibility check and objective evaluation."""
        raise NotImplementedError

    # -- optional, with defaults ------------------------------------------------------

    def validate_fields(self, instance: Any) -> None:
        """Rules on a typed instance built in code that its message cannot express (for
        example tuple lengths); raise InputError. Default: none."""
        del instance

    def auto_backend(self, instance: Any) -> str:
        """The encoding ``--backend auto`` runs on ``instance`` (a key of
        :attr:`encodings`). Default: ``cpsat``."""
        del instance
        return "cpsat"

    def quick_bound(self, instance: Any) -> float | None:
        """A cheap proven bound on the primary objective, or None (the default)."""
        del instance
        return None

    def explain_unplaced(self, instance: Any, solution: Any) -> list[dict[str, Any]]:
        """A structured reason (``name``, ``kind``, ``message`` and the family's details) for
        every piece of work the solution does not serve. Default: none (every checked
        solution of the family serves all its work)."""
        del instance, solution
        return []

    def size(self, instance: Any) -> dict[str, int]:
        """Counts that the service's size limits apply to (e.g. ``gpus``). Default: none."""
        del instance
        return {}

    def warm_up(self) -> None:
        """Run every code path of a solve once on a small instance (a fresh service worker
        calls it, so its first request pays no first-call costs). Default: nothing."""

    plot: ClassVar[Callable[[Any, Any, str], None] | None] = None
    """``plot(instance, solution, out_path)`` draws a solution (``placement plot``), or None."""

    # -- written once -----------------------------------------------------------------

    def validate(self, instance: Any) -> None:
        """Validate a typed instance built in code with the rules applied to files: the
        family's own field rules, then a round trip through its message (raises InputError
        naming every bad field; marks the instance validated)."""
        if not isinstance(instance, self.instance_type):
            article = "an" if self.instance_type.__name__[0] in "AEIOU" else "a"
            raise InputError.single(
                "instance", type(instance).__name__, f"{article} {self.instance_type.__name__}"
            )
        self.validate_fields(instance)
        try:
            message = self.instance_to_message(instance)
        except (TypeError, ValueError, KeyError) as exc:
            raise InputError.single(self.name, str(exc), "fields of the documented types") from None
        self.instance_from_message(message)
        instance.validated = True

    def instance_to_dict(self, instance: Any) -> dict[str, Any]:
        """The JSON form of the family's section of an instance file."""
        return message_to_dict(self.instance_to_message(instance))

    def solution_to_dict(
        self, instance: Any, solution: Any, unplaced: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The JSON form of the family's section of a solution file."""
        return message_to_dict(self.solution_to_message(instance, solution, unplaced))

    def exact(self, backend: str) -> ExactEncoding:
        """A fresh exact encoding called ``backend`` (a key of :attr:`encodings`)."""
        if backend not in self.encodings:
            known = ", ".join(self.encodings)
            raise ValueError(f"no exact backend {backend!r} for the {self.name} family ({known})")
        module, _, cls = self.encodings[backend].partition(":")
        return getattr(importlib.import_module(module), cls)()


FAMILY_MODULES: dict[str, str] = {
    "gpu": "placement.models.gpu",
    "dag": "placement.models.dag",
    "partition": "placement.models.partition",
    "entanglement": "placement.models.entanglement",
}
"""Family name -> module exposing ``FAMILY``. One line per family."""

_loaded: dict[str, Family] = {}


def get_family(name: str) -> Family:
    """The registered family called ``name``; raises KeyError with the known names."""
    if name not in _loaded:
        if name not in FAMILY_MODULES:
            raise KeyError(f"unknown family {name!r}; known: {', '.join(sorted(FAMILY_MODULES))}")
        _loaded[name] = importlib.import_module(FAMILY_MODULES[name]).FAMILY
    return _loaded[name]


def register_family(family: Family, module: str | None = None) -> None:
    """Register a family object (an embedding application's own family, or a test's).

    ``module`` is the import path that exposes it as ``FAMILY`` (needed only where worker
    processes must find it by name).
    """
    _loaded[family.name] = family
    if module is not None:
        FAMILY_MODULES[family.name] = module


def family_names() -> list[str]:
    """Names of every registered family."""
    return sorted(set(FAMILY_MODULES) | set(_loaded))


def family_of(instance: Any) -> Family:
    """The family of ``instance`` (each instance type names its family in ``family_name``)."""
    return get_family(instance.family_name)


def validate(instance: Any) -> None:
    """Validate a typed instance of any registered family with the rules applied to files
    (raises InputError naming every bad field); see :meth:`Family.validate`."""
    family_of(instance).validate(instance)


# --- command-line hooks a family declares, as data ---------------------------------------------

PARAMETER_TYPES = (
    "str",
    "path",
    "int",
    "positive_int",
    "non_negative_int",
    "float",
    "positive_float",
    "fraction",
    "probability",
    "fraction_pair",
    "name_list",
    "path_count",
    "flag",
)
"""The value types a :class:`Parameter` may have: ``positive_int`` >= 1, ``non_negative_int``
>= 0, ``positive_float`` finite > 0, ``fraction`` in [0, 1], ``probability`` in (0, 1],
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

    def __post_init__(self) -> None:
        if self.type not in PARAMETER_TYPES:
            raise ValueError(f"parameter {self.name!r}: type {self.type!r} not in {PARAMETER_TYPES}")

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
