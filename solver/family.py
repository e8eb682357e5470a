"""The contract every problem family implements, and the registry of families.

A family lives in ``placement.models.<name>`` and exposes one :class:`Family` object. The
engine (:mod:`placement.solver.portfolio`) only talks to that object, so adding a family
touches its own folder, one line in :data:`FAMILY_MODULES`, the proto, docs and tests.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from placement.solver import jsonform
from placement.solver.cancel import CancellationToken
from placement.solver.errors import InputError, Shown, ValidationCollector
from placement.solver.jsonform import (
    FieldRange,
    declared_range,
    family_key,
    instance_message,
    json_type_name,
    message_to_dict,
)
from placement.solver.options import SolveOptions
from placement.solver.result import Result, StopReason
from placement.solver.schema.v1 import placement_pb2


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
    phase_times_s: dict[str, float] = field(default_factory=dict)
    """Where the encoding's time went, by what ran (e.g. ``rcmax``, ``highs``, ``colgen``);
    the portfolio times what is not listed under ``ran``, else the backend's name."""
    ran: str = ""
    """What ran, where it is not the backend asked for (a DP, ``serving-tp``, HiGHS for a
    model only it solves): the portfolio times the exact phase under this name."""


@dataclass
class StartAdaptation:
    """What a family makes of a start solution for the instance being solved
    (:meth:`Family.adapt_start`).

    ``solution`` is a typed solution of the instance built from the pieces kept (completed by
    the family where its solutions must serve every piece), or None when nothing of the start
    applies; the portfolio checks it before using it.
    """

    solution: Any | None
    pieces: int
    """Pieces in the start (placed jobs, scheduled tasks, assigned layers, routed paths)."""
    kept: int
    """Pieces of the start kept in ``solution``."""
    dropped: list[tuple[str, str]] = field(default_factory=list)
    """``(name, reason)`` for every piece not kept."""
    note: str = ""
    """What the family added or changed beyond the pieces (e.g. ``2 new tasks placed``)."""


def start_envelope(start: Any) -> Any:
    """The ``placement.v1.Solution`` of a warm start given as a :class:`Result` with a
    solution, a ``Solution`` message (returned as is) or its JSON dict (a solution file's
    content, or a result's: :func:`~placement.solver.jsonform.start_message`)."""
    if hasattr(start, "DESCRIPTOR"):
        return start
    if isinstance(start, dict):
        return jsonform.start_message(start)
    if isinstance(start, Result):
        if start.solution is None or start.instance is None:
            raise InputError.single("start", Shown("a Result without a solution"), "a solution")
        family = get_family(start.family)
        msg = placement_pb2.Solution(instance_name=getattr(start.instance, "name", "") or "")
        getattr(msg, family.name).CopyFrom(
            family.solution_to_message(start.instance, start.solution)
        )
        return msg
    raise InputError.single(
        "start", Shown(_describe(start)), "a Result, a placement.v1.Solution or its JSON dict"
    )


def known_pieces(
    items: Iterable[Any],
    name_of: Callable[[Any], str],
    index: dict[str, int],
    noun: str,
    twice: str,
    dropped: list[tuple[str, str]],
) -> Iterator[tuple[Any, str, int]]:
    """The pieces of a start whose piece of work still exists, each at most once, as
    ``(item, name, position)`` (position in ``index``); every other piece is appended to
    ``dropped`` with why: ``"<noun> 'x' no longer in the instance"`` or
    ``"<noun> 'x' <twice> in the start"`` (e.g. ``twice="placed twice"``)."""
    seen: set[int] = set()
    for item in items:
        name = name_of(item)
        position = index.get(name)
        if position is None:
            dropped.append((name, f"{noun} {name!r} no longer in the instance"))
        elif position in seen:
            dropped.append((name, f"{noun} {name!r} {twice} in the start"))
        else:
            seen.add(position)
            yield item, name, position


def keep_while_feasible(
    check: Callable[[Any], CheckReport],
    build: Callable[[list[Any]], Any],
    pieces: list[tuple[str, Any]],
) -> tuple[Any, list[str], list[tuple[str, str]]]:
    """The solution of the longest run of ``pieces``, taken in order, that the checker
    accepts, for families where leaving a piece out never breaks a rule (an unplaced job, an
    unserved request).

    ``pieces`` are ``(name, piece)``; ``build(list_of_pieces)`` makes a typed solution. Blocks
    of pieces are added while the checker accepts them (the block doubles after a success and
    halves after a failure), so a start with k conflicting pieces of n costs about
    ``k log n`` checks, not n. Returns the solution, the names kept, and ``(name, reason)``
    for each piece dropped with the checker's first violation when it was added.
    """
    accepted: list[tuple[str, Any]] = []
    dropped: list[tuple[str, str]] = []
    i, block = 0, max(1, len(pieces))
    while i < len(pieces):
        size = min(block, len(pieces) - i)
        trial = accepted + pieces[i : i + size]
        report = check(build([p for _, p in trial]))
        if report.feasible:
            accepted, i, block = trial, i + size, size * 2
        elif size == 1:
            name = pieces[i][0]
            dropped.append((name, f"{name}: {report.violations[0]}"))
            i, block = i + 1, 1
        else:
            block = size // 2
    return build([p for _, p in accepted]), [n for n, _ in accepted], dropped


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
        """Check ``solution``; keep it if it is feasible and improving. Returns whether kept.
        ``bound``: a proven bound on the primary objective of the whole instance known now."""
        ...

    def update_bound(self, bound: float) -> None:
        """A proven bound on the primary objective of the whole instance, found without a
        new solution (an LP, column generation): later incumbents carry it, and the solve
        stops once the gap target is met."""
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
    generators, importers, exporters:
        What ``placement generate``, ``placement import`` and ``placement export`` offer for
        the family (:class:`~placement.solver.hooks.Generator`,
        :class:`~placement.solver.hooks.Importer`, :class:`~placement.solver.hooks.Exporter`).
    """

    name: ClassVar[str]
    sense: ClassVar[str]
    instance_type: ClassVar[type]
    encodings: ClassVar[dict[str, str]] = {}
    generators: ClassVar[tuple[Any, ...]] = ()
    importers: ClassVar[tuple[Any, ...]] = ()
    exporters: ClassVar[tuple[Any, ...]] = ()

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
        work if given. A family whose solutions serve all their work (no
        :meth:`explain_unplaced`) takes ``(instance, solution)`` only: it is never given
        reasons."""
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

    def named_solution(self, instance: Any, solution: Any) -> Any:
        """The solution keyed by the names of the instance (what :attr:`Result.named`
        returns). Default: None (the family offers no named view)."""
        del instance, solution
        return None

    def adapt_start(self, instance: Any, message: Any) -> StartAdaptation:
        """What of a start solution ``message`` (the family's ``placement.v1`` solution
        message, possibly of an earlier version of the instance) the instance still admits,
        by name: the typed solution of the pieces kept and the reason for each one dropped.
        Default: the whole message if every name it uses exists (one piece), else nothing."""
        try:
            solution = self.solution_from_message(instance, message)
        except InputError as exc:
            return StartAdaptation(None, 1, 0, [("", str(exc))])
        return StartAdaptation(solution, 1, 1)

    def auto_backend(self, instance: Any) -> str:
        """The encoding ``--backend auto`` runs on ``instance`` (a key of
        :attr:`encodings`). Default: ``cpsat``."""
        del instance
        return "cpsat"

    def objective_sense(self, instance: Any) -> str:
        """``"max"`` or ``"min"``: the direction of ``instance``'s primary objective.
        Default: :attr:`sense` (a family whose modes differ in direction overrides it)."""
        del instance
        return self.sense

    def quick_bound(self, instance: Any) -> float | None:
        """A cheap proven bound on the primary objective, or None (the default)."""
        del instance
        return None

    def explain_unplaced(
        self, instance: Any, solution: Any, stop: CancellationToken | None = None
    ) -> list[dict[str, Any]]:
        """A structured reason (``name``, ``kind``, ``message`` and the family's details) for
        every piece of work the solution does not serve. ``stop`` fires once the solve's
        time is spent: a family whose reasons are costly then gives the remaining ones
        without their costly details (every piece of work still gets its reason). Default:
        none (every checked solution of the family serves all its work)."""
        del instance, solution, stop
        return []

    def size(self, instance: Any) -> dict[str, int]:
        """Counts that the service's size limits apply to (e.g. ``gpus``). Default: none."""
        del instance
        return {}

    def warm_up(self) -> None:
        """Run every code path of a solve once on a small instance (a fresh service worker
        calls it, so its first request pays no first-call costs). Default: nothing."""

    typed_paths: ClassVar[dict[str, str]] = {}
    """Attribute of the typed instance -> its JSON path inside the family section, where the
    two differ (gpu: ``nodes`` -> ``cluster.nodes``), so errors on typed instances name the
    field as files do."""

    def corrupt(self, instance: Any, solution: Any) -> Any | None:
        """A copy of ``solution`` that the checker must reject, for example one naming an
        entity the instance lacks (the family-contract test checks the checker rejects it).
        Default: None (the contract test then fails: every family declares one)."""
        del instance, solution
        return None

    plot: ClassVar[Callable[[Any, Any, str], None] | None] = None
    """``plot(instance, solution, out_path)`` draws a solution (``placement plot``), or None."""

    summarize: ClassVar[Callable[[dict[str, Any]], tuple[str, list[str]]] | None] = None
    """``summarize(section)`` gives what ``placement solve``'s summary shows of a solution
    beyond the common rows: a label and one line per row (machines, stages, routes, cores),
    from the solution's JSON form (its family section); None shows nothing more."""

    # -- written once -----------------------------------------------------------------

    def validate(self, instance: Any) -> None:
        """Validate a typed instance built in code with the rules applied to files, with the
        same field paths and words: every field's type against its annotation (and its
        declared range), the family's own field rules, then a round trip through its message
        (the ranges and rules of files). Raises InputError naming every bad field; marks the
        instance validated. A list given for a tuple field is stored as a tuple."""
        if not isinstance(instance, self.instance_type):
            raise InputError.single(
                "instance", Shown(_describe(instance)), f"a {self.instance_type.__name__}"
            )
        v = ValidationCollector()
        prefix = self.name.capitalize()
        for name, hint in _typed_fields(type(instance)):
            if name == "validated":
                continue
            path = self.typed_paths.get(name, name)
            where = path if name in ("name", "description") else f"{self.name}.{path}"
            _check_typed(instance, name, hint, where, prefix, v)
        v.raise_if_any()
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
        if unplaced:
            return message_to_dict(self.solution_to_message(instance, solution, unplaced))
        return message_to_dict(self.solution_to_message(instance, solution))

    def exact(self, backend: str) -> ExactEncoding:
        """A fresh exact encoding called ``backend`` (a key of :attr:`encodings`)."""
        if backend not in self.encodings:
            known = ", ".join(self.encodings)
            raise ValueError(f"no exact backend {backend!r} for the {self.name} family ({known})")
        module, _, cls = self.encodings[backend].partition(":")
        return getattr(importlib.import_module(module), cls)()


def _describe(value: Any) -> str:
    """A value's kind in a message: JSON words for plain data, the class for objects."""
    if isinstance(value, str | int | float | bool | list | tuple | dict) or value is None:
        return json_type_name(value)
    return f"a {type(value).__name__}"


_HINTS: dict[type, list[tuple[str, Any]]] = {}


def _typed_fields(cls: type) -> list[tuple[str, Any]]:
    """The dataclass fields of ``cls`` as (name, resolved type hint)."""
    if cls not in _HINTS:
        if not dataclasses.is_dataclass(cls):
            _HINTS[cls] = []  # an embedder's family with its own instance type: its own rules
        else:
            try:
                hints = typing.get_type_hints(cls)
            except (NameError, TypeError):  # an annotation that does not resolve: not checked
                hints = {}
            _HINTS[cls] = [(f.name, hints.get(f.name, Any)) for f in dataclasses.fields(cls)]
    return _HINTS[cls]


_SCALAR_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _check_scalar(value: Any, hint: type) -> bool:
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str)


def _check_typed(
    owner: Any, name: str, hint: Any, path: str, prefix: str, v: ValidationCollector
) -> None:
    """Check one field of a typed dataclass against its annotation, with the words (and the
    declared range) a file's field gets. A list given for a tuple field is stored as a tuple,
    so frozen objects stay hashable."""
    value = getattr(owner, name)
    rng = declared_range(type(owner).__name__, name, prefix)
    _check_value(value, hint, path, rng, prefix, v)
    if typing.get_origin(hint) is tuple and isinstance(value, list):
        object.__setattr__(owner, name, tuple(value))


def _check_value(
    value: Any,
    hint: Any,
    path: str,
    rng: FieldRange | None,
    prefix: str,
    v: ValidationCollector,
) -> None:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any or (isinstance(hint, type) and hint.__module__.startswith("numpy")):
        return
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in args:
            return
        hint = next(a for a in args if a is not type(None))
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in _SCALAR_WORDS:
        if not _check_scalar(value, hint):
            shown = value if isinstance(value, str) else Shown(_describe(value))
            v.add(path, shown, rng.expected() if rng else _SCALAR_WORDS[hint])
        elif rng is not None and not isinstance(value, bool) and not rng.contains(value):
            v.add(path, value, rng.expected())
        return
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        if not isinstance(value, hint):
            names = ", ".join(str(m.value) for m in hint)
            v.add(
                path,
                value if isinstance(value, str) else Shown(_describe(value)),
                f"one of {names}",
            )
        return
    if origin in (list, tuple):
        if not isinstance(value, list | tuple):
            v.add(path, Shown(_describe(value)), "a list")
            return
        item = args[0] if args else Any
        for i, element in enumerate(value):
            _check_value(element, item, f"{path}[{i}]", rng, prefix, v)
        return
    if origin is dict:
        if not isinstance(value, dict):
            v.add(path, Shown(_describe(value)), "a mapping")
            return
        key_hint, value_hint = args or (Any, Any)
        for key, element in value.items():
            _check_value(key, key_hint, f"{path}[{key!r}]", None, prefix, v)
            _check_value(element, value_hint, f"{path}[{key!r}]", rng, prefix, v)
        return
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, hint):
            v.add(path, Shown(_describe(value)), f"a {hint.__name__}")
            return
        for name, sub in _typed_fields(hint):
            _check_typed(value, name, sub, f"{path}.{name}", prefix, v)


FAMILY_MODULES: dict[str, str] = {
    "gpu": "placement.models.gpu",
    "dag": "placement.models.dag",
    "partition": "placement.models.partition",
    "entanglement": "placement.models.entanglement",
    "mc": "placement.models.mc",
    "dispatch": "placement.models.dispatch",
    "sharding": "placement.models.sharding",
    "fl": "placement.models.fl",
    "serving": "placement.models.serving",
}
"""Family name -> module exposing ``FAMILY``. One line per family."""

_loaded: dict[str, Family] = {}


def _load_for_ranges(key: str) -> None:
    """Import a family before its file section is parsed, so its ranges are registered."""
    if key in FAMILY_MODULES and key not in _loaded:
        get_family(key)


jsonform.family_loader = _load_for_ranges


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


def instance_from_document(document: dict[str, Any]) -> Any:
    """The typed, validated instance of an instance file's content (``placement.v1.Instance``
    JSON: ``name``, ``description`` and one family section), as files are read; raises
    InputError naming the bad field."""
    msg = instance_message(document)
    key = family_key(msg)
    return get_family(key).instance_from_message(
        getattr(msg, key), name=msg.name, description=msg.description
    )


def instance_document(instance: Any) -> dict[str, Any]:
    """The instance file content (``placement.v1.Instance`` JSON) of a typed instance."""
    family = family_of(instance)
    return {
        "name": getattr(instance, "name", "") or "",
        "description": getattr(instance, "description", "") or "",
        family.name: family.instance_to_dict(instance),
    }
