"""Node CPU capacity that falls with density (docs/formulations/gpu.md, §5a).

Context-switch cost and rate grow with the number of co-located cgroups, so a densely packed
node delivers less than its nominal CPU (Isstaif et al., 2025; the numbers the benchmark
uses are cited in :mod:`placement.benchmarks.gpu.density`). A node may say so in two forms of
one concept, the effective CPU capacity ``cap(k)`` with ``k`` pods on the node:

* ``cpu_overhead_milli_per_pod = o`` (JSON ``cpu_density.overhead_milli_per_pod``):
  ``cap(k) = cpu_milli - o k``;
* ``cpu_capacity_curve = (k_0, y_0), ..., (k_m, y_m)`` (JSON ``cpu_density.curve``):
  piecewise linear through the points, ``y_0`` for ``k <= k_0``, along the last segment
  beyond ``k_m`` (one point: ``y_0`` for every ``k``).

``k`` counts ``pods_used`` (pods the instance does not describe as jobs) and every worker a
solution puts on the node, running jobs' included.

Both given, ``cap`` is the smaller; ``cpu_milli`` always caps. The curve must be
non-increasing and concave: then ``cap`` is the minimum of affine functions, one per piece,
and "CPU used <= cap(pods)" is one linear row per piece, exact in integers:

    d * cpu_used <= a + b * pods        (d > 0, b <= 0)

with ``(d, a, b) = (1, cpu_milli, -o)`` for the overhead, ``(1, y_0, 0)`` for the flat
start and, per segment ``s`` from ``(k_s, y_s)`` to ``(k_s+1, y_s+1)``,
``d = k_s+1 - k_s``, ``b = y_s+1 - y_s``, ``a = d y_s - b k_s``. This module knows no
instance type: the node passes its fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from placement.solver.errors import ValidationCollector


@dataclass(frozen=True)
class CpuCapacityPoint:
    """One point of a capacity curve: with ``pods`` pods the node delivers ``cpu_milli``."""

    pods: int
    cpu_milli: int


Piece = tuple[int, int, int]
"""``(d, a, b)``: the row ``d * cpu_used <= a + b * pods`` (``d > 0``, ``b <= 0``)."""


def density_pieces(
    cpu_milli: int, overhead_milli_per_pod: int, curve: tuple[CpuCapacityPoint, ...]
) -> tuple[Piece, ...]:
    """The rows of a node's density model (empty without one); the nominal ``cpu_milli``
    row is not among them (every node has it)."""
    pieces: list[Piece] = []
    if overhead_milli_per_pod:
        pieces.append((1, cpu_milli, -overhead_milli_per_pod))
    if curve:
        pieces.append((1, curve[0].cpu_milli, 0))
        for p, q in zip(curve, curve[1:], strict=False):
            d, b = q.pods - p.pods, q.cpu_milli - p.cpu_milli
            pieces.append((d, d * p.cpu_milli - b * p.pods, b))
    return tuple(pieces)


def effective_cpu_milli(cpu_milli: int, pieces: tuple[Piece, ...], pods: int) -> Fraction:
    """``cap(pods)``: the CPU the node delivers with ``pods`` pods (milli-cores, exact)."""
    cap = Fraction(cpu_milli)
    for d, a, b in pieces:
        cap = min(cap, Fraction(a + b * pods, d))
    return cap


def fits(cpu_milli: int, pieces: tuple[Piece, ...], cpu_used: int, pods: int) -> bool:
    """Whether ``cpu_used`` milli-cores with ``pods`` pods fit: ``cpu_used <= cap(pods)``."""
    return cpu_used <= cpu_milli and all(d * cpu_used <= a + b * pods for d, a, b in pieces)


def workers_that_fit(
    pieces: tuple[Piece, ...], cpu_used: int, pods: int, cpu_per_worker: int, most: int
) -> int:
    """The most new workers, up to ``most``, of ``cpu_per_worker`` milli-cores each that the
    density rows admit on a node holding ``cpu_used`` and ``pods`` (the nominal capacity is
    the caller's). Exact: every piece is linear in the count, so the admitted counts are
    ``0..k``."""
    for d, a, b in pieces:
        room = a + b * pods - d * cpu_used
        if room < 0:
            return 0
        per = d * cpu_per_worker - b
        if per > 0:
            most = min(most, room // per)
    return max(most, 0)


def validate(
    v: ValidationCollector,
    path: str,
    cpu_milli: int,
    cpu_milli_used: int,
    pods_used: int,
    overhead_milli_per_pod: int,
    curve: list[tuple[int, int]],
) -> None:
    """The rules of a node's density fields a range cannot express: points in increasing
    ``pods``, a non-increasing, concave curve (so that the exact model stays linear), and
    what the node already holds within its effective capacity. ``curve`` is (pods, cpu_milli)
    per point; errors name ``path.cpu_density.curve[i]``."""
    for i in range(1, len(curve)):
        (k0, y0), (k1, y1) = curve[i - 1], curve[i]
        at = f"{path}.cpu_density.curve[{i}]"
        if not v.require(k1 > k0, f"{at}.pods", k1, f"more than the previous point's {k0} pods"):
            return
        if not v.require(
            y1 <= y0,
            f"{at}.cpu_milli",
            y1,
            f"at most the previous point's {y0} milli-cores (capacity does not grow with pods)",
        ):
            return
        if i >= 2:
            kp, yp = curve[i - 2]
            # Concave: each segment's slope at most the previous one's, compared in integers.
            if not v.require(
                (y1 - y0) * (k0 - kp) <= (y0 - yp) * (k1 - k0),
                f"{at}.cpu_milli",
                y1,
                f"a concave curve: slope from point {i - 1} at most "
                f"{(y0 - yp) / (k0 - kp):.4g} milli-cores per pod (the previous segment's); a "
                "non-concave curve is not the minimum of its segments, which the exact model "
                "needs to stay linear",
            ):
                return
    points = tuple(CpuCapacityPoint(k, y) for k, y in curve)
    pieces = density_pieces(cpu_milli, overhead_milli_per_pod, points)
    if pieces and not fits(cpu_milli, pieces, cpu_milli_used, pods_used):
        v.add(
            f"{path}.cpu_milli_used",
            cpu_milli_used,
            "at most the effective CPU capacity at pods_used="
            f"{pods_used}: {float(effective_cpu_milli(cpu_milli, pieces, pods_used)):.0f} milli",
        )
