"""Embed placement in a Python program (the example of docs/library.md).

Builds a GPU-allocation instance in code, validates it, solves it with a deadline and a
progress callback, then solves it again and cancels that solve from another thread, and reads
the :class:`~placement.solver.Result` of both.

Run it with ``python docs/examples/embed.py``; tests/test_cli.py runs it too.
"""

from __future__ import annotations

import threading

from placement.models.gpu import FAMILY, GpuInstance, GpuJob, GpuNode, TopologyLevel
from placement.solver import (
    CancellationToken,
    Incumbent,
    InputError,
    Result,
    SolveOptions,
    solve,
)


def build_instance() -> GpuInstance:
    """Two racks of four 8-GPU nodes (A100 in rack 0, V100 in rack 1) and a mixed job list."""
    levels = [
        # Innermost first: NVLink domain, node, then one level per entry of GpuNode.groups.
        TopologyLevel("nvlink", bandwidth_gbps=300.0),
        TopologyLevel("node", bandwidth_gbps=64.0),
        TopologyLevel("rack", bandwidth_gbps=12.5),
    ]
    nodes = []
    for rack, gpu_type in enumerate(("A100", "V100")):
        for i in range(4):
            nodes.append(
                GpuNode(
                    name=f"r{rack}-n{i}",
                    gpu_type=gpu_type,
                    gpu_count=8,
                    gpu_memory_mib=40_960,
                    nvlink_domain_size=4,
                    cpu_milli=64_000,
                    memory_mib=512_000,
                    groups=(f"rack-{rack}",),
                    # Per-GPU usage by running work: node r0-n0 has GPU 0 half busy.
                    gpu_milli_used=(500 if (rack, i) == (0, 0) else 0,) + (0,) * 7,
                    gpu_memory_mib_used=(0,) * 8,
                )
            )
    jobs = [
        # A 2 x 8 A100 gang that must stay inside one rack, with heavy traffic.
        GpuJob(
            "llm-train",
            workers=2,
            gpus=8,
            gpu_types=("A100",),
            cpu_milli=16_000,
            memory_mib=128_000,
            priority=3,
            locality_level="rack",
            locality_required=True,
            traffic_gb=40.0,
        ),
        GpuJob("finetune", workers=1, gpus=4, cpu_milli=8_000, locality_level="nvlink"),
        GpuJob("vision", workers=4, gpus=2, gpu_types=("V100",), traffic_gb=5.0),
        *(GpuJob(f"notebook-{k}", gpu_milli=250, cpu_milli=2_000) for k in range(6)),
        GpuJob("etl", workers=3, cpu_milli=4_000, memory_mib=16_000),
        # 16 GPUs for one worker: no node has that many, so it can never be placed.
        GpuJob("big-gang", workers=1, gpus=16),
    ]
    return GpuInstance(levels=levels, nodes=nodes, jobs=jobs, name="embedded-demo")


def validated(instance: GpuInstance) -> GpuInstance:
    """The instance, after the same validation files get (``solve`` would also run it).

    Raises
    ------
    InputError
        Naming the bad field, e.g. ``gpu.jobs[3].locality_level``.
    """
    FAMILY.validate(instance)
    return instance


def on_incumbent(inc: Incumbent) -> None:
    """Progress callback: runs on a solver thread for every improving, checked solution."""
    gap = "" if inc.gap is None else f", gap {inc.gap:.1%}"
    print(
        f"  improving solution at {inc.time_s:.2f}s: objective {inc.objective:g}{gap} ({inc.source})"
    )


def report(result: Result) -> None:
    """Print what a Result says."""
    print(f"status: {result.status}")  # optimal | feasible | infeasible | no_solution
    print(f"stop reason: {result.stop_reason}")  # proven | time_limit | cancelled | ...
    # Every objective tier as the independent checker computed it, primary first.
    tiers = ", ".join(f"{name}={value:g}" for name, value in result.objective_terms.items())
    print(f"objective tiers: {tiers}")
    bound = "-" if result.bound is None else f"{result.bound:g}"
    gap = "-" if result.gap is None else f"{result.gap:.2%}"
    print(f"bound: {bound}, gap: {gap}, produced by: {result.backend}")
    for item in result.unplaced:
        print(f"unplaced: {item['name']} ({item['kind']}): {item['message']}")


def main() -> None:
    try:
        instance = validated(build_instance())
    except InputError as exc:
        raise SystemExit(f"bad instance: {exc}") from None

    # 1. A solve with a deadline and a progress callback.
    print("solve with a 5 s deadline:")
    result = solve(instance, SolveOptions(time_limit_s=5.0, on_incumbent=on_incumbent))
    report(result)
    placed = sorted(instance.jobs[j].name for j in result.solution.placed_jobs())
    print(f"placed: {', '.join(placed)}")

    # 2. A long solve stopped from another thread, e.g. by a UI's Stop button or a service
    #    shutting down: the solve returns at once with the best checked solution so far.
    print("solve again, cancelled from another thread after the first solution:")
    token = CancellationToken()
    first_solution = threading.Event()

    def stop_button() -> None:
        first_solution.wait()
        token.cancel()

    stopper = threading.Thread(target=stop_button, daemon=True)
    stopper.start()
    result = solve(
        instance,
        SolveOptions(
            time_limit_s=600.0, cancel=token, on_incumbent=lambda inc: first_solution.set()
        ),
    )
    stopper.join()
    print(
        f"cancelled from another thread: stop reason {result.stop_reason}, "
        f"status {result.status}, objective {result.objective:g}"
    )


if __name__ == "__main__":
    main()
