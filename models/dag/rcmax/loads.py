"""An assignment of tasks to machines with its machine loads: the search's state."""

from __future__ import annotations

import numpy as np

REL_EPS = 1e-9
"""Relative tolerance below which two loads count as equal (float sums of ETC values)."""


class Loads:
    """An assignment of tasks to machines with its machine loads, updated in place.

    Parameters
    ----------
    duration:
        (tasks, machines) running times, ``inf`` where a task may not run.
    machine:
        The machine of each task (every task on a machine where it may run).
    """

    def __init__(self, duration: np.ndarray, machine: np.ndarray) -> None:
        self.d = np.asarray(duration, dtype=float)
        n, k = self.d.shape
        self.a = np.asarray(machine, dtype=np.int64).copy()
        if self.a.shape != (n,) or np.any(self.a < 0) or np.any(self.a >= k):
            raise ValueError(f"machine must hold one machine in [0, {k}) for each of {n} tasks")
        self.own = self.d[np.arange(n), self.a]
        if not np.all(np.isfinite(self.own)):
            raise ValueError("the start assignment puts a task on a machine it cannot run on")
        self.load = np.bincount(self.a, weights=self.own, minlength=k).astype(float)

    @property
    def makespan(self) -> float:
        """The largest machine load."""
        return float(self.load.max())

    def move(self, t: int, m: int) -> None:
        """Put task ``t`` on machine ``m``."""
        self.load[self.a[t]] -= self.own[t]
        self.a[t], self.own[t] = m, self.d[t, m]
        self.load[m] += self.own[t]

    def assign(self, tasks: np.ndarray, machines: np.ndarray) -> None:
        """Put each of ``tasks`` on the matching machine and recompute every load exactly."""
        self.a[tasks] = machines
        n = len(self.a)
        self.own = self.d[np.arange(n), self.a]
        self.load = np.bincount(self.a, weights=self.own, minlength=len(self.load)).astype(float)

    def resync(self) -> None:
        """Recompute the loads from scratch (drops the drift of incremental updates)."""
        self.assign(np.arange(0), np.arange(0))
