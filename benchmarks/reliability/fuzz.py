"""Fuzzing campaign over every entry point (benchmarks/reliability/targets.py).

Usage::

    python benchmarks/reliability/fuzz.py                       # every target, 100,000 inputs each
    python benchmarks/reliability/fuzz.py --runs 2000 stg braun # some targets, fewer inputs
    python benchmarks/reliability/fuzz.py --engine random       # without atheris

Engines: ``atheris`` (coverage-guided libFuzzer, ``pip install -e .[fuzz]``; the default when
it is installed), mixing libFuzzer's byte mutations with a structural JSON / token mutator;
``random`` (the structural mutator alone, seeded; for machines without atheris).

Every target runs in its own process with a per-input time cap (``--timeout``, libFuzzer's
``-timeout`` or SIGALRM) and a memory cap (``--rss-mb``; RLIMIT_AS as well). An input that
raises anything but a clear :class:`InputError` is a *crash*; one that hits the time cap a
*hang*; one that hits the memory cap an *oom*. Crashing inputs are saved in ``--artifacts``
and the run goes on; after a hang or an oom the target's process is restarted for the inputs
left. The summary (inputs, accepted, rejected, crashes, hangs, ooms per target, load average)
is written as JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _have_atheris() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


# --- the child: one target ----------------------------------------------------------------


class _Stats:
    def __init__(self, path: Path, artifacts: Path, name: str) -> None:
        self.path = path
        self.artifacts = artifacts
        self.name = name
        self.counts = {"inputs": 0, "accepted": 0, "rejected": 0, "crashes": 0}
        self.crash_kinds: dict[str, int] = {}
        self.started = time.monotonic()

    def record(self, outcome: str) -> None:
        self.counts["inputs"] += 1
        self.counts[outcome] += 1
        self.flush()  # libFuzzer ends the process with exit(): keep the file current

    def crash(self, data: bytes, exc: BaseException) -> None:
        self.counts["inputs"] += 1
        self.counts["crashes"] += 1
        cause = exc.__cause__ or exc
        frames = traceback.extract_tb(cause.__traceback__)
        where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
        key = f"{type(cause).__name__} at {where}: {str(exc)[:120]}"
        if key not in self.crash_kinds:
            digest = hashlib.sha1(data).hexdigest()[:12]
            self.artifacts.mkdir(parents=True, exist_ok=True)
            (self.artifacts / f"crash-{self.name}-{digest}").write_bytes(data)
        self.crash_kinds[key] = self.crash_kinds.get(key, 0) + 1
        self.flush()

    def flush(self) -> None:
        data = dict(
            self.counts,
            crash_kinds=self.crash_kinds,
            seconds=round(time.monotonic() - self.started, 1),
        )
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(self.path)


def _limit_memory(rss_mb: int) -> None:
    cap = (rss_mb + 1024) << 20  # address space: the RSS cap plus room for the interpreter
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def child(args: argparse.Namespace) -> int:
    name = args.one
    runs = args.runs
    if args.engine == "atheris":
        import atheris  # optional dependency: only the atheris engine needs it

        # imported inside the block: atheris instruments only modules imported after it starts
        with atheris.instrument_imports(include=["placement", "benchmarks.reliability"]):
            import placement.api.files  # noqa: F401
            import placement.api.server.service  # noqa: F401
            from benchmarks.reliability import targets
            from placement.solver.family import family_names, get_family

            # Every registered family, and the module of every loader a target feeds.
            for fam in family_names():
                get_family(fam)
            for module in sorted({t.module for t in targets.TARGETS.values() if t.module}):
                importlib.import_module(module)
    else:
        # not at module level: the atheris branch above must import it after instrumenting
        from benchmarks.reliability import targets
    target = targets.TARGETS[name]
    seeds = target.seeds()
    for s in seeds:  # the seeds must be accepted: otherwise the campaign tests nothing
        if target.run(s) != "accepted":
            print(f"{name}: a seed is rejected", file=sys.stderr)
            return 3
    _limit_memory(args.rss_mb)
    stats = _Stats(Path(args.stats), Path(args.artifacts), name)

    def one(data: bytes) -> None:
        try:
            stats.record(target.run(data))
        except targets.Crash as exc:
            stats.crash(data, exc)

    if args.engine == "atheris":
        corpus = Path(tempfile.mkdtemp(prefix=f"corpus-{name}-"))
        for i, s in enumerate(seeds):
            (corpus / f"seed{i}").write_bytes(s)
        max_len = max(4096, 2 * max(len(s) for s in seeds))

        def mutator(data: bytes, max_size: int, seed: int) -> bytes:
            rnd = random.Random(seed)
            if rnd.random() < 0.5:
                out = targets.mutate(target, data, rnd)
                return out[:max_size]
            return atheris.Mutate(data, max_size)

        left = max(1, runs - args.done)
        atheris.Setup(
            [
                sys.argv[0],
                f"-runs={left}",
                f"-timeout={args.timeout}",
                f"-rss_limit_mb={args.rss_mb}",
                f"-max_len={max_len}",
                f"-seed={args.seed}",
                f"-artifact_prefix={args.artifacts}/",
                "-print_final_stats=1",
                str(corpus),
            ],
            one,
            custom_mutator=mutator,
        )
        try:
            atheris.Fuzz()
        finally:
            stats.flush()
            shutil.rmtree(corpus, ignore_errors=True)
        return 0

    # The random engine: the structural mutator from the seeds, a SIGALRM time cap.
    class Hang(BaseException):
        pass

    def alarm(signum: int, frame: object) -> None:
        raise Hang()

    signal.signal(signal.SIGALRM, alarm)
    rnd = random.Random(args.seed)
    pool = list(seeds)
    for i in range(args.done, runs):
        # Mostly one mutation of a seed or of an accepted input (a crude feedback: accepted
        # inputs reach the validation beyond the first bad field), sometimes a pile-up.
        data = rnd.choice(pool)
        for _ in range(rnd.choice((1, 1, 1, 2, 3))):
            data = targets.mutate(target, data, rnd)
        signal.setitimer(signal.ITIMER_REAL, args.timeout)
        try:
            before = stats.counts["accepted"]
            one(data)
        except Hang:
            stats.flush()
            Path(args.artifacts).mkdir(parents=True, exist_ok=True)
            Path(args.artifacts, f"timeout-{name}-{i}").write_bytes(data)
            print(f"ALARM: input {i} ran over {args.timeout} s", file=sys.stderr)
            return 70
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if stats.counts["accepted"] > before and len(data) < 4 * max(len(s) for s in seeds):
            if len(pool) < 500:
                pool.append(data)
            else:
                pool[rnd.randrange(len(seeds), len(pool))] = data
    stats.flush()
    return 0


# --- the parent: every target, restarts, the summary ------------------------------------------


def run_target(name: str, args: argparse.Namespace, work: Path) -> dict:
    stats_path = work / f"{name}.json"
    total = {"inputs": 0, "accepted": 0, "rejected": 0, "crashes": 0}
    kinds: dict[str, int] = {}
    hangs = ooms = restarts = 0
    seconds = 0.0
    notes: list[str] = []
    t0 = time.monotonic()
    while total["inputs"] < args.runs and restarts <= args.max_restarts:
        stats_path.unlink(missing_ok=True)
        cmd = [
            sys.executable,
            __file__,
            "--one",
            name,
            "--engine",
            args.engine,
            "--runs",
            str(args.runs),
            "--done",
            str(total["inputs"]),
            "--timeout",
            str(args.timeout),
            "--rss-mb",
            str(args.rss_mb),
            "--seed",
            str(args.seed + restarts),
            "--stats",
            str(stats_path),
            "--artifacts",
            str(args.artifacts),
        ]
        env = dict(
            os.environ,
            PYTHONPATH=f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            PLACEMENT_FUZZ_SCRATCH=str(work),
        )
        log = work / f"{name}.log"
        with log.open("w") as fh:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        text = log.read_text(errors="replace")
        part = json.loads(stats_path.read_text()) if stats_path.exists() else {}
        for k in total:
            total[k] += part.get(k, 0)
        for k, v in part.get("crash_kinds", {}).items():
            kinds[k] = kinds.get(k, 0) + v
        seconds += part.get("seconds", 0.0)
        if proc.returncode == 0:
            break
        if "ALARM" in text or "timeout" in text.lower() and "==" in text:
            hangs += 1
            total["inputs"] += 1
            notes.append(f"hang (run {restarts}): " + _tail(text))
        elif "out-of-memory" in text or "MemoryError" in text:
            ooms += 1
            total["inputs"] += 1
            notes.append(f"oom (run {restarts}): " + _tail(text))
        else:
            notes.append(f"exit {proc.returncode} (run {restarts}): " + _tail(text))
            if proc.returncode == 3:
                break
        restarts += 1
    return dict(
        target=name,
        engine=args.engine,
        **total,
        hangs=hangs,
        ooms=ooms,
        crash_kinds=kinds,
        wall_s=round(time.monotonic() - t0, 1),
        inputs_per_s=round(total["inputs"] / max(seconds, 1e-9), 1),
        notes=notes,
    )


def _tail(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[-4:])[:600]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", help="target names (default: all)")
    ap.add_argument(
        "--engine",
        choices=("atheris", "random"),
        default="atheris" if _have_atheris() else "random",
    )
    ap.add_argument("--runs", type=int, default=100_000, help="inputs per target")
    ap.add_argument("--timeout", type=int, default=10, help="seconds per input (hang cap)")
    ap.add_argument("--rss-mb", type=int, default=2048, help="memory cap per target process")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-restarts", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=1, help="targets fuzzed at once")
    ap.add_argument("--out", default=str(HERE / "results" / "fuzz.json"))
    ap.add_argument(
        "--artifacts", default=str(Path(tempfile.gettempdir()) / "placement-fuzz-artifacts")
    )
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--done", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--stats", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        return child(args)

    sys.path.insert(0, str(REPO))
    from benchmarks.reliability.targets import TARGETS  # after the path: run as a script

    names = args.targets or list(TARGETS)
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        ap.error(f"unknown targets {unknown}; known: {', '.join(TARGETS)}")
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None
    work = Path(tempfile.mkdtemp(prefix="placement-fuzz-", dir=shm))
    Path(args.artifacts).mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    t0 = time.time()
    with ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(lambda n: run_target(n, args, work), names))
    for r in results:
        print(
            f"{r['target']:<20} {r['inputs']:>8} inputs  {r['accepted']:>7} accepted  "
            f"{r['rejected']:>7} rejected  {r['crashes']} crashes  {r['hangs']} hangs  "
            f"{r['ooms']} ooms  {r['inputs_per_s']:>7}/s",
            flush=True,
        )
        for k, v in r["crash_kinds"].items():
            print(f"    crash x{v}: {k}")
        for note in r["notes"]:
            print(f"    {note}")
    summary = dict(
        command="python benchmarks/reliability/fuzz.py " + " ".join(argv or sys.argv[1:]),
        engine=args.engine,
        runs_per_target=args.runs,
        timeout_s=args.timeout,
        rss_mb=args.rss_mb,
        started=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t0)),
        wall_s=round(time.time() - t0, 1),
        loadavg_before=[round(x, 2) for x in load_before],
        loadavg_after=[round(x, 2) for x in os.getloadavg()],
        cpus=os.cpu_count(),
        artifacts=args.artifacts,
        targets=results,
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    bad = sum(r["crashes"] + r["hangs"] + r["ooms"] for r in results)
    short = [r["target"] for r in results if r["inputs"] < args.runs]
    print(f"summary in {out}; {bad} failures; short of {args.runs} inputs: {short or 'none'}")
    return 1 if bad or short else 0


if __name__ == "__main__":
    sys.exit(main())
