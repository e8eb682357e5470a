"""The benchmark runner behind ``placement bench``: one runner for every suite.

A suite (:class:`Suite`) is a list of independent cases, a function
that runs one case and returns CSV rows, and a function that turns the rows into Markdown
tables and plots. :func:`run_suite` runs the cases in worker processes (or as Ray tasks),
writes ``<out>/<suite>.csv`` after every finished case (so an interrupted run keeps what it
measured), and at the end ``<out>/<suite>.md``: the command that reproduces it, the machine,
the count of solutions the family's independent checker rejected (must be 0), and the suite's
tables.

Suites are found, not registered: every package of :mod:`placement.benchmarks` (folder
``benchmarks/``) that declares ``SUITES`` in its ``__init__`` contributes them (:func:`suites`).
The declarations reference their functions with :func:`lazy`, so ``placement bench --list``
imports no suite code.
"""

from __future__ import annotations

import csv
import datetime as _dt
import importlib
import io
import logging
import os
import pkgutil
import platform
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import placement.benchmarks as root
from placement.api.interrupt import install_stop_handlers
from placement.solver import InputError
from placement.solver.family import get_family
from placement.solver.parallel import run_tasks

__all__ = [
    "DEFAULT_DATA",
    "INSTANCES",
    "BenchConfig",
    "Rechecker",
    "Suite",
    "SuiteOutcome",
    "command_line",
    "data_root",
    "lazy",
    "load_average",
    "recheck",
    "run_suite",
    "suite_functions",
    "suites",
]

DEFAULT_DATA = Path("..") / "shared" / "benchmarks"
"""Where the public benchmark data is looked for, relative to the current directory, when
neither ``--data`` nor ``PLACEMENT_BENCH_DATA`` says otherwise."""

INSTANCES = Path(__file__).resolve().parents[1] / "instances"
"""The bundled instances of a source checkout (the wheel does not carry them)."""


@dataclass(frozen=True)
class Suite:
    """One ``placement bench <name>`` suite: a benchmark of a family, run by :func:`run_suite`.

    A suite is three functions; each benchmark package ``benchmarks/<family>/`` keeps them in
    its modules and declares the suite in its ``__init__`` with :func:`suite_functions`
    (:func:`lazy` references, so that ``--list`` imports nothing heavy, and ``run`` pickles
    into worker processes and Ray tasks by name).

    Attributes
    ----------
    name:
        The suite name, ``<family>-<benchmark>`` (e.g. ``dag-stg``).
    family:
        The family it measures (``service`` for the service's own suite).
    help:
        One line for ``placement bench --list``.
    cases:
        ``cases(config) -> list[dict]``: the independent cases to run (plain, picklable
        parameters), honouring ``config.quick`` (tiny sizes) and ``config.time_limit_s``.
    run:
        ``run(case, config) -> list[dict]``: runs one case (in a worker process or a Ray task)
        and returns its CSV rows. Every row has an ``invalid`` column: how many of the
        solutions behind the row the family's independent checker rejected (see
        :func:`recheck`).
    report:
        ``report(rows, config) -> str``: the Markdown tables of the rows (it may also write
        PNG plots named ``<name>*.png`` into ``config.out``).
    data:
        The folder under the public benchmark data root the suite reads, or None.
    time_limit_s, quick_time_limit_s:
        Default time limit per solve, for full and ``--quick`` runs.
    exclusive:
        Run the cases one at a time whatever ``--jobs`` says: timing is the measurement, or
        each case uses every core.
    parameters:
        The suite's own settings (:class:`~placement.solver.hooks.Parameter`: name, type,
        default), given as ``placement bench SUITE --param NAME=VALUE`` and read from
        ``config.params``; the defaults are the full protocol.
    """

    name: str
    family: str
    help: str
    cases: Callable[[Any], list[dict[str, Any]]]
    run: Callable[[dict[str, Any], Any], list[dict[str, Any]]]
    report: Callable[[list[dict[str, Any]], Any], str]
    data: str | None = None
    time_limit_s: float = 10.0
    quick_time_limit_s: float = 1.0
    exclusive: bool = False
    parameters: tuple[Any, ...] = ()


class _Lazy:
    """A function imported on its first call; picklable by module and name."""

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name
        self.__name__ = name
        self.__qualname__ = f"{module}.{name}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(self.module), self.name)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"lazy({self.module!r}, {self.name!r})"


def lazy(module: str, name: str) -> Callable[..., Any]:
    """A function that imports ``module`` on its first call and calls its ``name`` (so that
    ``placement bench --list`` imports no solver). It pickles by name, so it can be sent to
    worker processes and Ray tasks."""
    return _Lazy(module, name)


def suite_functions(module: str, stem: str = "") -> dict[str, Any]:
    """A suite's ``cases``, ``run`` and ``report``: ``cases_<stem>``, ``run_<stem>`` and
    ``report_<stem>`` of ``module`` (``cases``, ``run``, ``report`` without a stem), each
    :func:`lazy`; pass them as ``Suite(..., **suite_functions(module, stem))``."""
    return {
        part: lazy(module, f"{part}_{stem}" if stem else part)
        for part in ("cases", "run", "report")
    }


@dataclass(frozen=True)
class BenchConfig:
    """What a suite's functions are told about the run.

    Attributes
    ----------
    suite:
        The suite's name.
    time_limit_s:
        Time limit per solve (the suite's default unless ``--time-limit`` was given).
    quick:
        Tiny sizes, for CI: every code path runs, the figures mean nothing.
    out:
        Folder of the CSV, the Markdown and the plots.
    data:
        Root of the public benchmark data (the suite reads ``data / suite.data``).
    jobs:
        Cases run at once.
    ray:
        None, or the Ray address the cases run on.
    command:
        The command line that reproduces the run.
    params:
        The values given with ``--param NAME=VALUE`` for the suite's :attr:`Suite.parameters`
        (the suite applies the defaults of the others).
    """

    suite: str
    time_limit_s: float
    quick: bool
    out: Path
    data: Path
    jobs: int = 1
    ray: str | None = None
    command: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    def data_dir(self, sub: str) -> Path:
        """``data / sub``."""
        return self.data / sub


@dataclass
class SuiteOutcome:
    """What a run produced."""

    rows: list[dict[str, Any]]
    cases: int
    finished: int = 0
    failed: list[str] = field(default_factory=list)
    interrupted: bool = False
    signal: int = 0
    """The signal that interrupted the run (SIGINT, SIGTERM or SIGHUP), 0 if none."""
    csv_path: Path | None = None
    md_path: Path | None = None

    @property
    def invalid(self) -> int:
        """Solutions the family's checker rejected, over every row."""
        return sum(int(r.get("invalid") or 0) for r in self.rows)


def suites() -> dict[str, Suite]:
    """Every suite, by name: the ``SUITES`` of each package of :mod:`placement.benchmarks`, in
    the packages' alphabetical order (a package without ``SUITES``, like ``reliability``,
    has none)."""
    found: dict[str, Suite] = {}
    for info in sorted(pkgutil.iter_modules(root.__path__), key=lambda m: m.name):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"{root.__name__}.{info.name}")
        for suite in getattr(module, "SUITES", ()):
            if suite.name in found:
                raise ValueError(f"benchmark suite {suite.name!r} is declared twice")
            found[suite.name] = suite
    return found


def data_root(explicit: str | None = None) -> Path:
    """``--data``, else ``$PLACEMENT_BENCH_DATA``, else :data:`DEFAULT_DATA`."""
    return Path(explicit or os.environ.get("PLACEMENT_BENCH_DATA") or DEFAULT_DATA)


def load_1min() -> float:
    """The 1-minute load average now (the machine may be shared); NaN where unknown."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return float("nan")


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (the machine may be shared)."""
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def recheck(family: str, instance: Any, solution: Any) -> tuple[Any, int]:
    """The family's independent checker on a solution: ``(report, invalid)`` where
    ``invalid`` is 1 when the checker rejects it (and 0 for ``None``: no solution)."""
    if solution is None:
        return None, 0
    report = get_family(family).check(instance, solution)
    return report, 0 if report.feasible else 1


class Rechecker:
    """Re-checks every solution a case produces with ``family``'s checker and counts them,
    for the row's ``solutions_checked`` and ``invalid`` columns.

    ``invalid`` also counts the candidates a solve's own checker dropped
    (:attr:`~placement.solver.Result.rejected_candidates`): none left the solver, but each is
    a bug in an encoding or a heuristic, which a benchmark should show.
    """

    def __init__(self, family: str) -> None:
        self.family = family
        self.checked = 0
        self.invalid = 0

    def __call__(self, instance: Any, solution: Any) -> Any:
        """The checker's report of ``solution`` (None for no solution, which is not counted)."""
        report, bad = recheck(self.family, instance, solution)
        self.checked += report is not None
        self.invalid += bad
        return report

    def result(self, instance: Any, result: Any) -> Any:
        """Re-check a :class:`~placement.solver.Result`'s solution and count the candidates
        its solve dropped; returns the checker's report."""
        self.dropped(result.rejected_candidates)
        return self(instance, result.solution)

    def dropped(self, count: int) -> None:
        """Count ``count`` candidates a solver's checker rejected and dropped."""
        self.checked += count
        self.invalid += count

    def columns(self) -> dict[str, int]:
        """``{"solutions_checked": ..., "invalid": ...}`` for the row."""
        return {"solutions_checked": self.checked, "invalid": self.invalid}


def _init_worker(local: bool = False) -> None:
    """In every worker: quiet logs (they would garble the progress bar); in a local worker
    also ignore Ctrl-C, which the terminal sends to the whole process group: the parent
    decides what it means (Ray delivers its own cancellation)."""
    if local:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger("placement").setLevel(logging.ERROR)


def _run_case(
    run: Callable[[dict[str, Any], BenchConfig], list[dict[str, Any]]],
    case: dict[str, Any],
    config: BenchConfig,
) -> list[dict[str, Any]]:
    """Worker side: one case of a suite (``run`` pickles by name)."""
    rows = run(case, config)
    for row in rows:
        if "invalid" not in row:
            raise ValueError(f"suite {config.suite}: a row has no 'invalid' column: {row}")
    return rows


def run_suite(suite: Suite, config: BenchConfig, *, progress: bool = True) -> SuiteOutcome:
    """Run every case of ``suite``; write the CSV as cases finish and the Markdown at the end.

    Raises
    ------
    InputError
        The suite's public data is not where ``config.data`` points, or ``--out`` is not
        a writable folder.
    """
    from tqdm import tqdm  # start-up: ~15 ms that `placement bench --list` would pay

    if suite.data is not None and not config.data_dir(suite.data).is_dir():
        raise InputError.single(
            "--data",
            str(config.data_dir(suite.data)),
            f"the folder of the public benchmark data of {suite.name} ({suite.data} under "
            "the data root: pass --data DIR or set PLACEMENT_BENCH_DATA)",
        )
    try:
        config.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError.single("--out", str(config.out), f"a writable folder ({exc})") from None
    started = time.time()
    load_before = load_average()
    cases = suite.cases(config)
    jobs = 1 if suite.exclusive else max(1, min(config.jobs, len(cases) or 1))
    config = replace(config, jobs=jobs)
    outcome = SuiteOutcome(rows=[], cases=len(cases))
    outcome.csv_path = config.out / f"{suite.name}.csv"
    by_case: dict[int, list[dict[str, Any]]] = {}
    stop = threading.Event()

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        outcome.signal = signum
        stop.set()
        tqdm.write(
            "placement: interrupted: stopping; the finished cases are kept (Ctrl-C again to abort)",
            file=sys.stderr,
        )

    # Ctrl-C, SIGTERM and SIGHUP alike: the finished cases are kept and the report written.
    restore = install_stop_handlers(handler)
    bar = tqdm(
        total=len(cases), file=sys.stderr, unit="case", desc=suite.name, disable=not progress
    )
    try:
        for done in run_tasks(
            _run_case,
            [(suite.run, case, config) for case in cases],
            jobs=jobs,
            ray=config.ray,
            initializer=_init_worker,
            initargs=(True,),
            should_stop=stop.is_set,
            kill_running=True,
        ):
            label = _case_label(cases[done.index])
            if done.ok:
                by_case[done.index] = done.value
                outcome.finished += 1
                outcome.rows = [r for i in sorted(by_case) for r in by_case[i]]
                _write_csv(outcome.csv_path, outcome.rows)
            elif not done.cancelled:
                outcome.failed.append(f"{label}: {done.error}")
                bar.write(f"placement: bench {suite.name}: case {label} failed: {done.error}")
            bar.update(1)
            bar.set_postfix(invalid=outcome.invalid, failed=len(outcome.failed))
    finally:
        bar.close()
        restore()
    outcome.interrupted = stop.is_set()
    body = suite.report(outcome.rows, config) if outcome.rows else "No case finished.\n"
    outcome.md_path = config.out / f"{suite.name}.md"
    outcome.md_path.write_text(
        _header(suite, config, outcome, load_before, time.time() - started) + body,
        encoding="utf-8",
    )
    return outcome


def _case_label(case: dict[str, Any]) -> str:
    return str(case.get("case") or ", ".join(f"{k}={v}" for k, v in case.items()))


def _write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Write every row (the union of their columns, in first-seen order), atomically."""
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    tmp = path.with_suffix(".csv.tmp")
    tmp.write_text(buffer.getvalue(), encoding="utf-8")
    os.replace(tmp, path)


def _header(
    suite: Suite, config: BenchConfig, outcome: SuiteOutcome, load_before: str, wall_s: float
) -> str:
    lines = [
        f"# `{suite.name}`: {suite.help}",
        "",
        "Generated by `placement bench`; do not edit by hand. Reproduce with:",
        "",
        f"    {config.command}",
        "",
        f"- Run: {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M} UTC, {wall_s:.0f} s wall, "
        f"{config.jobs} case(s) at a time"
        + (f" on Ray ({config.ray})" if config.ray else "")
        + f", time limit {config.time_limit_s:g} s per solve"
        + (" (**--quick**: tiny sizes, the figures mean nothing)" if config.quick else "")
        + ".",
        f"- Machine: {os.cpu_count()} cores, Python {platform.python_version()}, load average "
        f"{load_before} before and {load_average()} after.",
        f"- Solutions the family's independent checker rejected: **{outcome.invalid}** "
        f"(over {len(outcome.rows)} rows of {outcome.finished} of {outcome.cases} cases).",
    ]
    if outcome.interrupted:
        lines.append(
            f"- **Partial**: interrupted after {outcome.finished} of {outcome.cases} cases."
        )
    if outcome.failed:
        lines.append(f"- **{len(outcome.failed)} case(s) failed**:")
        lines.extend(f"  - {f}" for f in outcome.failed)
    lines += ["", ""]
    return "\n".join(lines)


def command_line(argv: Sequence[str]) -> str:
    """``placement bench ...`` as typed (for the reproduce line)."""
    return "placement " + " ".join(shlex.quote(a) for a in argv)
