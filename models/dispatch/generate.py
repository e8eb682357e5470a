"""Seeded synthetic dispatch traces: Poisson arrivals and Weibull or log-normal job sizes.

Yildiz et al. validate their dispatching models with Poisson arrivals and Weibull-distributed
service times whose coefficient of variation (CoV) is the parameter they vary
(MertYILDIZ19/Dispatching_Scheduling, ``README.md``, "Synthetic Validation"; the notebook
itself is not public in a form we could read). We follow that protocol; the default CoV (2),
mean size (100 time units) and the log-normal alternative are our assumptions, not fitted
values from a paper.

Everything random comes from ``numpy.random.default_rng(seed)``:

* ``m`` identical servers (``server_cores`` cores each, speed 1), jobs of one core;
* sizes with mean ``mean_size`` and the given CoV, rounded up to integers >= 1: Weibull with
  the shape ``k`` solving ``Gamma(1+2/k) / Gamma(1+1/k)^2 = 1 + CoV^2``, or log-normal with
  ``sigma^2 = ln(1 + CoV^2)``;
* arrivals: exponential gaps of mean ``mean_size / (load * m * server_cores)``, so the
  offered load per core is ``load``; arrival times are rounded down to integers.

``mode="budget"`` makes a parameter sweep on priced heterogeneous servers instead
(:func:`generate_sweep`, Nimrod/G's setting), ``mode="bundle"`` a burst of short tasks beside
long jobs (:func:`generate_bundle`, Byun et al.'s setting): all their assumptions are ours,
stated there.
"""

from __future__ import annotations

import math

import numpy as np

from placement.models.dispatch.instance import (
    BUDGET,
    BUDGET_OBJECTIVES,
    BUNDLE,
    COST,
    IMMEDIATE_DISPATCH,
    TIME,
    DispatchInstance,
    DispatchJob,
    DispatchServer,
)
from placement.solver.errors import InputError
from placement.solver.hooks import SEED, Generator, Parameter
from placement.solver.limits import size_limit

DISTRIBUTIONS = ("weibull", "lognormal")
GENERATED_MODES = (IMMEDIATE_DISPATCH, BUDGET, BUNDLE)
SWEEP_SPEEDS = (1, 2, 3, 4)
"""Server speeds of a generated sweep (relative to the reference machine)."""
SWEEP_CORES = (1, 2, 4, 8)
SWEEP_PRICE_LEVELS = (1, 2, 3, 4, 5)
"""Price per unit of work at speed 1 (Nimrod/G's G$ per MI); a server's price per core and
time unit is its level times its speed."""


def weibull_shape(cov: float) -> float:
    """The Weibull shape whose coefficient of variation is ``cov`` (bisection on log k)."""
    target = 1.0 + cov * cov
    lo, hi = 0.05, 50.0
    for _ in range(200):
        k = math.sqrt(lo * hi)
        ratio = math.exp(math.lgamma(1 + 2 / k) - 2 * math.lgamma(1 + 1 / k))
        if ratio > target:
            lo = k
        else:
            hi = k
    return math.sqrt(lo * hi)


def sizes(
    rng: np.random.Generator, n: int, mean: float, cov: float, distribution: str
) -> np.ndarray:
    """``n`` integer sizes >= 1 of mean about ``mean`` and the given CoV."""
    if distribution == "weibull":
        k = weibull_shape(cov)
        scale = mean / math.gamma(1 + 1 / k)
        raw = scale * rng.weibull(k, n)
    elif distribution == "lognormal":
        sigma2 = math.log(1 + cov * cov)
        raw = rng.lognormal(math.log(mean) - sigma2 / 2, math.sqrt(sigma2), n)
    else:
        raise InputError.single("distribution", distribution, " or ".join(DISTRIBUTIONS))
    return np.maximum(1, np.ceil(raw)).astype(np.int64)


def generate(
    jobs: int,
    servers: int,
    load: float,
    seed: int = 0,
    *,
    distribution: str = "weibull",
    cov: float = 2.0,
    mean_size: float = 100.0,
    server_cores: int = 1,
    out: str | None = None,
) -> DispatchInstance:
    """A trace of ``jobs`` jobs for ``servers`` identical servers at offered ``load``."""
    if not load > 0:
        raise InputError.single("load", load, "a load > 0 (offered work per core and time)")
    if not cov > 0:
        raise InputError.single("cov", cov, "a coefficient of variation > 0")
    rng = np.random.default_rng(seed)
    size = sizes(rng, jobs, mean_size, cov, distribution)
    gap = mean_size / (load * servers * server_cores)
    arrival = np.floor(np.cumsum(rng.exponential(gap, jobs))).astype(np.int64)
    realised = float(size.sum()) / max(1, int(arrival[-1]) + 1) / (servers * server_cores)
    command = GENERATORS[0].command(
        {
            "jobs": jobs,
            "servers": servers,
            "load": load,
            "seed": seed,
            "distribution": distribution,
            "cov": cov,
            "mean_size": mean_size,
            "server_cores": server_cores,
            "out": out,
        }
    )
    return DispatchInstance(
        [DispatchServer(f"s{k}", server_cores) for k in range(servers)],
        [DispatchJob(f"j{i}", int(arrival[i]), int(size[i])) for i in range(jobs)],
        name=f"dispatch-{jobs}x{servers}-rho{load:g}-{distribution}-s{seed}",
        description=(
            f"Synthetic trace: {jobs} jobs, Poisson arrivals, {distribution} sizes (mean "
            f"{mean_size:g}, CoV {cov:g}) on {servers} servers of {server_cores} core(s); "
            f"offered load {load:g}, realised {realised:.3f}. Made by: {command}"
        ),
    )


def generate_sweep(
    jobs: int,
    servers: int,
    load: float,
    seed: int = 0,
    *,
    kinds: int = 4,
    mean_size: float = 100.0,
    budget_factor: float = 0.0,
    objective: str = COST,
    out: str | None = None,
) -> DispatchInstance:
    """A parameter sweep of ``jobs`` one-core jobs ready at time 0 on ``servers`` priced
    heterogeneous servers (``budget`` mode). Our assumptions, no paper's fitted values:

    * each server draws its cores from ``SWEEP_CORES``, its speed from ``SWEEP_SPEEDS``, a
      price level from ``SWEEP_PRICE_LEVELS`` (price = level * speed per core and time unit,
      so a level is a price per unit of work) and a dispatch overhead of 0-3 time units;
    * ``kinds`` job sizes, uniform in ``[mean_size / 2, 3 * mean_size / 2]``; each job one of
      them at random;
    * the deadline (objectives ``cost`` and ``cost_time``; ``time`` has none): the time the
      servers' total speed needs for all the work at utilisation ``load`` (``ceil(work /
      (sum cores * speed) / load)``), at least the longest job's shortest service time;
      ``load`` near 1 is a tight deadline;
    * the budget: ``budget_factor`` times the cheapest schedule's cost (every job on its
      cheapest server; 0: no budget).
    """
    if not load > 0:
        raise InputError.single("load", load, "a load > 0 (the deadline's utilisation)")
    if objective not in BUDGET_OBJECTIVES:
        raise InputError.single("objective", objective, " or ".join(BUDGET_OBJECTIVES))
    if budget_factor and budget_factor < 1:
        raise InputError.single(
            "budget_factor", budget_factor, "0 (no budget) or >= 1 (the cheapest schedule's cost)"
        )
    rng = np.random.default_rng(seed)
    made = []
    for k in range(servers):
        speed = int(rng.choice(SWEEP_SPEEDS))
        made.append(
            DispatchServer(
                f"r{k}",
                int(rng.choice(SWEEP_CORES)),
                float(speed),
                float(int(rng.choice(SWEEP_PRICE_LEVELS)) * speed),
                int(rng.integers(0, 4)),
            )
        )
    lo, hi = max(1, int(mean_size / 2)), max(1, int(3 * mean_size / 2))
    size_of_kind = sorted({int(x) for x in rng.integers(lo, hi + 1, kinds)})
    kind = rng.integers(0, len(size_of_kind), jobs)
    tasks = [DispatchJob(f"t{i}", 0, size_of_kind[int(kind[i])]) for i in range(jobs)]
    instance = DispatchInstance(made, tasks, BUDGET, budget_objective=objective)
    rate = sum(s.cores * s.speed for s in made)
    work = sum(t.size for t in tasks)
    longest = max(min(row) for row in instance.service) if tasks else 0
    if objective != TIME:  # time-optimisation: the fastest schedule within the budget
        instance.deadline = max(longest, math.ceil(work / rate / load))
    cheapest = sum(min(instance.cost(j, s) for s in range(servers)) for j in range(len(tasks)))
    instance.budget = math.ceil(budget_factor * cheapest) if budget_factor else 0
    command = GENERATORS[0].command(
        {
            "jobs": jobs,
            "servers": servers,
            "load": load,
            "seed": seed,
            "mode": BUDGET,
            "kinds": kinds,
            "mean_size": mean_size,
            "budget_factor": budget_factor,
            "objective": objective,
            "out": out,
        }
    )
    instance.name = f"sweep-{jobs}x{servers}-rho{load:g}-s{seed}"
    instance.description = (
        f"Synthetic parameter sweep: {jobs} one-core jobs of {len(size_of_kind)} sizes "
        f"({', '.join(map(str, size_of_kind))}) on {servers} priced servers; deadline "
        f"{instance.deadline} (utilisation {load:g}), budget "
        f"{instance.budget or 'none'} ({budget_factor:g} x the cheapest {cheapest}); "
        f"objective {objective}. Made by: {command}"
    )
    return instance


def generate_bundle(
    jobs: int,
    servers: int,
    load: float,
    seed: int = 0,
    *,
    server_cores: int = 32,
    mean_size: float = 100.0,
    scheduler_overhead: int = 10,
    out: str | None = None,
) -> DispatchInstance:
    """``jobs`` short one-core tasks submitted together at time 0 (an array job, Byun et
    al.'s case) beside long jobs on ``servers`` identical nodes of ``server_cores`` cores
    (``bundle`` mode). Our assumptions, no paper's fitted values:

    * short sizes uniform in ``[mean_size / 2, 3 * mean_size / 2]``; ``short_size`` = 2 *
      ``mean_size``;
    * ``max(1, jobs // 50)`` long jobs of size 50 * ``mean_size`` times a uniform factor in
      [0.5, 1.5], each on 1 to ``server_cores`` cores (uniform), Poisson arrivals whose long
      work alone offers ``load`` of the cluster's cores;
    * a scheduler overhead of ``scheduler_overhead`` per dispatch.
    """
    if not load > 0:
        raise InputError.single("load", load, "a load > 0 (the long jobs' offered load)")
    rng = np.random.default_rng(seed)
    lo, hi = max(1, int(mean_size / 2)), max(1, int(3 * mean_size / 2))
    made = [DispatchJob(f"t{i}", 0, int(x)) for i, x in enumerate(rng.integers(lo, hi + 1, jobs))]
    longs = max(1, jobs // 50)
    sizes = np.ceil(50 * mean_size * rng.uniform(0.5, 1.5, longs)).astype(np.int64)
    cores = rng.integers(1, server_cores + 1, longs)
    mean_work = float(np.mean(sizes * cores))
    gap = mean_work / (load * servers * server_cores)
    arrival = np.floor(np.cumsum(rng.exponential(gap, longs))).astype(np.int64)
    made += [
        DispatchJob(f"l{i}", int(arrival[i]), int(sizes[i]), int(cores[i])) for i in range(longs)
    ]
    command = GENERATORS[0].command(
        {
            "jobs": jobs,
            "servers": servers,
            "load": load,
            "seed": seed,
            "mode": BUNDLE,
            "server_cores": server_cores,
            "mean_size": mean_size,
            "scheduler_overhead": scheduler_overhead,
            "out": out,
        }
    )
    return DispatchInstance(
        [DispatchServer(f"n{k}", server_cores) for k in range(servers)],
        made,
        BUNDLE,
        name=f"bundle-{jobs}x{servers}-h{scheduler_overhead}-s{seed}",
        description=(
            f"Synthetic short-task burst: {jobs} one-core tasks at time 0 (sizes "
            f"{lo}-{hi}) and {longs} long jobs (load {load:g}) on {servers} nodes of "
            f"{server_cores} cores; scheduler overhead {scheduler_overhead} per dispatch. "
            f"Made by: {command}"
        ),
        scheduler_overhead=scheduler_overhead,
        short_size=int(2 * mean_size),
    )


_VARIANTS = {
    IMMEDIATE_DISPATCH: (generate, ("distribution", "cov", "mean_size", "server_cores")),
    BUDGET: (generate_sweep, ("kinds", "mean_size", "budget_factor", "objective")),
    BUNDLE: (generate_bundle, ("server_cores", "mean_size", "scheduler_overhead")),
}
"""Each mode's generator and the options it reads (besides jobs, servers, load and seed)."""


def _build(params: dict) -> DispatchInstance:
    make, options = _VARIANTS[params["mode"]]
    return make(
        params["jobs"],
        params["servers"],
        params["load"],
        params["seed"],
        **{name: params[name] for name in options},
        out=params["out"],
    )


GENERATORS = (
    Generator(
        family="dispatch",
        help="a job trace (Poisson arrivals, Weibull or log-normal sizes) and identical servers",
        description=(
            "Generate a seeded dispatch trace: exponential inter-arrival gaps giving offered "
            "load --load per core, job sizes of mean --mean-size and coefficient of variation "
            "--cov (Weibull, as Yildiz et al. validate with, or log-normal). With --mode "
            "budget, a parameter sweep of --jobs one-core jobs of --kinds sizes on --servers "
            "priced heterogeneous servers, its deadline at utilisation --load and its budget "
            "--budget-factor times the cheapest schedule (Nimrod/G's setting)."
        ),
        parameters=(
            Parameter(
                "jobs",
                "positive_int",
                required=True,
                metavar="N",
                maximum=size_limit("tasks"),
                help="jobs",
            ),
            Parameter(
                "servers",
                "positive_int",
                required=True,
                metavar="M",
                maximum=10_000,
                help="servers",
            ),
            Parameter(
                "load",
                "positive_float",
                required=True,
                metavar="RHO",
                help="offered load per core (e.g. 0.9)",
            ),
            SEED,
            Parameter(
                "distribution",
                "str",
                "weibull",
                choices=DISTRIBUTIONS,
                shown=True,
                help="job size distribution (default: weibull)",
            ),
            Parameter(
                "cov",
                "positive_float",
                2.0,
                metavar="C",
                shown=True,
                help="coefficient of variation of the sizes (default: 2, assumed)",
            ),
            Parameter(
                "mean_size",
                "positive_float",
                100.0,
                metavar="T",
                help="mean job size in time units (default: 100)",
            ),
            Parameter(
                "server_cores",
                "positive_int",
                1,
                metavar="C",
                maximum=4096,
                help="cores per server (default: 1)",
            ),
            Parameter(
                "mode",
                "str",
                IMMEDIATE_DISPATCH,
                choices=GENERATED_MODES,
                help="immediate_dispatch (a trace), budget (a parameter sweep) or bundle (short "
                "tasks beside long jobs; default: immediate_dispatch)",
            ),
            Parameter(
                "kinds",
                "positive_int",
                4,
                metavar="K",
                maximum=1000,
                help="budget mode: distinct job sizes of the sweep (default: 4)",
            ),
            Parameter(
                "budget_factor",
                "float",
                0.0,
                metavar="F",
                help="budget mode: the budget as a multiple (>= 1) of the cheapest schedule's "
                "cost; 0 = no budget (default: 0)",
            ),
            Parameter(
                "objective",
                "str",
                COST,
                choices=BUDGET_OBJECTIVES,
                help="budget mode: cost, time or cost_time (default: cost)",
            ),
            Parameter(
                "scheduler_overhead",
                "int",
                10,
                metavar="H",
                help="bundle mode: scheduler time units per dispatch (default: 10)",
            ),
        ),
        build=_build,
    ),
)
"""``placement generate dispatch``."""
