"""A start solution (an earlier answer, by names) adapted to the instance being solved.

Each placed job of the start is kept if its job and nodes still exist, its gang size and GPU
indices still fit them, and, taken with the jobs kept before it (higher priority first), the
checker still accepts it; every other job is dropped with the reason. The jobs the start does
not place (new to the instance, dropped, or unplaced then) are then placed by best fit on the
capacity the kept ones leave (:func:`~placement.models.gpu.greedy.complete`), and the exact
backends, hinted with the result, improve on it.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from placement.models.gpu.check import check
from placement.models.gpu.greedy import complete
from placement.models.gpu.instance import GpuInstance, GpuSolution, WorkerPlacement
from placement.solver.family import StartAdaptation, keep_while_feasible, known_pieces


def _workers(
    instance: GpuInstance, name: str, j: int, msg_workers: Any
) -> tuple[tuple[WorkerPlacement, ...] | None, str]:
    """The typed workers of one job of the start, or None and why they do not apply."""
    job = instance.jobs[j]
    if len(msg_workers) != job.workers:
        return None, f"job {name!r}: {len(msg_workers)} workers in the start, now {job.workers}"
    workers = []
    for wp in msg_workers:
        n = instance.node_index.get(wp.node)
        if n is None:
            return None, f"job {name!r}: node {wp.node!r} gone"
        node = instance.nodes[n]
        gpus = tuple(int(g) for g in wp.gpus)
        beyond = [g for g in gpus if not 0 <= g < node.gpu_count]
        if beyond:
            return None, (
                f"job {name!r}: on GPU {beyond[0]} of node {node.name!r}, "
                f"which now has {node.gpu_count} GPUs"
            )
        workers.append(WorkerPlacement(n, gpus))
    return tuple(workers), ""


def adapt_start(instance: GpuInstance, msg: Any) -> StartAdaptation:
    """What of a ``placement.v1.GpuSolution`` the instance admits (see the module)."""
    dropped: list[tuple[str, str]] = []
    pieces: list[tuple[str, tuple[int, tuple[WorkerPlacement, ...]]]] = []
    for jp, name, j in known_pieces(
        msg.placements, lambda jp: jp.job, instance.job_index, "job", "placed twice", dropped
    ):
        workers, why = _workers(instance, name, j, jp.workers)
        if workers is None:
            dropped.append((name, why))
        else:
            pieces.append((name, (j, workers)))
    # Higher priority first: where the changed cluster no longer holds every kept job, the
    # lower-priority ones give way.
    pieces.sort(key=lambda p: (-instance.jobs[p[1][0]].priority, p[1][0]))
    solution, kept, conflicts = keep_while_feasible(
        partial(check, instance), lambda ps: GpuSolution(dict(ps)), pieces
    )
    # The jobs the start does not place (new, dropped, unplaced then) by best fit on the
    # capacity it leaves, so the start competes with the heuristics' full solutions.
    completed = complete(instance, solution)
    added = len(completed.placements) - len(solution.placements)
    note = ""
    if added and check(instance, completed).feasible:
        solution, note = completed, f"{added} more job(s) placed by best fit"
    return StartAdaptation(solution, len(msg.placements), len(kept), dropped + conflicts, note)
