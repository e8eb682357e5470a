"""Braun-style ETC instances (R||Cmax) by the published range-based protocol.

Braun et al., "A comparison of eleven static heuristics for mapping a class of independent
tasks onto heterogeneous distributed computing systems", JPDC 61(6) 2001, section 3: each
task ``t`` gets a baseline ``B(t) ~ U(1, R_task)``; its expected time to compute on machine
``m`` is ``B(t) * U(1, R_mach)``, a fresh draw per cell. Task heterogeneity ``R_task`` is
3,000 (hi) or 100 (lo); machine heterogeneity ``R_mach`` is 1,000 (hi) or 10 (lo). A
*consistent* matrix has each row sorted (machine 0 fastest for every task); a
*semi-consistent* one has the even columns of each row sorted among themselves and the odd
columns left as drawn; an *inconsistent* one is left as drawn. The 12 classes are named as
the published files, ``u_<c|s|i>_<task><machine>`` (``u_c_hihi`` ... ``u_i_lolo``).

Values are rounded to one decimal as in the published files; :func:`braun_instance`
expresses them in thousands of ETC units (``UNIT``), as the ``grid-large`` results were
recorded (a common unit changes no ratio, gap or heuristic ranking between schedules; the
family's guard no longer needs it since issue 41), and :func:`write_etc` writes a matrix in
the published text format.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from placement.models.dag.instance import DagInstance, DagMachine, DagTask, finish
from placement.solver.errors import InputError

HETEROGENEITY = {"task": {"hi": 3000.0, "lo": 100.0}, "machine": {"hi": 1000.0, "lo": 10.0}}
"""``R_task`` and ``R_mach`` of Braun et al. (2001)."""

CONSISTENCY = {"c": "consistent", "s": "semi-consistent", "i": "inconsistent"}
"""The letter of each consistency class in the published file names."""

UNIT = 1000.0
"""ETC units per second of the generated instances (see the module docstring)."""


@dataclass(frozen=True)
class BraunClass:
    """One of the 12 classes: consistency letter, task and machine heterogeneity."""

    consistency: str
    task: str
    machine: str

    @property
    def name(self) -> str:
        """The published name, e.g. ``u_c_hihi``."""
        return f"u_{self.consistency}_{self.task}{self.machine}"

    @classmethod
    def parse(cls, name: str) -> BraunClass:
        """The class of a name such as ``u_s_lohi``."""
        parts = name.split("_")
        het = parts[2] if len(parts) == 3 else ""
        if (
            len(parts) != 3
            or parts[0] != "u"
            or parts[1] not in CONSISTENCY
            or het[:2] not in HETEROGENEITY["task"]
            or het[2:] not in HETEROGENEITY["machine"]
        ):
            raise InputError.single("class", name, "u_<c|s|i>_<hi|lo><hi|lo>, e.g. u_c_hihi")
        return cls(parts[1], het[:2], het[2:])


CLASSES = tuple(
    BraunClass(c, t, m) for c in CONSISTENCY for t in ("hi", "lo") for m in ("hi", "lo")
)
"""The 12 classes in the published order (c, s, i; hihi, hilo, lohi, lolo)."""


def braun_matrix(
    rng: np.random.Generator, tasks: int, machines: int, klass: BraunClass
) -> np.ndarray:
    """A (tasks, machines) ETC matrix of ``klass`` drawn from ``rng``, in ETC units (one
    decimal): the protocol of the module docstring, the one place it is written."""
    if tasks < 1 or machines < 1:
        raise InputError.single("tasks/machines", f"{tasks}/{machines}", "at least 1 each")
    base = rng.uniform(1.0, HETEROGENEITY["task"][klass.task], size=tasks)
    etc = base[:, None] * rng.uniform(
        1.0, HETEROGENEITY["machine"][klass.machine], size=(tasks, machines)
    )
    if klass.consistency == "c":
        etc.sort(axis=1)
    elif klass.consistency == "s":
        etc[:, ::2] = np.sort(etc[:, ::2], axis=1)
    return np.round(etc, 1)


def braun_etc(tasks: int, machines: int, klass: BraunClass, seed: int = 0) -> np.ndarray:
    """The (tasks, machines) ETC matrix of one class, in ETC units (one decimal).

    The generator is ``numpy.random.default_rng((seed, tasks, machines, class index))``: the
    same arguments always give the same matrix, and every class and size its own draws.
    """
    rng = np.random.default_rng((int(seed), int(tasks), int(machines), CLASSES.index(klass)))
    return braun_matrix(rng, tasks, machines, klass)


def braun_instance(
    tasks: int, machines: int, klass: str | BraunClass, seed: int = 0
) -> DagInstance:
    """A validated dag instance of independent tasks with a Braun-style ETC matrix.

    Machine ``m`` is type ``m<m>`` (as :func:`~placement.models.dag.formats.loaders.load_braun`
    reads the published files); times are the ETC values over ``UNIT``. The name is the
    published one with the size and seed, e.g. ``u_c_hihi-1024x32-s0``.
    """
    k = klass if isinstance(klass, BraunClass) else BraunClass.parse(klass)
    etc = braun_etc(tasks, machines, k, seed) / UNIT
    types = [f"m{m}" for m in range(machines)]
    rows = etc.tolist()
    instance = DagInstance(
        machines=[DagMachine(name=t, type=t) for t in types],
        tasks=[
            DagTask(name=f"t{t}", time_by_type_s=dict(zip(types, rows[t], strict=True)))
            for t in range(tasks)
        ],
        name=f"{k.name}-{tasks}x{machines}-s{seed}",
        description=(
            f"Braun et al. (2001) protocol, class {k.name}, {tasks} tasks x {machines} "
            f"machines, seed {seed}; times in {UNIT:g} ETC units "
            "(placement.models.dag.braun.braun_instance)"
        ),
    )
    return finish(instance)


HCSP_FACTOR = 6.0
"""ETC units per published unit of the large hcsp-sized files (:func:`write_etc`): the Braun
ranges at 2,048 x 64 give a ``u_s_hihi`` matrix whose slowest times add up to 3.1e9 and
whose makespan is about 1.7e6; six times that (1.9e10 and about 1.0e7) is at least the
hcsp collection's 2,048 x 64 ``u_s_hihi`` (1.02e10 and about 9.2e6)."""


def write_etc(path: str | Path, etc: np.ndarray) -> Path:
    """Write an ETC matrix in the published text format ``placement import braun`` reads:
    ``tasks machines 0``, then one value per line, task-major, six decimals."""
    out = Path(path)
    n, k = etc.shape
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(f"{n} {k} 0\n")
        fh.write("\n".join(f"{v:.6f}" for v in np.asarray(etc, dtype=float).ravel()))
        fh.write("\n")
    return out
