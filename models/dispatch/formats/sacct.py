"""Slurm accounting CSV (``sacct``) as EPCC publishes Cirrus's
(``JobID,NCPUS,NNodes,Submit,Start,End,ElapsedRaw,State``, Unix seconds), read into a dispatch
instance.

A job becomes ``arrival = Submit - first Submit``, ``size = ElapsedRaw`` (s, at least 1),
``cores = NCPUS``. Jobs that never started (``Start`` ``None``) and jobs wider than one server
(multi-node jobs: a dispatch job runs on one server) are left out and counted in the
description. The cluster is ``--servers`` nodes of ``--cores`` cores (Cirrus: 280 CPU nodes of
36 cores).
"""

from __future__ import annotations

import csv
from pathlib import Path

from placement.models.dispatch.instance import DispatchInstance, DispatchJob, DispatchServer
from placement.solver.errors import InputError
from placement.solver.hooks import Importer, Parameter

COLUMNS = ("JobID", "NCPUS", "Submit", "Start", "ElapsedRaw")


def load_sacct(path: str, servers: int = 280, cores: int = 36, limit: int = 0) -> DispatchInstance:
    """Read a sacct CSV onto ``servers`` servers of ``cores`` cores; at most ``limit`` jobs."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError.single(
                    "header",
                    ",".join(reader.fieldnames or []),
                    "columns " + ",".join(COLUMNS),
                    file=path,
                )
            rows = list(reader)
    except OSError as exc:
        raise InputError.single("path", path, f"a readable CSV file ({exc})", file=path) from None
    parsed = []
    for number, row in enumerate(rows, start=2):
        if row["Start"] in ("None", "", "Unknown"):
            parsed.append(None)
            continue
        try:
            parsed.append(
                (row["JobID"], int(row["Submit"]), int(row["ElapsedRaw"]), int(row["NCPUS"]))
            )
        except ValueError:
            raise InputError.single(
                f"line {number}",
                ",".join(str(v) for v in row.values())[:60],
                "integer Submit, ElapsedRaw and NCPUS",
                file=path,
            ) from None
    never = sum(1 for p in parsed if p is None)
    usable = sorted((p for p in parsed if p is not None), key=lambda p: p[1])
    wide = sum(1 for p in usable if p[3] > cores)
    usable = [p for p in usable if 0 < p[3] <= cores]
    if limit:
        usable = usable[:limit]
    if not usable:
        raise InputError.single("path", path, "a sacct CSV with at least one usable job", file=path)
    first = usable[0][1]
    jobs = [
        DispatchJob(f"job{jid}", submit - first, max(1, run), ncpus)
        for jid, submit, run, ncpus in usable
    ]
    return DispatchInstance(
        [DispatchServer(f"node{k}", cores) for k in range(servers)],
        jobs,
        name=f"{Path(path).stem}-{len(jobs)}",
        description=(
            f"Slurm sacct {Path(path).name}: {len(jobs)} jobs ({never} never started and "
            f"{wide} wider than one {cores}-core node left out) on {servers} nodes of {cores} "
            f"cores; times in seconds."
        ),
    )


IMPORTERS = (
    Importer(
        format="sacct",
        family="dispatch",
        help="a Slurm sacct CSV (JobID,NCPUS,NNodes,Submit,Start,End,ElapsedRaw,State)",
        description=(
            "Read Slurm accounting records as EPCC publishes Cirrus's: submit times become "
            "arrivals, elapsed times sizes (s), NCPUS the cores; single-node jobs only."
        ),
        parameters=(
            Parameter("path", "path", positional=True, metavar="JOBS.csv", help="the CSV"),
            Parameter(
                "servers",
                "positive_int",
                280,
                maximum=100_000,
                help="nodes (default 280, Cirrus's CPU nodes)",
            ),
            Parameter(
                "cores", "positive_int", 36, maximum=10**6, help="cores per node (default 36)"
            ),
            Parameter(
                "limit",
                "non_negative_int",
                0,
                maximum=10**6,
                help="at most this many jobs (default 0: all)",
            ),
        ),
        build=lambda p: load_sacct(p["path"], p["servers"], p["cores"], p["limit"]),
    ),
)
