"""What each node has left while a one-gang-at-a-time peer (:mod:`.peers.kueue_tas`,
:mod:`.peers.kai`) places workers: free GPU shares and memory per GPU, CPU, memory."""

from __future__ import annotations

from placement.models.gpu.instance import MILLI, GpuInstance, GpuJob, WorkerPlacement


class Remaining:
    """What each node has free, updated as the peers place workers one at a time."""

    def __init__(self, instance: GpuInstance) -> None:
        self.instance = instance
        self.milli = [list(MILLI - u for u in n.gpu_milli_used) for n in instance.nodes]
        self.gpu_mem = [
            [n.gpu_memory_mib - u for u in n.gpu_memory_mib_used] for n in instance.nodes
        ]
        self.cpu = [n.cpu_milli_free for n in instance.nodes]
        self.mem = [n.memory_mib_free for n in instance.nodes]

    def count_in(self, n: int, job: GpuJob) -> int:
        """How many of the job's workers fit in node ``n`` (``Requests.CountIn``)."""
        node = self.instance.nodes[n]
        limits = []
        if job.cpu_milli:
            limits.append(self.cpu[n] // job.cpu_milli)
        if job.memory_mib:
            limits.append(self.mem[n] // job.memory_mib)
        if job.kind != "cpu":
            if not job.allows(node.gpu_type):
                return 0
            if job.kind == "whole":
                whole = sum(
                    1
                    for g, m in enumerate(self.milli[n])
                    if m == MILLI and self.gpu_mem[n][g] >= job.gpu_memory_mib
                )
                limits.append(whole // job.gpus)
            else:
                limits.append(
                    sum(
                        min(
                            m // job.gpu_milli,
                            self.gpu_mem[n][g] // job.gpu_memory_mib if job.gpu_memory_mib else m,
                        )
                        for g, m in enumerate(self.milli[n])
                    )
                )
        return min(limits) if limits else len(self.instance.jobs) + 1

    def copy(self) -> Remaining:
        """An independent copy (a gang is tried on it and kept only if it fits whole)."""
        other = Remaining.__new__(Remaining)
        other.instance = self.instance
        other.milli = [list(m) for m in self.milli]
        other.gpu_mem = [list(m) for m in self.gpu_mem]
        other.cpu = list(self.cpu)
        other.mem = list(self.mem)
        return other

    def free_gpus(self, n: int) -> float:
        """Free GPU capacity of node ``n`` in GPUs (shares summed)."""
        return sum(self.milli[n]) / MILLI

    def take(self, n: int, job: GpuJob) -> WorkerPlacement:
        """One worker of ``job`` on node ``n``: the lowest free GPUs, or the fullest shared GPU."""
        self.cpu[n] -= job.cpu_milli
        self.mem[n] -= job.memory_mib
        gpus: tuple[int, ...] = ()
        if job.kind == "whole":
            free = [
                g
                for g, m in enumerate(self.milli[n])
                if m == MILLI and self.gpu_mem[n][g] >= job.gpu_memory_mib
            ]
            gpus = tuple(free[: job.gpus])
            for g in gpus:
                self.milli[n][g] = 0
                self.gpu_mem[n][g] -= job.gpu_memory_mib
        elif job.kind == "fractional":
            room = [
                g
                for g, m in enumerate(self.milli[n])
                if m >= job.gpu_milli and self.gpu_mem[n][g] >= job.gpu_memory_mib
            ]
            g = min(room, key=lambda g: (self.milli[n][g], g))
            self.milli[n][g] -= job.gpu_milli
            self.gpu_mem[n][g] -= job.gpu_memory_mib
            gpus = (g,)
        return WorkerPlacement(n, gpus)
