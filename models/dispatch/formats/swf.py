"""The Standard Workload Format (SWF 2.2) of the Parallel Workloads Archive (Feitelson,
Tsafrir, Krakov, JPDC 2014), read into a dispatch instance.

Lines starting with ``;`` are the header (``MaxNodes``/``MaxProcs`` give the machine); each job
line has 18 whitespace-separated fields: 1 job id, 2 submit time (s), 4 run time (s), 5
allocated processors, 8 requested processors; -1 = unknown. A job becomes ``arrival = submit -
first submit``, ``size = run time`` (s, at least 1), ``cores = allocated`` (else requested)
processors. Jobs with an unknown or zero run time or processor count, or more processors than
a server has, are skipped and counted in the instance's description. The file may be gzipped.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from placement.models.dispatch.instance import DispatchInstance, DispatchJob, DispatchServer
from placement.solver.errors import InputError
from placement.solver.hooks import Importer, Parameter


def _lines(path: str) -> list[str]:
    p = Path(path)
    try:
        if p.suffix == ".gz":
            with gzip.open(p, "rt", encoding="utf-8", errors="replace") as f:
                return f.read().splitlines()
        return p.read_text(encoding="utf-8", errors="replace").splitlines()
    except (OSError, EOFError) as exc:
        raise InputError.single("path", path, f"a readable SWF file ({exc})", file=path) from None


def load_swf(
    path: str,
    servers: int = 1,
    cores: int = 0,
    limit: int = 0,
    skip: int = 0,
) -> DispatchInstance:
    """Read an SWF log: ``servers`` servers of ``cores`` cores each (0: the header's MaxProcs,
    else MaxNodes); the jobs after the first ``skip``, at most ``limit`` (0: all)."""
    header: dict[str, str] = {}
    rows: list[tuple[int, int, int, int]] = []
    for number, line in enumerate(_lines(path), start=1):
        text = line.strip()
        if not text:
            continue
        if text.startswith(";"):
            key, _, value = text[1:].partition(":")
            header[key.strip()] = value.strip()
            continue
        fields = text.split()
        if len(fields) < 8:
            raise InputError.single(
                f"line {number}", text[:60], "18 whitespace-separated SWF fields", file=path
            )
        try:
            job_id, submit, run, alloc, requested = (
                int(float(fields[0])),
                int(float(fields[1])),
                int(float(fields[3])),
                int(float(fields[4])),
                int(float(fields[7])),
            )
        except ValueError:
            raise InputError.single(
                f"line {number}", text[:60], "numeric SWF fields", file=path
            ) from None
        rows.append((job_id, submit, run, alloc if alloc > 0 else requested))
    if cores <= 0:
        for key in ("MaxProcs", "MaxNodes"):
            if header.get(key, "").split() and header[key].split()[0].isdigit():
                cores = int(header[key].split()[0])
                break
    if cores <= 0:
        raise InputError.single("cores", 0, "> 0 (the file's header names no MaxProcs/MaxNodes)")
    rows = rows[skip:]
    jobs: list[DispatchJob] = []
    skipped = 0
    first = None
    for job_id, submit, run, procs in rows:
        if limit and len(jobs) >= limit:
            break
        if run <= 0 or procs <= 0 or procs > cores or submit < 0:
            skipped += 1
            continue
        first = submit if first is None else first
        jobs.append(DispatchJob(f"job{job_id}", submit - first, run, procs))
    if not jobs:
        raise InputError.single("path", path, "an SWF log with at least one usable job", file=path)
    name = Path(path).name.split(".")[0]
    return DispatchInstance(
        [DispatchServer(f"node{k}", cores) for k in range(servers)],
        jobs,
        name=f"{name}-{len(jobs)}",
        description=(
            f"SWF log {Path(path).name}: {len(jobs)} jobs (after skipping the first {skip}; "
            f"{skipped} without run time or processors, or wider than a server, left out) on "
            f"{servers} server(s) of {cores} cores; times in seconds."
        ),
    )


IMPORTERS = (
    Importer(
        format="swf",
        family="dispatch",
        help="a Standard Workload Format log (Parallel Workloads Archive), .swf or .swf.gz",
        description=(
            "Read an SWF log: submit times become arrivals, run times sizes (s), allocated "
            "processors the cores a job needs; servers of --cores cores (default: the header's "
            "MaxProcs or MaxNodes)."
        ),
        parameters=(
            Parameter("path", "path", positional=True, metavar="LOG.swf", help="the SWF log"),
            Parameter("servers", "positive_int", 1, maximum=100_000, help="servers (default 1)"),
            Parameter(
                "cores",
                "non_negative_int",
                0,
                maximum=10**6,
                help="cores per server (default: from the header)",
            ),
            Parameter(
                "limit",
                "non_negative_int",
                0,
                maximum=10**6,
                help="at most this many jobs (default 0: all)",
            ),
            Parameter(
                "skip", "non_negative_int", 0, maximum=10**7, help="skip the first jobs of the log"
            ),
        ),
        build=lambda p: load_swf(p["path"], p["servers"], p["cores"], p["limit"], p["skip"]),
    ),
)
