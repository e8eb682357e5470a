"""The serving simulator's event loop on SimPy, to measure whether the library is fast enough
to replace the heapq loop (docs/formulations/serving.md, "Simulator").

:class:`SimpySimulation` keeps every scheduling rule of
:class:`placement.models.serving.replay.Simulation` and hands its events to a SimPy
``Environment`` instead of a heap (an arrival or an iteration's end is a ``timeout`` whose
callback runs the same handler), so both loops replay a stream to the same records.
``python -m placement.benchmarks.serving.simpy_loop`` times both on the same requests.
SimPy is optional: not a dependency of the package (it was not adopted; see the docs).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from placement.models.serving import generate
from placement.models.serving.replay import (
    Simulation,
    build_instances,
    poisson_requests,
)
from placement.models.serving.router import ConfiguredRouter
from placement.solver import SolveOptions, solve


class SimpySimulation(Simulation):
    """:class:`Simulation` with SimPy's event queue."""

    def __init__(self, instances: list[Any], router: object) -> None:
        import simpy  # optional: only this measurement needs it

        super().__init__(instances, router)
        self.env = simpy.Environment()

    def push(self, t: float, what: int, who: int) -> None:
        if what == self.DONE:
            self.instances[who].busy_until = t
        event = self.env.timeout(max(0.0, t - self.env.now))
        event.callbacks.append(lambda _e, w=what, i=who: self._fire(w, i))

    def _fire(self, what: int, who: int) -> None:
        self.now = self.env.now
        self.handle(what, who)

    def run(self, requests: list[Any]) -> tuple[list[Any], list[int]]:
        for req in requests:
            self.by_id[req.id] = req
            self.push(req.arrival_s, self.ARRIVE, req.id)
        self.env.run()
        return [self.records[i] for i in sorted(self.records)], self.rejected


def compare(count: int = 5000, seed: int = 1) -> dict[str, float]:
    """Replay ``count`` Poisson requests through the same configuration with both loops;
    the seconds each took and whether their records agree."""
    instance = generate(4, 8.0, 16, h100=8, budget=16, seed=seed)
    solution = solve(instance, SolveOptions(time_limit_s=10)).solution
    requests = poisson_requests(instance, count, seed=seed)
    out: dict[str, Any] = {}
    for name, cls in (("heapq", Simulation), ("simpy", SimpySimulation)):
        machines = build_instances(instance, solution)
        sim = cls(machines, ConfiguredRouter(instance, solution, machines))
        started = time.perf_counter()
        served, rejected = sim.run(requests)
        out[f"{name}_s"] = round(time.perf_counter() - started, 3)
        out[f"{name}_records"] = [(s.id, s.first_token_s, s.finish_s) for s in served], rejected
    out["same_records"] = out.pop("heapq_records") == out.pop("simpy_records")
    out["requests"] = count
    return out


if __name__ == "__main__":
    print(compare(int(sys.argv[1]) if len(sys.argv) > 1 else 5000))
