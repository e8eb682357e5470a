"""Seeded synthetic mixed-criticality task sets, following the usual protocol of the
partitioned-MC literature (e.g. Ramanathan and Easwaran, DATE 2017; Kelly et al. 2011).

Everything random comes from ``numpy.random.default_rng(seed)``:

* the normalised utilisation bound is ``U = max(U_LO, U_HI) / m`` (``m`` cores of speed 1)
  with ``U_LO`` the LO-mode utilisation of every task and ``U_HI`` the HI tasks' HI-mode
  utilisation: the busier mode fills ``U`` of the platform;
* UUniFast-discard (Bini and Buttazzo 2005; Davis and Burns 2009) draws the ``n``
  utilisations at the tasks' own levels; each task is HI with probability
  ``hi_probability``, and a HI task's LO-mode utilisation is its HI one over the
  criticality factor ``R`` (one ``R`` for every task, or, with ``criticality_factor_max``,
  drawn per task uniformly in ``[criticality_factor, criticality_factor_max]``: with one
  ``R`` the utilisation difference is proportional to the utilisation, and MC-UDP's order
  and choice of core coincide with criticality-aware worst fit); the draw is then scaled so that ``max(U_LO, U_HI) = U m``, and
  discarded (drawn again) when a task's utilisation exceeds 1;
* periods are log-uniform in ``[period_min_ms, period_max_ms]``, in integer microseconds;
  budgets are rounded to microseconds (at least 1), so the realised utilisations differ from
  the drawn ones by at most 1/T.
"""

from __future__ import annotations

import math

import numpy as np

from placement.models.mc.instance import (
    AMC_RTB,
    EDF_VD,
    MAX_MIN_SLACK,
    MIN_CORES,
    TESTS,
    McCore,
    McInstance,
    McTask,
)
from placement.solver.errors import InputError
from placement.solver.hooks import SEED, Generator, Parameter
from placement.solver.limits import check_count, size_limit

MAX_DISCARDS = 10_000
"""UUniFast draws tried before giving up (a total near n cannot be split below 1 each)."""


def uunifast_discard(rng: np.random.Generator, n: int, total: float) -> np.ndarray:
    """``n`` utilisations in (0, 1] summing to ``total`` (UUniFast-discard)."""
    for _ in range(MAX_DISCARDS):
        u = np.empty(n)
        remaining = total
        for i in range(n - 1):
            nxt = remaining * rng.random() ** (1.0 / (n - 1 - i))
            u[i] = remaining - nxt
            remaining = nxt
        u[n - 1] = remaining
        if (u <= 1.0).all() and (u > 0).all():
            return u
    raise InputError.single(
        "utilisation", total / n, f"a total that {n} tasks of utilisation <= 1 can share"
    )


def generate(
    tasks: int,
    cores: int,
    utilisation: float,
    seed: int = 0,
    *,
    hi_probability: float = 0.5,
    criticality_factor: float = 2.0,
    criticality_factor_max: float = 0.0,
    period_min_ms: float = 10.0,
    period_max_ms: float = 1000.0,
    objective: str = MAX_MIN_SLACK,
    out: str | None = None,
    test: str = EDF_VD,
) -> McInstance:
    """A seeded task set on ``cores`` unit-speed cores (see the module docstring).

    Raises
    ------
    InputError
        On a size or parameter out of range.
    """
    check_count("tasks", tasks, 1, size_limit("tasks"))
    check_count("cores", cores, 1, size_limit("tasks"))
    if not 0 < utilisation <= 1:
        raise InputError.single("utilisation", utilisation, "a number in (0, 1]")
    if utilisation * cores > tasks:
        raise InputError.single(
            "utilisation", utilisation, f"at most tasks / cores = {tasks / cores:g}"
        )
    if criticality_factor < 1:
        raise InputError.single("criticality_factor", criticality_factor, "a number >= 1")
    if criticality_factor_max and criticality_factor_max < criticality_factor:
        raise InputError.single(
            "criticality_factor_max", criticality_factor_max, "0 or a number >= criticality_factor"
        )
    if not 0 < period_min_ms <= period_max_ms:
        raise InputError.single("period_min_ms", period_min_ms, "a number in (0, period_max_ms]")
    if objective not in (MAX_MIN_SLACK, MIN_CORES):
        raise InputError.single("objective", objective, f"{MAX_MIN_SLACK} or {MIN_CORES}")
    if test not in TESTS:
        raise InputError.single("test", test, " or ".join(TESTS))
    if test == AMC_RTB:
        objective = MIN_CORES  # min_slack is EDF-VD's slack
    rng = np.random.default_rng(seed)
    target = utilisation * cores
    for _ in range(MAX_DISCARDS):
        u = uunifast_discard(rng, tasks, target)
        hi = rng.random(tasks) < hi_probability
        factor = np.full(tasks, criticality_factor)
        if criticality_factor_max:
            factor = rng.uniform(criticality_factor, criticality_factor_max, tasks)
        lo_mode = float(np.where(hi, u / factor, u).sum())
        hi_mode = float(u[hi].sum())
        u = u * (target / max(lo_mode, hi_mode))
        if (u <= 1.0).all():
            break
    else:
        raise InputError.single(
            "utilisation", utilisation, f"a bound that {tasks} tasks on {cores} cores can reach"
        )
    log_periods = rng.uniform(math.log(period_min_ms), math.log(period_max_ms), tasks)
    out_tasks = []
    for i in range(tasks):
        period = max(1, round(math.exp(log_periods[i]) * 1000))
        own = min(period, max(1, round(u[i] * period)))
        budget_lo = max(1, round(own / factor[i])) if hi[i] else own
        out_tasks.append(
            McTask(f"t{i:03d}", period, budget_lo, own if hi[i] else budget_lo, bool(hi[i]))
        )
    command = GENERATORS[0].command(
        {
            "tasks": tasks,
            "cores": cores,
            "utilisation": utilisation,
            "seed": seed,
            "hi_probability": hi_probability,
            "criticality_factor": criticality_factor,
            "criticality_factor_max": criticality_factor_max,
            "period_min_ms": period_min_ms,
            "period_max_ms": period_max_ms,
            "objective": objective,
            "out": out,
            "test": test,
        }
    )
    return McInstance(
        out_tasks,
        [McCore(f"core{k}") for k in range(cores)],
        objective,
        name=f"mc-{tasks}x{cores}-u{utilisation:g}-s{seed}",
        description=(
            f"Synthetic dual-criticality task set: {tasks} tasks ({int(hi.sum())} HI) on {cores} "
            f"cores, normalised utilisation {utilisation:g}, criticality factor "
            f"{criticality_factor:g}. Made by: {command}"
        ),
        validated=False,
        test=test,
    )


def _build(params: dict) -> McInstance:
    return generate(
        params["tasks"],
        params["cores"],
        params["utilisation"],
        params["seed"],
        hi_probability=params["hi_probability"],
        criticality_factor=params["criticality_factor"],
        criticality_factor_max=params["criticality_factor_max"],
        period_min_ms=params["period_min_ms"],
        period_max_ms=params["period_max_ms"],
        objective=params["objective"],
        out=params["out"],
        test=params.get("test", EDF_VD),
    )


GENERATORS = (
    Generator(
        family="mc",
        help="a dual-criticality (LO/HI) sporadic task set and the cores to partition it on",
        description=(
            "Generate a seeded mixed-criticality task set: UUniFast-discard utilisations "
            "summing to --utilisation x --cores, HI tasks with probability --hi-probability "
            "and C(LO) = C(HI) / --criticality-factor, log-uniform periods in microseconds."
        ),
        parameters=(
            Parameter(
                "tasks",
                "positive_int",
                required=True,
                metavar="N",
                maximum=size_limit("tasks"),
                help="tasks",
            ),
            Parameter(
                "cores",
                "positive_int",
                required=True,
                metavar="M",
                maximum=size_limit("tasks"),
                help="cores",
            ),
            Parameter(
                "utilisation",
                "fraction",
                required=True,
                metavar="U",
                help="normalised utilisation bound in (0, 1]: total own-level utilisation / M",
            ),
            SEED,
            Parameter(
                "hi_probability",
                "fraction",
                0.5,
                metavar="P",
                shown=True,
                help="probability that a task is HI (default: 0.5)",
            ),
            Parameter(
                "criticality_factor",
                "positive_float",
                2.0,
                metavar="R",
                shown=True,
                help="C(HI) / C(LO) of HI tasks, >= 1 (default: 2)",
            ),
            Parameter(
                "criticality_factor_max",
                "float",
                0.0,
                metavar="R",
                help="when > 0: each HI task's factor uniform in [--criticality-factor, R]",
            ),
            Parameter("period_min_ms", "positive_float", 10.0, metavar="MS", help="default: 10"),
            Parameter(
                "period_max_ms", "positive_float", 1000.0, metavar="MS", help="default: 1000"
            ),
            Parameter(
                "objective",
                "str",
                MAX_MIN_SLACK,
                choices=(MAX_MIN_SLACK, MIN_CORES),
                help="after schedulability: maximise min_slack or minimise cores_used "
                "(amc_rtb: always cores_used)",
            ),
            Parameter(
                "test",
                "str",
                EDF_VD,
                choices=TESTS,
                help="the per-core test: edf_vd (default) or amc_rtb (fixed priorities, OPA)",
            ),
        ),
        build=_build,
    ),
)
"""``placement generate mc``."""
