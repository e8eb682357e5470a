"""Seeded synthetic DAG instances (``numpy.random.default_rng(seed)``, no wall clock).

- :func:`random_dag`: Topcuoglu-style random graphs (task count, CCR, shape alpha,
  heterogeneity beta, out-degree) on ``processors`` processors, each its own type;
- :func:`etl_dag`: extract -> transform fan-out -> join fan-in -> load, with datasets living
  in zones, on three machine types in two zones;
- :func:`grid_instance`: independent tasks with an ETC matrix by the protocol of Braun et
  al. (2001) (any of its 12 classes; the protocol itself is :mod:`.braun`'s);
- :func:`machine_set`: a heterogeneous machine set (three types, two zones) for workflows
  that bring only their tasks, such as WfCommons instances.
"""

from __future__ import annotations

import math

import numpy as np

from placement.models.dag.braun import HETEROGENEITY, BraunClass, braun_matrix
from placement.models.dag.instance import (
    DagEdge,
    DagInstance,
    DagLink,
    DagMachine,
    DagTask,
    finish,
    max_horizon_s,
)
from placement.solver.errors import InputError
from placement.solver.hooks import SEED, Generator, Parameter
from placement.solver.limits import check_count, size_limit

MAX_MACHINES = 10_000
"""Machines a generated instance may have."""
MAX_CELLS = 4_000_000
"""Tasks x machines a generated instance may have: each task has a time per machine, and an
instance of more times than this does not fit the service's 64 MiB message at 8 bytes each
with the rest of the instance beside it."""


def _check_sizes(tasks: int, machines: int) -> None:
    """Refuse sizes beyond what the family's limits hold, before anything is built."""
    check_count("tasks", tasks, 1, size_limit("tasks"))
    check_count("machines", machines, 1, MAX_MACHINES)
    if tasks * machines > MAX_CELLS:
        raise InputError.single(
            "tasks x machines", tasks * machines, f"at most {MAX_CELLS} (one time per pair)"
        )


def random_dag(
    tasks: int,
    processors: int,
    seed: int = 0,
    ccr: float = 1.0,
    alpha: float = 1.0,
    beta: float = 0.5,
    out_degree: int = 3,
    mean_cost: float = 20.0,
    command: str = "",
) -> DagInstance:
    """A Topcuoglu et al. (2002) random DAG with integer costs.

    Levels: about ``sqrt(tasks) / alpha`` of them, each ``sqrt(tasks) * alpha`` wide on
    average; every task but the last level's has up to ``out_degree`` children on later
    levels. A task's mean cost is uniform in [1, 2 * mean_cost]; its cost on processor p is
    uniform in ``w * [1 - beta / 2, 1 + beta / 2]``; an edge's communication cost is uniform
    with mean ``ccr * mean_cost`` (unit bandwidth in one zone, so bytes = seconds).
    """
    _check_sizes(tasks, processors)
    rng = np.random.default_rng(seed)
    width = max(1.0, math.sqrt(tasks) * alpha)
    levels: list[list[int]] = []
    placed = 0
    while placed < tasks:
        size = int(min(tasks - placed, max(1, round(rng.uniform(1, 2 * width - 1)))))
        levels.append(list(range(placed, placed + size)))
        placed += size
    types = [f"p{p}" for p in range(processors)]
    task_list = []
    for t in range(tasks):
        w = rng.uniform(1, 2 * mean_cost)
        costs = rng.uniform(w * (1 - beta / 2), w * (1 + beta / 2), size=processors)
        times = {types[p]: float(max(1, round(c))) for p, c in enumerate(costs)}
        task_list.append(DagTask(name=f"t{t}", time_by_type_s=times))
    edges: list[DagEdge] = []
    for i, lv in enumerate(levels[:-1]):
        later = [t for lvl in levels[i + 1 :] for t in lvl]
        for t in lv:
            k = int(rng.integers(1, out_degree + 1))
            # Children mostly on the next level, so that the graph keeps its shape.
            nxt = levels[i + 1]
            pool = nxt if rng.uniform() < 0.7 or len(later) == len(nxt) else later
            for c in rng.choice(pool, size=min(k, len(pool)), replace=False):
                edges.append(
                    DagEdge(
                        f"t{t}",
                        f"t{int(c)}",
                        float(max(0, round(rng.uniform(0, 2 * ccr * mean_cost)))),
                    )
                )
    # Every task below the first level gets a parent.
    has_parent = {e.child for e in edges}
    for i, lv in enumerate(levels[1:], start=1):
        for t in lv:
            if f"t{t}" not in has_parent:
                p = int(rng.choice(levels[i - 1]))
                edges.append(
                    DagEdge(
                        f"t{p}", f"t{t}", float(max(0, round(rng.uniform(0, 2 * ccr * mean_cost))))
                    )
                )
    instance = DagInstance(
        machines=[DagMachine(name=p, type=p) for p in types],
        tasks=task_list,
        edges=edges,
        links=[DagLink("default", "default", 1.0, 0.0)],
        name=f"random-{tasks}x{processors}-s{seed}",
        description=command
        or GENERATORS[0].command(
            {
                "shape": "random",
                "tasks": tasks,
                "machines": processors,
                "seed": seed,
                "ccr": ccr,
                "alpha": alpha,
                "beta": beta,
                "out_degree": out_degree,
            }
        ),
    )
    return finish(instance)


def etl_machines(machines: int) -> tuple[list[DagMachine], list[DagLink]]:
    """``machines`` machines of three types over zones ``a`` and ``b`` (alternating)."""
    kinds = [("fast", 2.0, 4, 3.0), ("std", 1.0, 4, 1.0), ("big", 1.0, 16, 2.5)]
    out = []
    for m in range(machines):
        kind, speed, slots, price = kinds[m % 3]
        zone = "a" if m % 2 == 0 else "b"
        out.append(DagMachine(f"{zone}-{kind}-{m}", kind, speed, slots, 64 * 1024, price, zone))
    links = [
        DagLink("a", "a", 1e9, 0.0),
        DagLink("b", "b", 1e9, 0.0),
        DagLink("a", "b", 1e8, 0.01),
    ]
    return out, links


MACHINE_SET_SPEEDS = {"fast": (1.5, 3.0), "std": (1.0, 1.0), "slow": (0.25, 0.75)}
"""Speed range of each machine type in :func:`machine_set` (uniform)."""
MACHINE_SET_SLOTS = (1, 2, 4, 8)
"""Parallel slots a machine of :func:`machine_set` may have (uniform)."""
MACHINE_SET_INTER_ZONE_BYTES_PER_S = (2.5e7, 2.5e8)
"""Bandwidth range between the two zones (log-uniform); inside a zone 1.25 GB/s, 0.1 ms."""
MACHINE_SET_INTER_ZONE_LATENCY_S = (0.005, 0.05)
"""Latency range between the two zones (uniform)."""


def machine_set(seed: int, machines: int = 8) -> tuple[list[DagMachine], list[DagLink]]:
    """A seeded heterogeneous machine set: ``machines`` machines of three types in zones
    ``a`` and ``b``.

    Every type and every zone gets at least one machine; the other machines draw their type
    and zone uniformly. Speeds per machine from :data:`MACHINE_SET_SPEEDS` (one speed per
    type), slots from :data:`MACHINE_SET_SLOTS`, a cost per hour of ``speed ** 1.5``; the
    zones are joined by a link drawn from :data:`MACHINE_SET_INTER_ZONE_BYTES_PER_S` and
    :data:`MACHINE_SET_INTER_ZONE_LATENCY_S`.
    """
    if isinstance(machines, bool) or not isinstance(machines, int) or machines < 3:
        raise InputError.single("machines", machines, "an integer >= 3 (three machine types)")
    rng = np.random.default_rng(seed)
    types = list(MACHINE_SET_SPEEDS)
    speed = {k: float(rng.uniform(*MACHINE_SET_SPEEDS[k])) for k in types}
    kinds = types + [types[int(i)] for i in rng.integers(0, len(types), machines - len(types))]
    zones = ["a", "b"] + [str(z) for z in rng.choice(["a", "b"], machines - 2)]
    zones = [zones[int(i)] for i in rng.permutation(machines)]
    out = []
    for m, (kind, zone) in enumerate(zip(sorted(kinds, key=types.index), zones, strict=True)):
        slots = int(rng.choice(MACHINE_SET_SLOTS))
        price = round(speed[kind] ** 1.5, 3)
        out.append(
            DagMachine(f"{zone}-{kind}-{m}", kind, round(speed[kind], 3), slots, 0, price, zone)
        )
    low, high = MACHINE_SET_INTER_ZONE_BYTES_PER_S
    bandwidth = float(math.exp(rng.uniform(math.log(low), math.log(high))))
    latency = float(rng.uniform(*MACHINE_SET_INTER_ZONE_LATENCY_S))
    links = [
        DagLink("a", "a", 1.25e9, 1e-4),
        DagLink("b", "b", 1.25e9, 1e-4),
        DagLink("a", "b", round(bandwidth, -3), round(latency, 4)),
    ]
    return out, links


def etl_dag(
    sources: int,
    fan_out: int,
    machines: int,
    seed: int = 0,
    pinned_share: float = 0.5,
    command: str = "",
) -> DagInstance:
    """An ETL workflow: ``sources`` extracts, each feeding ``fan_out`` transforms; transforms
    join pairwise across sources (fan-in) and one load task per join writes the result.

    Each extract reads a dataset of 1-10 GB living in zone ``a`` or ``b``; a share
    ``pinned_share`` of them must run there. Work is in whole seconds; data in whole MB, so
    that times stay decimal (the CP-SAT model then proves what it finds).
    """
    check_count("sources", sources, 1, size_limit("tasks"))
    check_count("fan_out", fan_out, 1, size_limit("tasks"))
    check_count("machines", machines, 1, MAX_MACHINES)
    check_count(
        "sources x (1 + 2 fan_out) tasks", sources * (1 + 2 * fan_out), 1, size_limit("tasks")
    )
    rng = np.random.default_rng(seed)
    mach, links = etl_machines(max(2, machines))
    tasks: list[DagTask] = []
    edges: list[DagEdge] = []
    transforms: list[list[str]] = []
    for s in range(sources):
        zone = "a" if rng.uniform() < 0.5 else "b"
        name = f"extract-{s}"
        tasks.append(
            DagTask(
                name=name,
                work=float(rng.integers(5, 30)),
                memory_mib=int(rng.integers(1, 8)) * 1024,
                data_zone=zone,
                data_bytes=float(rng.integers(1, 11)) * 1e9,
                data_pinned=bool(rng.uniform() < pinned_share),
            )
        )
        row = []
        for f in range(fan_out):
            tname = f"transform-{s}-{f}"
            tasks.append(
                DagTask(name=tname, work=float(rng.integers(10, 60)), cores=int(rng.integers(1, 4)))
            )
            edges.append(DagEdge(name, tname, float(rng.integers(10, 500)) * 1e6))
            row.append(tname)
        transforms.append(row)
    flat = [t for row in transforms for t in row]
    joins = max(1, len(flat) // 2)
    for j in range(joins):
        jname, lname = f"join-{j}", f"load-{j}"
        tasks.append(DagTask(name=jname, work=float(rng.integers(10, 40)), cores=2))
        tasks.append(DagTask(name=lname, work=float(rng.integers(5, 20))))
        # dict, not set: the parents in a fixed order, whatever the string hash seed.
        for parent in dict.fromkeys((flat[(2 * j) % len(flat)], flat[(2 * j + 1) % len(flat)])):
            edges.append(DagEdge(parent, jname, float(rng.integers(10, 300)) * 1e6))
        edges.append(DagEdge(jname, lname, float(rng.integers(10, 200)) * 1e6))
    instance = DagInstance(
        machines=mach,
        tasks=tasks,
        edges=edges,
        links=links,
        name=f"etl-{sources}x{fan_out}-s{seed}",
        description=command
        or GENERATORS[0].command(
            {
                "shape": "etl",
                "sources": sources,
                "fan_out": fan_out,
                "machines": machines,
                "seed": seed,
            }
        ),
    )
    return finish(instance)


GRID_HETEROGENEITY = tuple(
    task + machine for task in HETEROGENEITY["task"] for machine in HETEROGENEITY["machine"]
)
"""Task then machine heterogeneity of a grid instance, as in the published class names
(``hihi``, ``hilo``, ``lohi``, ``lolo``)."""

_CONSISTENCY_LETTER = {"consistent": "c", "semi": "s", "inconsistent": "i"}


def grid_instance(
    tasks: int,
    machines: int,
    seed: int = 0,
    consistency: str = "inconsistent",
    heterogeneity: str = "hihi",
    unit: float = 1.0,
    command: str = "",
) -> DagInstance:
    """Independent tasks with an ETC matrix by the protocol of Braun et al. (2001)
    (:func:`~placement.models.dag.braun.braun_matrix`, drawn from ``default_rng(seed)``):
    ``consistency`` consistent, semi or inconsistent, ``heterogeneity`` the task then
    machine ranges (``hihi``: 3,000 and 1,000; ``lo``: 100 and 10). Times are the ETC values
    over ``unit`` (ETC units per second).

    Each task on its fastest machine, one after the other, must end within the family's
    :func:`~placement.models.dag.instance.max_horizon_s` (2^50 / tasks seconds); a ``unit``
    too small for that (hi-hi matrices of millions of tasks) is refused naming ``unit`` and
    the least that fits."""
    _check_sizes(tasks, machines)
    if consistency not in _CONSISTENCY_LETTER:
        raise InputError.single("consistency", consistency, "consistent, semi or inconsistent")
    if heterogeneity not in GRID_HETEROGENEITY:
        raise InputError.single("heterogeneity", heterogeneity, " or ".join(GRID_HETEROGENEITY))
    if not (math.isfinite(unit) and unit > 0):
        raise InputError.single("unit", unit, "a positive number of ETC units per second")
    klass = BraunClass(_CONSISTENCY_LETTER[consistency], heterogeneity[:2], heterogeneity[2:])
    etc = braun_matrix(np.random.default_rng(seed), tasks, machines, klass) / unit
    total = float(etc.min(axis=1).sum())  # the instance's horizon_bound_s
    limit = max_horizon_s(tasks)
    if total > limit:
        least = total * unit / limit
        raise InputError.single(
            "unit",
            f"{unit:g}",
            f"at least {least:.4g} for {tasks} x {machines} {heterogeneity} tasks, whose "
            f"fastest times add up to {total * unit:.3g} ETC units (at most 2^50 / {tasks} "
            f"tasks = {limit:.3g} s in all)",
        )
    types = [f"m{m}" for m in range(machines)]
    rows = etc.tolist()
    variant = "" if heterogeneity == "hihi" else f"-{heterogeneity}"
    instance = DagInstance(
        machines=[DagMachine(name=t, type=t) for t in types],
        tasks=[
            DagTask(name=f"t{t}", time_by_type_s=dict(zip(types, rows[t], strict=True)))
            for t in range(tasks)
        ],
        name=f"grid-{tasks}x{machines}-{consistency}{variant}-s{seed}",
        description=command
        or GENERATORS[0].command(
            {
                "shape": "grid",
                "tasks": tasks,
                "machines": machines,
                "seed": seed,
                "consistency": consistency,
                "heterogeneity": heterogeneity,
                "unit": unit,
            }
        ),
    )
    return finish(instance)


_SHAPE_PARAMETERS = {
    "random": ("tasks", "machines", "seed", "ccr", "alpha", "beta", "out_degree"),
    "etl": ("sources", "fan_out", "machines", "seed"),
    "grid": ("tasks", "machines", "seed", "consistency", "heterogeneity", "unit"),
}
"""The parameters each shape reads (its command names these only)."""


def _build(params: dict) -> DagInstance:
    shape = params["shape"]
    used = {k: params[k] for k in _SHAPE_PARAMETERS[shape]}
    command = GENERATORS[0].command({"shape": shape, **used, "out": params["out"]})
    if shape == "etl":
        return etl_dag(
            params["sources"],
            params["fan_out"],
            params["machines"],
            params["seed"],
            command=command,
        )
    if shape == "grid":
        return grid_instance(
            params["tasks"],
            params["machines"],
            params["seed"],
            params["consistency"],
            params["heterogeneity"],
            params["unit"],
            command=command,
        )
    return random_dag(
        params["tasks"],
        params["machines"],
        params["seed"],
        params["ccr"],
        params["alpha"],
        params["beta"],
        params["out_degree"],
        command=command,
    )


GENERATORS = (
    Generator(
        family="dag",
        help="a workflow DAG (random or ETL-shaped) or independent grid tasks",
        description=(
            "Generate a seeded DAG-scheduling instance: a Topcuoglu-style random DAG, an ETL "
            "workflow with datasets living in zones, or independent tasks with an ETC matrix."
        ),
        parameters=(
            Parameter(
                "shape",
                "str",
                "random",
                choices=("random", "etl", "grid"),
                shown=True,
                help="random: Topcuoglu-style DAG; etl: extract/transform/join/load with data "
                "locality; grid: independent tasks with an ETC matrix (default: random)",
            ),
            Parameter(
                "tasks",
                "positive_int",
                50,
                shown=True,
                maximum=size_limit("tasks"),
                help="tasks (random, grid)",
            ),
            Parameter(
                "machines",
                "positive_int",
                4,
                shown=True,
                maximum=MAX_MACHINES,
                help="machines (default: 4)",
            ),
            SEED,
            Parameter(
                "ccr", "non_negative_float", 1.0, shown=True, help="communication/computation ratio"
            ),
            Parameter("alpha", "positive_float", 1.0, shown=True, help="shape: >1 wide, <1 deep"),
            Parameter("beta", "fraction", 0.5, shown=True, help="machine heterogeneity"),
            Parameter(
                "out_degree",
                "positive_int",
                3,
                shown=True,
                maximum=size_limit("tasks"),
                help="max children",
            ),
            Parameter(
                "sources",
                "positive_int",
                4,
                shown=True,
                maximum=size_limit("tasks"),
                help="extract tasks (etl)",
            ),
            Parameter(
                "fan_out",
                "positive_int",
                3,
                shown=True,
                maximum=size_limit("tasks"),
                help="transforms per extract",
            ),
            Parameter(
                "consistency",
                "str",
                "inconsistent",
                choices=("consistent", "semi", "inconsistent"),
                shown=True,
                help="ETC consistency (grid)",
            ),
            Parameter(
                "heterogeneity",
                "str",
                "hihi",
                choices=GRID_HETEROGENEITY,
                help="task then machine heterogeneity (grid; Braun et al. 2001): hi/lo task "
                "ranges 3,000/100, then hi/lo machine ranges 1,000/10 (default: hihi)",
            ),
            Parameter(
                "unit",
                "positive_float",
                1.0,
                help="ETC units per second of the times (grid; default: 1); large hi-hi "
                "matrices need 1000, as the grid-large suite",
            ),
        ),
        build=_build,
    ),
)
"""``placement generate dag``."""
