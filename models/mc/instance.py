"""Typed instance and solution of the mixed-criticality partitioning family, and their
``placement.v1`` messages.

A task has an integer period and integer budgets (one time unit of the instance's choosing),
so every utilisation ``C / (T * speed)`` is an exact :class:`~fractions.Fraction`; a core's
speed is a double, taken as the exact rational value of that double.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

from placement.solver.errors import ValidationCollector
from placement.solver.jsonform import FieldRange, check_ranges, register_ranges
from placement.solver.schema.v1 import mc_pb2 as pb

MAX_MIN_SLACK = "min_slack"
MIN_CORES = "cores_used"
OBJECTIVES = (MAX_MIN_SLACK, MIN_CORES)
"""The secondary objectives (the checker's name of the tier)."""

EDF_VD = "edf_vd"
AMC_RTB = "amc_rtb"
TESTS = (EDF_VD, AMC_RTB)
"""The per-core tests: EDF-VD (default) or fixed-priority AMC-rtb with Audsley's OPA."""
TEST_LABELS = {EDF_VD: "EDF-VD", AMC_RTB: "AMC-rtb"}

MAX_TIME = 10**12
"""Largest period or budget accepted (keeps the exact integer models within int64)."""
MAX_SPEED = 10**6

RANGES = register_ranges(
    {
        "McTask.period": FieldRange(1, MAX_TIME, integer=True, unit="time units"),
        "McTask.deadline": FieldRange(0, MAX_TIME, integer=True, unit="time units, 0 = the period"),
        "McTask.budget_lo": FieldRange(1, MAX_TIME, integer=True, unit="time units"),
        "McTask.budget_hi": FieldRange(0, MAX_TIME, integer=True, unit="time units, 0 = budget_lo"),
        "McTask.drop_cost": FieldRange(0, MAX_TIME, integer=True),
        "McCore.speed": FieldRange(0, MAX_SPEED, unit="relative speed, 0 = 1"),
    }
)
"""The documented range of every numeric field (docs/library.md lists them); how a task's
fields relate to each other (budgets within the period, C(HI) >= C(LO)) is checked in
:func:`instance_from_message`. Within these limits the exact integer models stay in int64."""


@dataclass(frozen=True)
class McTask:
    """A dual-criticality implicit-deadline sporadic task."""

    name: str
    period: int
    budget_lo: int
    budget_hi: int
    """C(HI); equal to ``budget_lo`` for a LO task."""
    hi: bool = False
    pinned: int | None = None
    """Index of the only core the task may use, or None."""
    excluded: frozenset[int] = frozenset()
    """Indices of cores the task may not use."""
    drop_cost: int = 0
    """> 0: a LO task that may be dropped at this cost."""
    deadline: int = 0
    """Relative deadline (0: the period); other than the period only under AMC-rtb."""

    @property
    def relative_deadline(self) -> int:
        """D: the deadline, or the period when it is 0."""
        return self.deadline or self.period

    @property
    def droppable(self) -> bool:
        """Whether the task may be left unplaced."""
        return not self.hi and self.drop_cost > 0

    @property
    def u_lo(self) -> Fraction:
        """LO-mode utilisation on a unit-speed core, C(LO)/T."""
        return Fraction(self.budget_lo, self.period)

    @property
    def u_hi(self) -> Fraction:
        """HI-mode utilisation on a unit-speed core, C(HI)/T (HI tasks)."""
        return Fraction(self.budget_hi, self.period)

    @property
    def u_own(self) -> Fraction:
        """Utilisation at the task's own criticality level."""
        return self.u_hi if self.hi else self.u_lo


@dataclass(frozen=True)
class McCore:
    """A core and its speed relative to the reference core."""

    name: str
    speed: float = 1.0

    @property
    def speed_exact(self) -> Fraction:
        """The speed as an exact rational."""
        return Fraction(self.speed)


@dataclass(eq=False)
class McInstance:
    """Tasks, cores, and the objective after schedulability."""

    family_name = "mc"

    tasks: list[McTask]
    cores: list[McCore]
    objective: str = MAX_MIN_SLACK
    name: str = ""
    description: str = ""
    validated: bool = field(default=False, repr=False)
    test: str = EDF_VD
    """The per-core test (:data:`TESTS`)."""

    @property
    def test_label(self) -> str:
        """The test's name as the papers write it."""
        return TEST_LABELS[self.test]

    def allowed(self, task: int, core: int) -> bool:
        """Whether ``task`` may run on ``core`` (pinning and exclusions)."""
        t = self.tasks[task]
        if t.pinned is not None and t.pinned != core:
            return False
        return core not in t.excluded

    @cached_property
    def task_index(self) -> dict[str, int]:
        return {t.name: i for i, t in enumerate(self.tasks)}

    @cached_property
    def core_index(self) -> dict[str, int]:
        return {c.name: i for i, c in enumerate(self.cores)}

    @property
    def any_droppable(self) -> bool:
        """Whether some task may be dropped."""
        return any(t.droppable for t in self.tasks)

    @property
    def cores_identical(self) -> bool:
        """Every core has the same speed and no task is pinned or excluded (cores are then
        interchangeable)."""
        speeds = {c.speed for c in self.cores}
        restricted = any(t.pinned is not None or t.excluded for t in self.tasks)
        return len(speeds) <= 1 and not restricted


@dataclass(frozen=True)
class McSolution:
    """The core of every task (``core_of[task]``; -1: dropped)."""

    core_of: tuple[int, ...] = ()


# -------------------------------------------------------------------------------------------
# From and to the placement/v1 message

_OBJECTIVES = {0: MAX_MIN_SLACK, 1: MAX_MIN_SLACK, 2: MIN_CORES}
_OBJECTIVE_VALUES = {MAX_MIN_SLACK: 1, MIN_CORES: 2}
_TESTS = {0: EDF_VD, 1: EDF_VD, 2: AMC_RTB}
_TEST_VALUES = {EDF_VD: 1, AMC_RTB: 2}


def instance_from_message(msg: Any, name: str = "", description: str = "") -> McInstance:
    """Build and validate an :class:`McInstance` from an ``McInstance`` message.

    Raises :class:`~placement.solver.errors.InputError` listing every bad field with its path.
    """
    v = ValidationCollector()
    P = "mc"
    check_ranges(msg, RANGES, P, v)
    test = _TESTS.get(int(msg.test))
    if test is None:
        v.add(f"{P}.test", int(msg.test), "EDF_VD or AMC_RTB")
        test = EDF_VD
    objective = _OBJECTIVES.get(int(msg.objective))
    if objective is None:
        v.add(f"{P}.objective", int(msg.objective), "MAX_MIN_SLACK or MIN_CORES")
        objective = MAX_MIN_SLACK
    if test == AMC_RTB:
        # EDF-VD's slack has no AMC-rtb counterpart here: unset means MIN_CORES.
        if int(msg.objective) == 0:
            objective = MIN_CORES
        v.require(
            objective == MIN_CORES,
            f"{P}.objective",
            "MAX_MIN_SLACK",
            "MIN_CORES (or unset) under test AMC_RTB (min_slack is EDF-VD's slack)",
        )
    cores: list[McCore] = []
    core_names: dict[str, int] = {}
    v.require(len(msg.cores) > 0, f"{P}.cores", [], "at least one core")
    for k, c in enumerate(msg.cores):
        path = f"{P}.cores[{k}]"
        v.unique_name(f"{path}.name", c.name, core_names, "core")
        speed = c.speed if RANGES["McCore.speed"].contains(c.speed) and c.speed else 1.0
        core_names.setdefault(c.name, k)
        cores.append(McCore(c.name, float(speed)))
    tasks: list[McTask] = []
    task_names: set[str] = set()
    for i, t in enumerate(msg.tasks):
        path = f"{P}.tasks[{i}]"
        v.unique_name(f"{path}.name", t.name, task_names, "task")
        task_names.add(t.name)
        period = t.period if RANGES["McTask.period"].contains(t.period) else 1
        # The relations between fields are checked where each field is inside its range
        # (check_ranges above has already named the ones outside).
        deadline_ok = RANGES["McTask.deadline"].contains(t.deadline)
        if deadline_ok and test == AMC_RTB:
            v.require(
                t.deadline <= period,
                f"{path}.deadline",
                t.deadline,
                "an integer in 1..period (or 0: the period)",
            )
        elif deadline_ok:
            v.require(
                t.deadline in (0, t.period),
                f"{path}.deadline",
                t.deadline,
                "0 or the period (EDF-VD's test is for implicit deadlines; AMC_RTB allows "
                "constrained deadlines)",
            )
        deadline = t.deadline if deadline_ok and 0 < t.deadline < period else 0
        crit = int(t.criticality)
        v.require(crit in (0, 1, 2), f"{path}.criticality", crit, "LO or HI")
        hi = crit == 2
        ok = RANGES["McTask.budget_lo"].contains(t.budget_lo) and v.require(
            t.budget_lo <= period,
            f"{path}.budget_lo",
            t.budget_lo,
            "an integer in 1..period",
        )
        budget_lo = t.budget_lo if ok else 1
        if not RANGES["McTask.budget_hi"].contains(t.budget_hi):
            budget_hi = budget_lo
        elif hi:
            budget_hi = t.budget_hi or budget_lo
            if not v.require(
                budget_lo <= budget_hi <= period,
                f"{path}.budget_hi",
                t.budget_hi,
                "an integer in budget_lo..period (or 0: budget_lo)",
            ):
                budget_hi = budget_lo
        else:
            v.require(
                t.budget_hi in (0, budget_lo), f"{path}.budget_hi", t.budget_hi, "0 (a LO task)"
            )
            budget_hi = budget_lo
        v.require(not (hi and t.drop_cost > 0), f"{path}.drop_cost", t.drop_cost, "0 for a HI task")
        pinned = None
        if t.pinned_core:
            pinned = core_names.get(t.pinned_core)
            v.require(pinned is not None, f"{path}.pinned_core", t.pinned_core, "a core's name")
        excluded: set[int] = set()
        for j, name in enumerate(t.excluded_cores):
            k = core_names.get(name)
            if v.require(k is not None, f"{path}.excluded_cores[{j}]", name, "a core's name"):
                excluded.add(k)  # type: ignore[arg-type]
        if pinned is not None and pinned in excluded:
            v.add(f"{path}.pinned_core", t.pinned_core, "a core the task is not excluded from")
        if len(excluded) >= len(cores) > 0:
            v.add(f"{path}.excluded_cores", list(t.excluded_cores), "at least one core left")
        tasks.append(
            McTask(
                t.name,
                int(period),
                int(budget_lo),
                int(budget_hi),
                hi,
                pinned,
                frozenset(excluded),
                max(0, int(t.drop_cost)),
                int(deadline),
            )
        )
    v.raise_if_any()
    return McInstance(tasks, cores, objective, name, description, validated=True, test=test)


def instance_to_message(instance: McInstance) -> Any:
    """The ``placement.v1.McInstance`` message of an instance."""
    msg = pb.McInstance()
    for c in instance.cores:
        msg.cores.add(name=c.name, speed=c.speed)
    for t in instance.tasks:
        m = msg.tasks.add(
            name=t.name,
            period=t.period,
            criticality=2 if t.hi else 1,
            budget_lo=t.budget_lo,
            budget_hi=t.budget_hi if t.hi else 0,
            drop_cost=t.drop_cost,
            deadline=t.deadline,
        )
        if t.pinned is not None:
            m.pinned_core = instance.cores[t.pinned].name
        m.excluded_cores.extend(instance.cores[k].name for k in sorted(t.excluded))
    msg.objective = _OBJECTIVE_VALUES[instance.objective]
    msg.test = _TEST_VALUES[instance.test]
    return msg


def solution_from_message(instance: McInstance, msg: Any) -> McSolution:
    """An :class:`McSolution` from an ``McSolution`` message.

    Names must exist in the instance (InputError otherwise); a task left out or dropped
    without leave is the checker's business (kept as unplaced, -2).
    """
    v = ValidationCollector()
    core_of = [-2] * len(instance.tasks)
    for i, a in enumerate(msg.assignments):
        path = f"mc.assignments[{i}]"
        task = instance.task_index.get(a.task)
        core = instance.core_index.get(a.core)
        ok = v.require(task is not None, f"{path}.task", a.task, "the name of a task")
        ok = v.require(core is not None, f"{path}.core", a.core, "the name of a core") and ok
        if ok and task is not None and core is not None:
            v.require(core_of[task] == -2, f"{path}.task", a.task, "each task assigned once")
            core_of[task] = core
    for i, name in enumerate(msg.dropped):
        task = instance.task_index.get(name)
        if v.require(task is not None, f"mc.dropped[{i}]", name, "the name of a task"):
            v.require(core_of[task] == -2, f"mc.dropped[{i}]", name, "a task not assigned")
            core_of[task] = -1  # type: ignore[index]
    v.raise_if_any()
    return McSolution(tuple(core_of))


# -------------------------------------------------------------------------------------------
# The solution by name (Result.named)


@dataclass(frozen=True)
class NamedMcSolution:
    """An :class:`McSolution` by name: ``core_of["t007"] == "core2"``; ``tasks_on`` lists each
    used core's tasks in instance order; ``dropped`` the LO tasks dropped."""

    core_of: dict[str, str]
    tasks_on: dict[str, tuple[str, ...]]
    dropped: tuple[str, ...]


def named_solution(instance: McInstance, solution: McSolution) -> NamedMcSolution:
    """The assignment keyed by task name, the tasks keyed by core name, the dropped tasks."""
    core_of: dict[str, str] = {}
    tasks_on: dict[str, list[str]] = {}
    dropped: list[str] = []
    for task, core in zip(instance.tasks, solution.core_of, strict=False):
        if 0 <= core < len(instance.cores):
            core_of[task.name] = instance.cores[core].name
            tasks_on.setdefault(instance.cores[core].name, []).append(task.name)
        elif core == -1:
            dropped.append(task.name)
    return NamedMcSolution(core_of, {c: tuple(ts) for c, ts in tasks_on.items()}, tuple(dropped))
