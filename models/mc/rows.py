"""The per-core rows of the exact models and their integer coefficients, shared by the
compact encodings (:mod:`.encoding`, :mod:`.cpsat`, :mod:`.milp`) and the pricing model of
column generation (:mod:`.colgen`); docs/formulations/mc.md, "Exact encodings"."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from placement.models.mc.instance import McInstance

EXACT_SCALE_LIMIT = 10**6
"""Largest common denominator used as the scale (the rows are then exact)."""
ROUNDED_SCALE = 10**6
"""The scale when the common denominator is larger (rounded rows + the exactness loop)."""


def _scaled(value: Fraction, scale: int, up: bool) -> int:
    v = value * scale
    return math.ceil(v) if up else math.floor(v)


def scaled_utilisations(
    instance: McInstance, items: dict[Any, tuple[int, Fraction]]
) -> tuple[int, bool, dict[Any, int], dict[Any, int], dict[Any, int], dict[Any, int]]:
    """The scale ``S`` and the scaled coefficients of every item (the exactness rule of
    :mod:`.encoding`: the common denominator if at most ``10^6``, else ``10^6`` rounded).

    ``items`` maps a key (the encodings' ``(task, core)`` pairs, or any other) to a task and
    a core speed, ``(task, speed)``. Returns ``(S, exact, lo, hl, hh, d)``, each table keyed
    like ``items``: LO tasks in ``lo`` (rounded down), HI tasks in ``hl``, ``hh`` (down) and
    ``d`` (up): the optimistic rounding when ``S`` is not the common denominator."""
    values: dict[Any, tuple[int, Fraction, Fraction]] = {}
    denominator = 1
    for key, (task, speed) in items.items():
        t = instance.tasks[task]
        lo, hi = t.u_lo / speed, t.u_hi / speed
        values[key] = (task, lo, hi)
        for f in (lo, hi):
            if denominator <= EXACT_SCALE_LIMIT:
                denominator = math.lcm(denominator, f.denominator)
    exact = denominator <= EXACT_SCALE_LIMIT
    scale = denominator if exact else ROUNDED_SCALE
    lo_, hl, hh, d = {}, {}, {}, {}
    for key, (task, lo, hi) in values.items():
        if instance.tasks[task].hi:
            hl[key] = _scaled(lo, scale, False)
            hh[key] = _scaled(hi, scale, False)
            d[key] = _scaled(hi - lo, scale, True)
        else:
            lo_[key] = _scaled(lo, scale, False)
    return scale, exact, lo_, hl, hh, d


def add_core_rows(
    cpm: Any,
    S: int,
    lo: list[tuple[Any, int]],
    hi: list[tuple[Any, int, int, int]],
    amc: bool,
) -> Any | None:
    """One core's rows of the model (docs/formulations/mc.md, "Exact encodings"), in units of
    ``1/S``: ``lo`` holds ``(x, l)`` per LO task that may use the core, ``hi`` holds
    ``(x, hl, hh, d)`` per HI task. Returns the EDF-VD slack expression (units of
    ``1/S^2``), or None under AMC-rtb (``amc``: only the utilisation rows, necessary for
    AMC-rtb; the no-good loop does the rest)."""
    L = sum(c * v for v, c in lo)
    HH = sum(hh * v for v, _, hh, _ in hi)
    HL = sum(hl * v for v, hl, _, _ in hi)
    cpm.add(L <= S)
    cpm.add(HH <= S)
    cpm.add(L + HL <= S)
    if amc:
        return None
    slack = S * S - S * L - S * HH
    if lo and hi:
        D = cpm.new_int_var(0, S, "")
        cpm.add(sum(d * v for v, _, _, d in hi) >= D)
        for v, c in lo:
            w = cpm.new_int_var(0, S, "")
            cpm.add(w <= D)
            cpm.add(w <= S * v)
            slack += c * w
    cpm.add(slack >= 0)
    return slack
