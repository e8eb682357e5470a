"""A family-neutral integer linear model: bounded integer variables, linear rows, objectives.

A family builds its model once as a :class:`LinearModel` and each backend translates it
one-to-one (the GPU family's CP-SAT and MILP encodings do), so every backend solves exactly
the same mathematics. Rows keep integer coefficients (divided by their gcd), and
:meth:`LinearModel.violated_rows` checks an assignment against every row and bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

Values = Sequence[float]
"""An assignment: one value per model variable, by variable index."""


class LinearModel:
    """Integer variables with finite bounds and linear rows with integer coefficients."""

    def __init__(self) -> None:
        self.lb: list[int] = []
        self.ub: list[int] = []
        self.kind: list[str] = []
        self.rows: list[tuple[list[int], list[int], int | None, int | None]] = []
        self._csr: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def num_vars(self) -> int:
        """Number of variables."""
        return len(self.lb)

    def var(self, lb: int, ub: int, kind: str) -> int:
        """A new integer variable in ``[lb, ub]``; ``kind`` names its group (x, w, y, ...)."""
        self.lb.append(int(lb))
        self.ub.append(int(ub))
        self.kind.append(kind)
        return len(self.lb) - 1

    def row(self, terms: Sequence[tuple[int, int]], lo: int | None, hi: int | None) -> None:
        """Add ``lo <= sum(coef * var) <= hi`` (None = unbounded); merges repeated variables."""
        merged: dict[int, int] = {}
        for i, c in terms:
            merged[i] = merged.get(i, 0) + int(c)
        idx = [i for i, c in merged.items() if c != 0]
        if not idx:
            if (lo is not None and lo > 0) or (hi is not None and hi < 0):
                raise ValueError("an empty row that no assignment satisfies")
            return
        coef = [merged[i] for i in idx]
        # Every variable is integer: dividing by the gcd of the coefficients and rounding the
        # bounds inwards is exact, and keeps MiB-sized coefficients small for the solvers.
        g = math.gcd(*coef)
        if g > 1:
            coef = [c // g for c in coef]
            lo = None if lo is None else -((-lo) // g)
            hi = None if hi is None else hi // g
        self.rows.append((idx, coef, lo, hi))
        self._csr = None

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The rows as arrays (kept until the next row is added): ``starts`` (one per row and
        the end, so row k's terms are ``starts[k]:starts[k+1]``), variable indices,
        coefficients, and the rows' lower and upper sides (-inf / inf where open)."""
        if self._csr is None:
            starts = np.cumsum([0] + [len(r[0]) for r in self.rows])
            idx = np.fromiter((i for r in self.rows for i in r[0]), dtype=np.int64)
            coef = np.fromiter((c for r in self.rows for c in r[1]), dtype=np.float64)
            lo = np.array([-np.inf if r[2] is None else r[2] for r in self.rows], dtype=np.float64)
            hi = np.array([np.inf if r[3] is None else r[3] for r in self.rows], dtype=np.float64)
            self._csr = (starts, idx, coef, lo, hi)
        return self._csr

    def violated_rows(self, values: Values) -> list[int]:
        """Indices of rows (and -1 - index of variable bounds) that ``values`` violates."""
        v = np.asarray(values, dtype=np.float64)
        bad = np.flatnonzero((v < np.asarray(self.lb) - 1e-6) | (v > np.asarray(self.ub) + 1e-6))
        out = [-1 - int(i) for i in bad]
        if not self.rows:
            return out
        starts, idx, coef, lo, hi = self.csr()
        act = np.add.reduceat(v[idx] * coef, starts[:-1])
        tol = 1e-6 * np.maximum(1.0, np.abs(act))
        out.extend(np.flatnonzero((act < lo - tol) | (act > hi + tol)).tolist())
        return out


@dataclass
class Objective:
    """A linear objective over model variables: ``sum(coef * var) + constant``."""

    terms: dict[int, float] = field(default_factory=dict)
    constant: float = 0.0

    def add(self, var: int, coef: float) -> None:
        """Add ``coef * var``."""
        if coef:
            self.terms[var] = self.terms.get(var, 0) + coef

    def value(self, values: Values) -> float:
        """The objective at ``values``."""
        return self.constant + sum(c * values[i] for i, c in self.terms.items())

    @property
    def is_constant(self) -> bool:
        """True when no variable has a non-zero coefficient."""
        return not any(self.terms.values())
