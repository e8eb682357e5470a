"""Small DAG instances whose optimum is known by hand (shared by the DAG tests)."""

from __future__ import annotations

from placement.models.dag import DagEdge, DagInstance, DagLink, DagMachine, DagTask
from placement.models.dag.instance import instance_from_message, instance_to_message


def build(instance: DagInstance) -> DagInstance:
    """The instance validated through its message, as files are."""
    return instance_from_message(instance_to_message(instance), name=instance.name)


def chain_with_transfer() -> DagInstance:
    """a -> b with 5 bytes at 1 B/s between machines. Both on m0: 2 + 2 = 4; both on m1:
    3 + 1 = 4; split: 2 + 5 + 1 = 8 or 3 + 5 + 2 = 10. Optimum 4."""
    return build(
        DagInstance(
            machines=[DagMachine("m0", "x"), DagMachine("m1", "y")],
            tasks=[
                DagTask("a", time_by_type_s={"x": 2, "y": 3}),
                DagTask("b", time_by_type_s={"x": 2, "y": 1}),
            ],
            edges=[DagEdge("a", "b", 5)],
            links=[DagLink("default", "default", 1.0)],
            name="chain",
        )
    )


def fork_join() -> DagInstance:
    """s -> {p, q} -> j on two identical machines, unit work except p = q = 4, 2 bytes per
    edge at 1 B/s. All on one machine: 1 + 4 + 4 + 1 = 10. With q on the other machine it
    starts at 1 + 2 and ends at 7; j there starts at max(7, 5 + 2) and ends at 8. The remote
    branch cannot end before 7, so the optimum is 8."""
    tasks = [DagTask("s", 1), DagTask("p", 4), DagTask("q", 4), DagTask("j", 1)]
    edges = [
        DagEdge("s", "p", 2),
        DagEdge("s", "q", 2),
        DagEdge("p", "j", 2),
        DagEdge("q", "j", 2),
    ]
    return build(
        DagInstance(
            machines=[DagMachine("m0"), DagMachine("m1")],
            tasks=tasks,
            edges=edges,
            links=[DagLink("default", "default", 1.0)],
            name="fork-join",
        )
    )


def grid_three_tasks() -> DagInstance:
    """Independent works 3, 3, 2 on two identical machines: optimum 5."""
    return build(
        DagInstance(
            machines=[DagMachine("m0"), DagMachine("m1")],
            tasks=[DagTask("a", 3), DagTask("b", 3), DagTask("c", 2)],
            name="grid",
        )
    )


def cumulative_slots() -> DagInstance:
    """One 2-slot machine: w holds 2 cores for 2 s, u and v one core each for 2 s: the two
    small ones run together, the wide one alone. Optimum 4."""
    return build(
        DagInstance(
            machines=[DagMachine("m0", slots=2)],
            tasks=[DagTask("w", 2, cores=2), DagTask("u", 2), DagTask("v", 2)],
            name="slots",
        )
    )


def data_locality() -> DagInstance:
    """A task reads 10 GB living in zone b. On a (speed 2) it waits 10 s for the data at
    1 GB/s and runs 5 s: 15; on b (speed 1) it runs 10 s. Optimum 10."""
    return build(
        DagInstance(
            machines=[DagMachine("fast", "f", 2.0, zone="a"), DagMachine("slow", "s", zone="b")],
            tasks=[DagTask("extract", 10, data_zone="b", data_bytes=1e10)],
            links=[DagLink("a", "b", 1e9)],
            name="locality",
        )
    )


def cost_under_limit(limit: float) -> DagInstance:
    """Work 10 on a slow machine (0.5 per second, 10 s: cost 5) or a fast one (2 per second,
    5 s: cost 10). With makespan_limit_s 12 the optimum is 5; with 6 it is 10."""
    return build(
        DagInstance(
            machines=[
                DagMachine("slow", "s", 1.0, cost_per_hour=1800.0),
                DagMachine("fast", "f", 2.0, cost_per_hour=7200.0),
            ],
            tasks=[DagTask("job", 10)],
            objective="cost",
            makespan_limit_s=limit,
            name=f"cost-{limit:g}",
        )
    )


def release_and_deadline() -> DagInstance:
    """r (release 3, work 2) and e (work 4, deadline 4) on one machine: e must run first
    (0-4), then r (4-6). Optimum 6."""
    return build(
        DagInstance(
            machines=[DagMachine("m0")],
            tasks=[DagTask("r", 2, release_s=3), DagTask("e", 4, deadline_s=4)],
            name="release",
        )
    )


def identical_lanes(slots: int) -> DagInstance:
    """a (4) and b (3) before c (5), and e (6) unconstrained, no transfers, on two one-slot
    machines or one two-slot machine: a then c on one lane (0-9), b then e on the other
    (0-9). The work, 18, over two lanes bounds it: optimum 9."""
    machines = [DagMachine("m0"), DagMachine("m1")] if slots == 1 else [DagMachine("m0", slots=2)]
    return build(
        DagInstance(
            machines=machines,
            tasks=[DagTask("a", 4), DagTask("b", 3), DagTask("c", 5), DagTask("e", 6)],
            edges=[DagEdge("a", "c"), DagEdge("b", "c")],
            name=f"lanes-{slots}",
        )
    )
