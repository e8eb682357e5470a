"""A live Slurm cluster through its own commands: read it as a GPU instance whose jobs are the
held pending jobs we manage, and apply a placement to it (``placement slurm schedule``).

Everything runs through ``run(argv) -> stdout`` (raising :class:`SlurmCommandError` on a
failed command), so the reading and the applying are tested on captured text.

Read: ``scontrol -d show node -o`` (nodes, GRES and what running jobs use: the importer's
:func:`~placement.models.gpu.formats.slurm.read_nodes`), ``scontrol show topology`` (the
switch tree of ``topology/tree``), ``scontrol show partition -o`` (each partition's nodes)
and ``scontrol show job -o`` (every job, with ``Switches=`` and ``OverSubscribe=`` that
``squeue --json`` of Slurm 22.05 lacks). Running jobs are used capacity (``CPUAlloc``,
``AllocMem``, ``GresUsed``); a job we released that has not started yet holds its
``ReqNodeList`` nodes' share too, so a second cycle never places onto it.

Managed: pending jobs held (``Priority=0``) in the partitions given (all by default). Each
becomes one GPU job: ``-N k --gres=gpu[:type]:g`` is ``k`` workers of ``g`` GPUs; CPUs and
memory per node from ``NumCPUs``, ``MinCPUsNode``, ``MinMemoryNode`` / ``MinMemoryCPU``;
``--switches=1[@wait]`` requires its nodes under one leaf switch (until the wait is over,
then preferred); ``--exclusive`` takes every CPU of its nodes. What the family cannot hold is
refused per job with a reason (:func:`refusal`), never placed differently from what was asked.

Order: first come, first served, as Slurm's ``priority/basic``: the oldest held job has the
highest priority in the family's first tier (:func:`queue_priorities`). There is no backfill
reservation: a cycle places what fits now (a reservation by the running jobs' time limits
was tried and measured worse on ``gpu-slurm``'s bursty streams).

Apply (:func:`apply`): ``scontrol update JobId=J ReqNodeList=... Comment="placement: placed
on ..."`` then ``scontrol release J``; a job left unplaced or refused stays held with
``Comment="placement: <kind>: <message>"``. A failed command leaves the job held and says why.
A ``--switches=1@wait`` job placed under several leaf switches (only once its wait, counted
from submission, is over) also gets ``Switches=0``: Slurm counts the wait from a job's first
scheduling attempt, for a held job its release, and would otherwise hold it the whole wait
again (measured: 31.7 s after release for a 30 s wait, 0.8 s with ``Switches=0``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from placement.models.gpu.formats.slurm import (
    _hosts,
    _pairs,
    _tree_groups,
    build_nodes,
    levels_of,
    read_nodes,
)
from placement.models.gpu.instance import (
    MAX_PRIORITY,
    GpuInstance,
    GpuJob,
    GpuNode,
    GpuSolution,
)
from placement.solver.errors import InputError
from placement.solver.family import validate

Run = Callable[[list[str]], str]
"""Runs one Slurm command (argv) and returns its standard output; raises
:class:`SlurmCommandError` when it fails."""

COMMENT_PREFIX = "placement:"
_MEM_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
_UNSET = ("", "(null)", "N/A", "None")


def job_key(job_id: int) -> str:
    """The GPU job's name for a Slurm job id (what the reasons name it by)."""
    return f"job{job_id}"


class SlurmCommandError(Exception):
    """A Slurm command failed: its argv and what it said."""


@dataclass(frozen=True)
class SlurmJob:
    """A pending job as ``scontrol show job -o`` prints it (the fields we read)."""

    job_id: int
    name: str
    state: str
    held: bool
    partitions: tuple[str, ...]
    fields: dict[str, str]

    @property
    def ours(self) -> bool:
        """Its Comment says placement set it (a ReqNodeList it has is then ours)."""
        return self.fields.get("Comment", "").startswith(COMMENT_PREFIX)


@dataclass
class ClusterView:
    """What one cycle read: the instance (its jobs the managed held jobs, named by job id),
    each managed job's Slurm record, the refused jobs with their reasons, and notes."""

    instance: GpuInstance
    managed: dict[str, SlurmJob]
    refused: dict[int, tuple[SlurmJob, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# -------------------------------------------------------------------------------------------
# Reading


def parse_topology(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """``scontrol show topology`` lines as the levels above the node and each node's switches
    (innermost first); no lines (``topology/none``): no levels.

    >>> levels, paths = parse_topology(
    ...     "SwitchName=l1 Level=0 LinkSpeed=1 Nodes=n[1-2]\\n"
    ...     "SwitchName=top Level=1 LinkSpeed=1 Nodes=n[1-2] Switches=l1\\n"
    ... )
    >>> levels, paths["n2"]
    (['switch1', 'switch2'], ['l1', 'top'])
    """
    switches: dict[str, tuple[list[str], list[str]]] = {}
    source = "scontrol show topology"
    for k, line in enumerate(text.splitlines(), start=1):
        kv = dict(_pairs(line.strip()))
        if "SwitchName" not in kv:
            continue
        where = f"line {k}"
        children = _hosts(kv["Switches"], source, where) if kv.get("Switches") else []
        # a switch above others lists all their nodes too: only leaves' Nodes= place nodes
        nodes = [] if children else _hosts(kv.get("Nodes", ""), source, where)
        switches[kv["SwitchName"]] = (children, nodes)
    if not switches:
        return [], {}
    return _tree_groups(switches, source)


def parse_jobs(text: str) -> list[SlurmJob]:
    """``scontrol show job -o``: one :class:`SlurmJob` per line."""
    out = []
    for line in text.splitlines():
        if not line.startswith("JobId="):
            continue
        kv = dict(_pairs(line))
        kv = {k: v.strip() for k, v in kv.items()}
        state = kv.get("JobState", "")
        out.append(
            SlurmJob(
                job_id=int(kv["JobId"]),
                name=kv.get("JobName", ""),
                state=state,
                held=state == "PENDING" and kv.get("Priority") == "0",
                partitions=tuple(p for p in kv.get("Partition", "").split(",") if p),
                fields=kv,
            )
        )
    return out


def parse_partitions(text: str) -> dict[str, list[str]]:
    """``scontrol show partition -o``: each partition's nodes."""
    out = {}
    for k, line in enumerate(text.splitlines(), start=1):
        kv = dict(_pairs(line))
        if "PartitionName" in kv:
            nodes = kv.get("Nodes", "")
            value = [] if nodes in _UNSET else _hosts(nodes, "scontrol show partition", f"{k}")
            out[kv["PartitionName"]] = value
    return out


def memory_mib(value: str) -> int:
    """A Slurm size (``4G``, ``8192M``, ``512``: MiB) in MiB.

    >>> memory_mib("4G"), memory_mib("1536"), memory_mib("0.5G")
    (4096, 1536, 512)
    """
    m = re.fullmatch(r"([0-9.]+)([KMGT]?)", value.strip())
    if m is None:
        raise ValueError(f"a size like 4G, not {value!r}")
    return int(round(float(m.group(1)) * _MEM_UNITS[m.group(2) or "M"]))


def duration_s(value: str) -> float:
    """A Slurm duration ``[D-]HH:MM:SS`` / ``MM:SS`` / ``MM`` in seconds.

    >>> duration_s("00:05:00"), duration_s("1-00:00:00"), duration_s("30")
    (300.0, 86400.0, 1800.0)
    """
    days, _, rest = value.rpartition("-")
    parts = [float(p) for p in rest.split(":")]
    if len(parts) == 1:
        parts = [0.0, parts[0], 0.0]
    while len(parts) < 3:
        parts.insert(0, 0.0)
    h, m, s = parts
    return (float(days) if days else 0.0) * 86400 + h * 3600 + m * 60 + s


def gres_gpus(value: str) -> tuple[int, str] | None:
    """GPUs per node and type of a ``TresPerNode`` value (``gres:gpu:a100:4``); None when the
    value asks for another GRES too.

    >>> gres_gpus("gres:gpu:4"), gres_gpus("gres:gpu:a100:2"), gres_gpus("")
    ((4, ''), (2, 'a100'), (0, ''))
    """
    gpus, gpu_type = 0, ""
    for item in value.split(","):
        if not item or item in _UNSET:
            continue
        fields = item.split(":")
        if fields[0] == "gres":
            fields = fields[1:]
        if not fields or fields[0] != "gpu":
            return None
        if len(fields) == 1:
            gpus += 1
        elif len(fields) == 2:
            if not fields[1].isdigit():
                return None
            gpus += int(fields[1])
        elif len(fields) == 3 and fields[2].isdigit():
            gpu_type, gpus = fields[1], gpus + int(fields[2])
        else:
            return None
    return gpus, gpu_type


def refusal(job: SlurmJob) -> str:
    """Why the job asks for what the GPU family cannot hold yet (``""``: nothing)."""
    f = job.fields
    checks = [
        ("ArrayJobId", "an array job"),
        ("HetJobId", "a heterogeneous job"),
        ("Dependency", "a dependency (it would not start when released)"),
        ("Features", "--constraint"),
        ("Licenses", "--licenses"),
        ("Reservation", "a reservation"),
        ("ExcNodeList", "--exclude"),
        ("TresPerJob", "--gpus (GPUs per job)"),
        ("TresPerTask", "--gpus-per-task"),
        ("TresPerSocket", "--gpus-per-socket"),
        ("CpusPerTres", "--cpus-per-gpu"),
        ("MemPerTres", "--mem-per-gpu"),
    ]
    for key, what in checks:
        if f.get(key, "") not in _UNSET:
            return f"{what} is not supported yet"
    if f.get("ReqNodeList", "") not in _UNSET and not job.ours:
        return "--nodelist is not supported yet (the node list is placement's to set)"
    if f.get("OverSubscribe", "OK") not in ("OK", "YES", "NO", "FORCE"):
        return f"--exclusive={f['OverSubscribe'].lower()} is not supported yet"
    if f.get("Contiguous", "0") != "0":
        return "--contiguous is not supported yet"
    if "-" in f.get("NumNodes", "1") and len(set(f["NumNodes"].split("-"))) > 1:
        return f"a node-count range (-N {f['NumNodes']}) is not supported yet"
    if len(job.partitions) > 1:
        return "several partitions are not supported yet"
    if gres_gpus(f.get("TresPerNode", "")) is None:
        return f"GRES other than GPUs ({f.get('TresPerNode')}) are not supported yet"
    switches = f.get("Switches", "")
    if switches and switches.split("@")[0] not in ("0", "1"):
        return f"--switches={switches} above 1 is not supported yet"
    return ""


def _job_shape(job: SlurmJob, node_cpus: set[int], now: float, priority: int = 1) -> GpuJob:
    """The GPU family's job for a held Slurm job :func:`refusal` passes."""
    f = job.fields
    workers = int(f.get("NumNodes", "1").split("-")[0])
    gpus, gpu_type = gres_gpus(f.get("TresPerNode", "")) or (0, "")
    total_cpus = int(f.get("NumCPUs", "1"))
    cpus = max(int(f.get("MinCPUsNode", "1")), -(-total_cpus // workers))
    if f.get("MinMemoryNode", "") not in _UNSET:
        mem = memory_mib(f["MinMemoryNode"])
    elif f.get("MinMemoryCPU", "") not in _UNSET:
        mem = memory_mib(f["MinMemoryCPU"]) * cpus
    else:
        mem = 0
    if f.get("OverSubscribe") == "NO":
        # --exclusive: every CPU of the node, so nothing else shares it
        cpus = max(node_cpus)
    locality_level, required = "", False
    switches = f.get("Switches", "")
    if switches.split("@")[0] == "1" and workers > 1:
        locality_level, required = "switch1", True
        _, _, wait = switches.partition("@")
        submitted = _epoch(f.get("SubmitTime", ""))
        if wait and submitted is not None and now - submitted > duration_s(wait):
            required = False  # Slurm's own rule: past the wait, any switches will do
    return GpuJob(
        name=job_key(job.job_id),
        workers=workers,
        gpus=gpus,
        cpu_milli=cpus * 1000,
        memory_mib=mem,
        gpu_types=(gpu_type,) if gpu_type else (),
        locality_level=locality_level,
        locality_required=required,
        traffic_gb=1.0 if workers > 1 else 0.0,
        priority=priority,
    )


def _epoch(value: str) -> float | None:
    try:
        return time.mktime(time.strptime(value, "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def read_cluster(
    run: Run, partitions: tuple[str, ...] = (), now: float | None = None
) -> ClusterView:
    """Read the live cluster as a GPU instance whose jobs are the managed held jobs.

    Raises
    ------
    SlurmCommandError
        A reading command failed.
    InputError
        Its output is not what Slurm prints.
    """
    now = time.time() if now is None else now
    levels_above, paths = parse_topology(run(["scontrol", "show", "topology"]))
    unread: set[str] = set()
    raw, excluded = read_nodes(
        "scontrol -d show node -o", unread, run(["scontrol", "-d", "show", "node", "-o"])
    )
    jobs = parse_jobs(run(["scontrol", "show", "job", "-o"]))
    part_nodes = parse_partitions(run(["scontrol", "show", "partition", "-o"]))
    notes = [f"node {n} left out (state {s})" for n, s in sorted(excluded.items())]
    by_name = {nd["name"]: nd for nd in raw}
    for job in jobs:
        if job.state == "PENDING" and not job.held and job.ours:
            _reserve(job, by_name, notes)
    nodes, _ = build_nodes(levels_above, paths, raw)
    if not nodes:
        raise InputError.single(
            "", "every node down or drained", "one usable node", file="scontrol show node"
        )
    usable = {n.name for n in nodes}
    node_cpus = {n.cpu_milli // 1000 for n in nodes}
    managed: dict[str, SlurmJob] = {}
    refused: dict[int, tuple[SlurmJob, str]] = {}
    gpu_jobs = []
    priority = queue_priorities(jobs)
    for job in jobs:
        if not job.held or (partitions and not set(job.partitions) & set(partitions)):
            continue
        why = refusal(job)
        part = job.partitions[0] if job.partitions else ""
        if not why and part in part_nodes and not usable <= set(part_nodes[part]):
            why = f"partition {part} does not span every node: not supported yet"
        if not why and job.fields.get("OverSubscribe") == "NO" and len(node_cpus) > 1:
            why = "--exclusive on nodes of different CPU counts is not supported yet"
        if not why and "switch1" not in levels_above and job.fields.get("Switches", "")[:1] == "1":
            why = "--switches on a cluster without a switch tree"
        if why:
            refused[job.job_id] = (job, why)
            continue
        gpu_job = _job_shape(job, node_cpus, now, priority[job.job_id])
        try:
            # a job the family rejects (its own checks of a job's fields) is refused alone
            validate(_instance(levels_above, nodes, [gpu_job]))
        except InputError as exc:
            refused[job.job_id] = (job, f"the GPU family rejects it: {exc}")
            continue
        gpu_jobs.append(gpu_job)
        managed[job_key(job.job_id)] = job
    instance = _instance(levels_above, nodes, gpu_jobs)
    validate(instance)
    return ClusterView(instance, managed, refused, notes)


def queue_priorities(jobs: list[SlurmJob]) -> dict[int, int]:
    """Each held job's priority in the GPU family's first tier: first come, first served, as
    Slurm's ``priority/basic`` orders its queue (a held job's own ``Priority`` is 0). The
    oldest held job (by ``SubmitTime``, then id) gets :data:`MAX_PRIORITY`, each later one 1
    less, never below 1; so where an older job and younger ones compete for the same GPUs,
    the older wins unless the younger ones place more GPUs by more than the difference."""
    held = sorted(
        (j for j in jobs if j.held),
        key=lambda j: (_epoch(j.fields.get("SubmitTime", "")) or float("inf"), j.job_id),
    )
    return {j.job_id: max(1, MAX_PRIORITY - rank) for rank, j in enumerate(held)}


def _instance(levels_above: list[str], nodes: list[GpuNode], jobs: list[GpuJob]) -> GpuInstance:
    return GpuInstance(
        levels=levels_of(levels_above),
        nodes=nodes,
        jobs=jobs,
        name="slurm-live",
        description=f"live Slurm cluster: {len(nodes)} nodes, {len(jobs)} held jobs",
    )


def _reserve(job: SlurmJob, by_name: dict[str, dict[str, Any]], notes: list[str]) -> None:
    """A job we released that has not started: its share of its ``ReqNodeList`` nodes is
    taken (the lowest free GPU indices), as the running jobs' is."""
    req = job.fields.get("ReqNodeList", "")
    if req in _UNSET:
        return
    names = _hosts(req, "scontrol show job", f"JobId={job.job_id}")
    shape = _job_shape(job, {nd["cpus"] for nd in by_name.values()} or {1}, 0.0)
    for name in names:
        nd = by_name.get(name)
        if nd is None:
            continue
        free = [g for g in range(nd["gpus"]) if g not in nd["used"]]
        nd["used"] = sorted(set(nd["used"]) | set(free[: shape.gpus]))
        nd["cpu_alloc"] = min(nd["cpus"], nd["cpu_alloc"] + shape.cpu_milli // 1000)
        nd["mem_alloc"] = min(nd["memory_mib"], nd["mem_alloc"] + shape.memory_mib)
    notes.append(f"job {job.job_id}: released, not started yet: holds {req}")


# -------------------------------------------------------------------------------------------
# The plan and applying it


@dataclass(frozen=True)
class Decision:
    """What one cycle does to one managed job: place it on ``nodes`` or keep it held with
    ``reason`` (``placement: <kind>: <message>``)."""

    job_id: int
    name: str
    nodes: tuple[str, ...] = ()
    reason: str = ""


def plan(
    view: ClusterView,
    solution: GpuSolution | None,
    unplaced: list[dict[str, Any]],
    no_solution: str = "the solver found no solution this cycle",
) -> list[Decision]:
    """A decision per managed or refused job, in job-id order; without a solution every
    managed job is kept held with ``no_solution: <no_solution>``."""
    inst = view.instance
    reasons = {u.get("name", u.get("job")): f"{u['kind']}: {u['message']}" for u in unplaced}
    out = []
    for j, gjob in enumerate(inst.jobs):
        sjob = view.managed[gjob.name]
        workers = solution.placements.get(j) if solution is not None else None
        if workers:
            names = tuple(inst.nodes[w.node].name for w in workers)
            out.append(Decision(sjob.job_id, sjob.name, nodes=names))
        else:
            why = reasons.get(gjob.name, f"no_solution: {no_solution}")
            out.append(Decision(sjob.job_id, sjob.name, reason=why))
    for sjob, why in view.refused.values():
        out.append(Decision(sjob.job_id, sjob.name, reason=f"unsupported: {why}"))
    return sorted(out, key=lambda d: d.job_id)


def comment(text: str) -> str:
    """A ``Comment=`` value: ``placement: TEXT`` on one line, without ``=`` or quotes (which
    ``scontrol show job -o`` could not print back unambiguously), at most 200 characters."""
    clean = " ".join(re.sub(r"[=\"']", " ", text).split())
    return f"{COMMENT_PREFIX} {clean}"[:200].rstrip()


def apply(run: Run, decisions: list[Decision], view: ClusterView) -> list[str]:
    """Carry the decisions out; one log line per job (what was done, or why it failed).

    A placed job gets ``ReqNodeList`` and a Comment saying so, then is released; a failed
    command leaves it held with the failure in its Comment. A kept job gets its reason in its
    Comment, written only when it differs from the one it has."""
    log = []
    for d in decisions:
        job = view.managed.get(job_key(d.job_id)) or view.refused[d.job_id][0]
        jid = str(d.job_id)
        if d.nodes:
            nodelist = ",".join(d.nodes)
            said = f"placed on {nodelist}"
            update = ["scontrol", "update", f"JobId={jid}", f"ReqNodeList={nodelist}"]
            if _switch_wait_over(job, d.nodes, view):
                # Slurm counts a --switches wait from the job's first scheduling attempt,
                # which for a held job is its release: it would hold the job the whole wait
                # again before running it on these leaves. The wait was over (counted from
                # submission, as for a job never held), so the limit goes.
                update.append("Switches=0")
                said += f" (--switches={job.fields['Switches']} waited out: cleared)"
            try:
                run([*update, f"Comment={comment(said)}"])
                run(["scontrol", "release", jid])
            except SlurmCommandError as exc:
                # the job is still held (an update or release that failed changed nothing
                # we rely on: a ReqNodeList of ours is redone next cycle)
                why = comment(f"failed: {exc}")
                try:
                    run(["scontrol", "update", f"JobId={jid}", f"Comment={why}"])
                except SlurmCommandError as exc2:
                    why += f" (and writing this reason failed: {exc2})"
                log.append(f"job {jid} ({d.name}): held: {why}")
                continue
            log.append(f"job {jid} ({d.name}): placed on {nodelist}, released")
            continue
        text = comment(d.reason)
        if job.fields.get("Comment", "") == text.strip():
            log.append(f"job {jid} ({d.name}): held (unchanged): {text}")
            continue
        try:
            run(["scontrol", "update", f"JobId={jid}", f"Comment={text}"])
            log.append(f"job {jid} ({d.name}): held: {text}")
        except SlurmCommandError as exc:
            log.append(f"job {jid} ({d.name}): held; writing its reason failed: {exc}")
    return log


def _switch_wait_over(job: SlurmJob, nodes: tuple[str, ...], view: ClusterView) -> bool:
    """The job asks ``--switches=1`` and is placed under more than one leaf switch (which
    the shape allows only once its wait is over)."""
    if job.fields.get("Switches", "").split("@")[0] != "1":
        return False
    groups = {n.name: n.groups for n in view.instance.nodes}
    leaves = {groups[n][0] for n in nodes if groups.get(n)}
    return len(leaves) > 1


def describe(decisions: list[Decision]) -> list[str]:
    """The plan, one line per job, as a dry run prints it."""
    out = []
    for d in decisions:
        if d.nodes:
            out.append(f"job {d.job_id} ({d.name}): place on {','.join(d.nodes)}")
        else:
            out.append(f"job {d.job_id} ({d.name}): keep held: {comment(d.reason)}")
    return out
