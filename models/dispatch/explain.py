"""Why a job waited: the jobs ahead of it on its server.

A dispatch schedule serves every job (the instance refuses a job no server fits), so the
family has no unplaced work to explain; what a reader asks is why a response time is long.
"""

from __future__ import annotations

from typing import Any

from placement.models.dispatch.instance import DispatchInstance, DispatchSolution


def explain_waits(
    instance: DispatchInstance, solution: DispatchSolution, worst: int = 5
) -> list[dict[str, Any]]:
    """For the ``worst`` jobs by wait (start - arrival): the server, the wait, and the jobs
    dispatched there before it that had not ended when it arrived (its queue on arrival)."""
    waits = sorted(
        range(len(instance.jobs)),
        key=lambda j: (-(solution.start[j] - instance.jobs[j].arrival), j),
    )
    out = []
    for j in waits[:worst]:
        job, s = instance.jobs[j], solution.server_of[j]
        wait = solution.start[j] - job.arrival
        if wait <= 0:
            break
        ahead = [
            instance.jobs[i].name
            for i in range(len(instance.jobs))
            if solution.server_of[i] == s
            and (instance.jobs[i].arrival, i) < (job.arrival, j)
            and solution.start[i] + instance.service[i][s] > job.arrival
        ]
        out.append(
            {
                "name": job.name,
                "kind": "queued",
                "message": f"waited {wait} on {instance.servers[s].name!r} behind "
                f"{len(ahead)} job(s) dispatched there before it",
                "server": instance.servers[s].name,
                "wait": wait,
                "ahead": ahead,
            }
        )
    return out
