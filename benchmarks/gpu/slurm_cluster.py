"""A real Slurm cluster on loopback for the tests and the ``gpu-slurm`` benchmark: ``munged``, ``slurmctld`` and one ``slurmd``
per node, all in one temporary directory (configuration, keys, state, spool, logs), on
free-picked ports, each daemon in the foreground as our child and torn down by its PID.

Debian's ``slurm-wlm`` and ``munge`` packages (``.ci/run`` installs them where absent); the
daemons run as root (``SlurmUser=root``; ``munged --force``), so the cluster needs root. The
nodes may declare more CPUs, memory and GPUs than the machine has (``SlurmdParameters=
config_overrides``); their GPUs are GRES backed by device files made in the temporary
directory (``AutoDetect=off``); the switches are a ``topology/tree``. Every Slurm command
reads ``SLURM_CONF`` from :attr:`env`.

It is shipped code (not a test helper) because ``placement bench gpu-slurm`` starts one at
run time; :func:`tree` builds the nodes and the two-level switch tree of a given shape.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DAEMONS = ("munged", "slurmctld", "slurmd")
COMMANDS = ("sinfo", "scontrol", "sbatch", "squeue", "scancel")
SKIP_REASON = "slurm-wlm and munge not installed: apt-get install slurm-wlm munge (the CI does)"
SCHEDULER_PARAMETERS = "sched_interval=2,bf_interval=2"
"""The default ``SchedulerParameters``: a scheduling pass every 2 s besides the ones a submit
or release triggers."""
START_TIMEOUT = 60.0
"""Seconds for every node to come up idle (a few on an idle machine)."""


def _find(name: str) -> str | None:
    return shutil.which(name) or next(
        (p for d in ("/usr/sbin", "/sbin") if os.access(p := f"{d}/{name}", os.X_OK)), None
    )


def missing() -> str | None:
    """Why a cluster cannot start here (None when it can)."""
    absent = [n for n in DAEMONS + COMMANDS if _find(n) is None]
    if absent:
        return f"{SKIP_REASON}; missing: {', '.join(absent)}"
    if os.geteuid() != 0:
        return "the Slurm test cluster runs its daemons as root (SlurmUser=root): run as root"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fake_device(path: Path) -> None:
    """A GPU's ``File=`` for gres.conf: a character device like /dev/null (slurmd logs an
    error for a plain file, but takes it), else a plain file."""
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except OSError:
        path.touch()


def alive(pid: int) -> bool:
    """The process runs (a zombie has ended: its reaper, maybe PID 1, has not looked yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


@dataclass(frozen=True)
class Node:
    """One node of the test cluster: what slurm.conf declares for it."""

    name: str
    gpus: int = 4
    gpu_type: str = "a100"
    cpus: int = 16
    memory_mib: int = 65536


def tree(
    leaves: int, nodes_per_leaf: int, gpus: int = 4, cpus: int = 16
) -> tuple[list[Node], dict[str, list[str]]]:
    """Nodes ``n1..nN`` (N = ``leaves * nodes_per_leaf``) of ``gpus`` GPUs and ``cpus`` CPUs
    under leaf switches ``leaf1..`` of ``nodes_per_leaf`` consecutive nodes, all under one
    ``spine``: the arguments of :class:`SlurmCluster`.

    >>> nodes, switches = tree(2, 2)
    >>> [n.name for n in nodes], switches["leaf2"], switches["spine"]
    (['n1', 'n2', 'n3', 'n4'], ['n3', 'n4'], ['leaf1', 'leaf2'])
    """
    nodes = [Node(f"n{k}", gpus=gpus, cpus=cpus) for k in range(1, leaves * nodes_per_leaf + 1)]
    switches = {
        f"leaf{s + 1}": [n.name for n in nodes[s * nodes_per_leaf : (s + 1) * nodes_per_leaf]]
        for s in range(leaves)
    }
    switches["spine"] = list(switches)
    return nodes, switches


class SlurmCluster:
    """``with SlurmCluster(tmp_dir, nodes, switches) as c:`` a running cluster.

    ``switches`` maps a switch name to its children: node names (a leaf switch, ``Nodes=``)
    or switch names (``Switches=``), as topology.conf(5) of ``topology/tree`` has them.
    ``scheduler_parameters`` is slurm.conf's ``SchedulerParameters``; ``min_job_age_s`` its
    ``MinJobAge`` (how long a finished job stays visible).
    """

    def __init__(
        self,
        tmp_dir: Path,
        nodes: list[Node],
        switches: dict[str, list[str]] | None = None,
        partition: str = "gpu",
        scheduler_parameters: str = SCHEDULER_PARAMETERS,
        min_job_age_s: int = 300,
    ) -> None:
        self.dir = Path(tmp_dir)
        self.nodes = list(nodes)
        self.switches = dict(switches or {})
        self.partition = partition
        self.scheduler_parameters = scheduler_parameters
        self.min_job_age_s = min_job_age_s
        self.conf = self.dir / "slurm.conf"
        self.topology_conf = self.dir / "topology.conf"
        self.munge_socket = self.dir / "munge" / "munge.sock"
        if len(str(self.munge_socket)) > 100:
            raise ValueError(f"{self.dir} is too long a path for a unix socket under it")
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        for key in [k for k in self.env if k.startswith(("SLURM_", "SBATCH_", "SQUEUE_"))]:
            if key != "SLURM_CONF":
                del self.env[key]  # a job's own variables would steer our commands
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, Path] = {}

    # -- configuration ---------------------------------------------------------------------

    def _write_files(self) -> None:
        d = self.dir
        for sub in ("munge", "state", "spool", "log", "dev"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        (d / "munge").chmod(0o700)
        key = d / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self.ctld_port = free_port()
        lines = [
            "ClusterName=placement-test",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={d / 'spool' / '%n'}",
            f"SlurmctldPidFile={d / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'slurmd.%n.pid'}",
            f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'log' / 'slurmd.%n.log'}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "SlurmdParameters=config_overrides",
            "ProctrackType=proctrack/pgid",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none",
            "ReturnToService=2",
            "SchedulerType=sched/backfill",
            f"SchedulerParameters={self.scheduler_parameters}",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "DefMemPerCPU=1024",
            "GresTypes=gpu",
            "TopologyPlugin=topology/tree" if self.switches else "TopologyPlugin=topology/none",
            "SlurmdTimeout=60",
            "MessageTimeout=20",
            "InactiveLimit=0",
            # how long a finished job stays visible to scontrol show job
            f"MinJobAge={self.min_job_age_s}",
            "KillWait=1",
        ]
        gres = ["AutoDetect=off"]
        for n in self.nodes:
            gres_field = f" Gres=gpu:{n.gpu_type}:{n.gpus}" if n.gpus else ""
            lines.append(
                f"NodeName={n.name} NodeHostname=localhost NodeAddr=127.0.0.1 "
                f"Port={free_port()} CPUs={n.cpus} RealMemory={n.memory_mib}{gres_field} "
                "State=UNKNOWN"
            )
            if n.gpus:
                for k in range(n.gpus):
                    _fake_device(d / "dev" / f"{n.name}-gpu{k}")
                files = f"{d / 'dev'}/{n.name}-gpu[0-{n.gpus - 1}]"
                gres.append(f"NodeName={n.name} Name=gpu Type={n.gpu_type} File={files}")
        names = ",".join(n.name for n in self.nodes)
        lines.append(
            f"PartitionName={self.partition} Nodes={names} Default=YES MaxTime=INFINITE State=UP"
        )
        self.conf.write_text("\n".join(lines) + "\n")
        (d / "gres.conf").write_text("\n".join(gres) + "\n")
        topo = []
        for name, children in self.switches.items():
            kind = "Switches" if all(c in self.switches for c in children) else "Nodes"
            topo.append(f"SwitchName={name} {kind}={','.join(children)}")
        self.topology_conf.write_text("\n".join(topo) + "\n")

    # -- daemons ---------------------------------------------------------------------------

    def _start(self, label: str, argv: list[str], log: Path) -> None:
        self.logs[label] = log
        out = open(self.dir / "log" / f"{label}.out", "wb")  # noqa: SIM115 - the child's
        self.procs[label] = subprocess.Popen(
            argv,
            env=self.env,
            cwd=self.dir,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        out.close()

    def start(self) -> SlurmCluster:
        self._write_files()
        d = self.dir
        self._start(
            "munged",
            [
                _find("munged") or "munged",
                "--foreground",
                "--force",
                f"--socket={self.munge_socket}",
                f"--key-file={d / 'munge' / 'munge.key'}",
                f"--pid-file={d / 'munge' / 'munged.pid'}",
                f"--log-file={d / 'log' / 'munged.log'}",
                f"--seed-file={d / 'munge' / 'munged.seed'}",
                "--num-threads=2",
            ],
            d / "log" / "munged.log",
        )
        self._wait(lambda: self.munge_socket.exists(), 15, "munged to open its socket")
        self._start(
            "slurmctld",
            [_find("slurmctld") or "slurmctld", "-D", "-i", "-f", str(self.conf)],
            d / "log" / "slurmctld.log",
        )
        self._wait(self._ctld_answers, 30, "slurmctld to answer")
        for n in self.nodes:
            (d / "spool" / n.name).mkdir(exist_ok=True)
            self._start(
                f"slurmd.{n.name}",
                [_find("slurmd") or "slurmd", "-D", "-N", n.name, "-f", str(self.conf)],
                d / "log" / f"slurmd.{n.name}.log",
            )
        self._wait(self._all_idle, START_TIMEOUT, f"all {len(self.nodes)} nodes idle in sinfo")
        return self

    def _ctld_answers(self) -> bool:
        r = self.run(["scontrol", "ping"], check=False, timeout=10)
        return "UP" in r.stdout

    def states(self) -> dict[str, str]:
        """Each node's state as ``sinfo`` reports it (``idle``, ``mixed``, ``alloc``, ...)."""
        r = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], check=False, timeout=10)
        return dict(line.split(None, 1) for line in r.stdout.splitlines() if " " in line)

    def _all_idle(self) -> bool:
        st = self.states()
        return len(st) == len(self.nodes) and all(s == "idle" for s in st.values())

    def _wait(self, predicate: Any, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            dead = {k: p.returncode for k, p in self.procs.items() if p.poll() is not None}
            if dead:
                raise RuntimeError(f"waiting for {what}: daemons exited {dead}\n{self.log_tails()}")
            try:
                if predicate():
                    return
            except subprocess.TimeoutExpired:
                pass  # a command that hangs: as not yet
            time.sleep(0.2)
        try:
            states = self.states()
        except subprocess.TimeoutExpired:
            states = {}
        raise RuntimeError(
            f"Slurm test cluster: no {what} after {timeout:.0f} s (sinfo: {states})\n"
            f"{self.log_tails()}"
        )

    def log_tails(self, lines: int = 15) -> str:
        """The last lines of every daemon's log, for an error message."""
        out = []
        for label in self.procs:
            # the log file, else what the daemon printed (munged, or a daemon that died early)
            for path in (self.logs.get(label), self.dir / "log" / f"{label}.out"):
                if path is not None and path.exists() and path.stat().st_size:
                    tail = path.read_text(errors="replace").splitlines()[-lines:]
                    out.append(f"--- {path.name} (last {len(tail)} lines)\n" + "\n".join(tail))
                    break
        return "\n".join(out)

    # -- commands --------------------------------------------------------------------------

    def run(
        self, argv: list[str], check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        """A Slurm command against this cluster (``SLURM_CONF`` set); ``check``: raise with its
        stderr on a non-zero exit."""
        r = subprocess.run(
            argv,
            env=self.env,
            cwd=self.dir,  # a job's working directory: so its processes are found at the end
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and r.returncode:
            raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
        return r

    def submit(self, *args: str) -> int:
        """``sbatch --parsable ARGS``: the job id."""
        out = self.run(["sbatch", "--parsable", *args]).stdout.strip()
        return int(out.split(";")[0])

    def jobs(self) -> list[dict[str, Any]]:
        """``squeue --json``'s jobs."""
        return list(json.loads(self.run(["squeue", "--json"]).stdout).get("jobs", []))

    def job(self, job_id: int) -> dict[str, str]:
        """``scontrol show job -o ID`` as KEY: VALUE."""
        text = self.run(["scontrol", "show", "job", "-o", str(job_id)]).stdout
        return dict(w.split("=", 1) for w in text.split() if "=" in w)

    def wait_job(self, job_id: int, states: tuple[str, ...], timeout: float = 60) -> dict[str, str]:
        """Poll until the job's ``JobState`` is one of ``states``; the job's fields."""
        end = time.monotonic() + timeout
        while True:
            info = self.job(job_id)
            if info.get("JobState") in states or time.monotonic() > end:
                break
            time.sleep(0.2)
        if info.get("JobState") not in states:
            raise RuntimeError(
                f"job {job_id} is {info.get('JobState')} ({info.get('Reason')}), not one of "
                f"{states} after {timeout:.0f} s\n{self.log_tails()}"
            )
        return info

    def cancel_all(self, timeout: float = 20) -> None:
        """Cancel every job and wait (bounded) until no job is left running."""
        self.run(["scancel", "--full", f"--partition={self.partition}"], check=False)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            r = self.run(["squeue", "-h", "-o", "%i"], check=False, timeout=10)
            if r.returncode == 0 and not r.stdout.strip():
                return
            time.sleep(0.2)

    # -- teardown --------------------------------------------------------------------------

    def _kill_strays(self, steps_only: bool = False) -> None:
        """SIGKILL :meth:`_strays` (``steps_only``: not the daemons' own children) and wait,
        at most 10 s, until they have ended."""
        daemons = {p.pid for p in self.procs.values()}
        strays = [pid for pid in self._strays() if not (steps_only and _ppid(pid) in daemons)]
        for pid in strays:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        end = time.monotonic() + 10
        while time.monotonic() < end and any(alive(pid) for pid in strays):
            time.sleep(0.05)

    def _strays(self) -> list[int]:
        """PIDs of processes, other than our daemons, working in the cluster's directory or
        with its ``SLURM_CONF`` in their environment: the job steps (``slurmstepd``, which
        overwrites its environment with its title, and the jobs' processes), which leave the
        daemons' sessions."""
        ours = {p.pid for p in self.procs.values()} | {os.getpid()}
        needle = f"SLURM_CONF={self.conf}".encode() + b"\0"
        out = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in ours:
                continue
            try:
                cwd = os.readlink(entry / "cwd")
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if needle in environ or Path(cwd).is_relative_to(self.dir):
                out.append(int(entry.name))
        return out

    def stop(self) -> None:
        """SIGKILL the jobs' steps (:meth:`_strays`; no scancel first: a slurmd ending a job
        can take over 10 s to obey SIGTERM); SIGTERM every daemon (slurmd first, munged
        last), SIGKILL the ones still there after 10 s; then SIGKILL whatever of the cluster
        is left (slurmctld's slurmscriptd, a step started meanwhile)."""
        if not self.procs:
            return
        with contextlib.suppress(Exception):  # the daemons go below in any case
            self._kill_strays(steps_only=True)
        order = [k for k in self.procs if k.startswith("slurmd.")] + ["slurmctld", "munged"]
        for label in order:
            p = self.procs.get(label)
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for label in order:
            p = self.procs.get(label)
            if p is None:
                continue
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        self._kill_strays()
        self.procs.clear()

    def __enter__(self) -> SlurmCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
