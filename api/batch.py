"""Solving many instance files in parallel worker processes, or as Ray tasks.

Each file is solved in its own task by a ``spawn``-started worker process (no state is
inherited from the parent, and a solver that misbehaves cannot corrupt it), or by a Ray task
(:mod:`placement.solver.parallel`). A file that cannot be read, or whose solve fails, becomes a
row with the error; it never stops the others. Ctrl-C in the parent stops the running solves
(locally each keeps its best solution; a Ray task is interrupted and its row says so) and
skips the files not started yet; SIGTERM and SIGHUP do the same.

On Ray the driver reads every file and sends its text with the task, and the task sends the
solution document back, so the cluster's nodes need neither the input files nor a shared
disk for the solutions.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from placement.api.files import placed_count, read_instance, solution_document, write_json
from placement.api.interrupt import install_stop_handlers, run_cancellable
from placement.solver import CancellationToken, InputError, SolutionStatus, SolveOptions, solve
from placement.solver.jsonform import read_input_text
from placement.solver.parallel import connect_ray, run_tasks

__all__ = ["COLUMNS", "SOLVED", "BatchOutcome", "run_batch", "solution_paths", "solve_file"]

COLUMNS = (
    "file",
    "family",
    "instance",
    "status",
    "stop_reason",
    "objective",
    "bound",
    "gap",
    "backend",
    "time_s",
    "placed",
    "unplaced",
    "objective_terms",
    "solution_file",
    "message",
    "error",
)
"""CSV columns, in order. ``status`` is a solution status, or ``error`` / ``skipped``."""

SOLVED = frozenset(
    {SolutionStatus.OPTIMAL.value, SolutionStatus.FEASIBLE.value, SolutionStatus.INFEASIBLE.value}
)
"""Statuses that count as success: a checked solution exists, or infeasibility is proved."""

_STOP: Any = None
"""In a worker: the parent's stop event (a multiprocessing Event)."""
_PARENT: int | None = None
"""In a local worker: the batch's pid (a worker whose parent is gone stops and writes
nothing)."""


def _init_worker(stop_event: Any = None) -> None:
    """Worker initialiser: remember the stop event; leave Ctrl-C to the parent.

    A Ray task calls it without the event (Ray interrupts its tasks itself)."""
    global _STOP, _PARENT
    _STOP = stop_event
    if stop_event is not None:
        _PARENT = os.getppid()
        # The terminal sends SIGINT to the whole process group; the parent decides what
        # happens and tells the workers through the event, so workers print no
        # KeyboardInterrupt noise.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if hasattr(signal, "SIGHUP"):  # a closed terminal: the parent decides, as for Ctrl-C
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
    # A backend failure is logged as a warning and also lands in the row's message column;
    # logged from a worker it would only garble the parent's progress bar.
    logging.getLogger("placement").setLevel(logging.ERROR)


def _orphaned() -> bool:
    """True in a local worker whose batch process is gone (killed without a word)."""
    return _PARENT is not None and os.getppid() != _PARENT


def _stop_requested() -> bool:
    return (_STOP is not None and _STOP.is_set()) or _orphaned()


def _empty_row(path: str) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(COLUMNS, "")
    row["file"] = path
    return row


def solve_file(
    path: str,
    settings: dict[str, Any],
    solution_file: str | None = None,
    text: str | None = None,
) -> dict[str, Any]:
    """Read and solve one file; never raises. Runs in a worker process.

    Parameters
    ----------
    path:
        The instance file.
    settings:
        Keyword arguments of :class:`~placement.solver.SolveOptions` (plain values only, as
        they cross the process boundary).
    solution_file:
        Where to write the solution file, or None.
    text:
        The file's content, read by the caller (a Ray task gets it this way). The solution
        document then comes back in the row's ``_document`` key (not a CSV column) and the
        caller writes it.

    Returns
    -------
    dict
        One CSV row (keys :data:`COLUMNS`); ``status`` is ``error`` and ``error`` says why when
        the file could not be solved.
    """
    row = _empty_row(path)
    try:
        if _stop_requested():
            row["status"] = "skipped"
            row["error"] = "not solved: the batch was interrupted"
            return row
        loaded = read_instance(path, text)
        row["family"] = loaded.family_name
        row["instance"] = loaded.display_name
        token = CancellationToken()
        options = SolveOptions(**settings, cancel=token)
        result, _ = run_cancellable(
            lambda: solve(loaded.instance, options),
            token,
            stop_when=_stop_requested,
            handle_sigint=False,
        )
        section = None
        if result.has_solution:
            doc = solution_document(loaded, result.solution, result.unplaced)
            section = doc[loaded.family_name]
            if solution_file is not None and text is not None:
                row["_document"] = doc
            elif solution_file is not None and not _orphaned():
                write_json(solution_file, doc)
                row["solution_file"] = solution_file
        row.update(
            status=result.status.value,
            stop_reason=result.stop_reason.value,
            objective=_num(result.objective),
            bound=_num(result.bound),
            gap=_num(result.gap),
            backend=result.backend or "",
            time_s=round(result.phase_times_s.get("total", 0.0), 3),
            placed=_num(placed_count(section)),
            unplaced=len(result.unplaced) if result.has_solution else "",
            objective_terms=json.dumps(result.objective_terms) if result.objective_terms else "",
            message=result.message,
        )
    except InputError as exc:
        row["status"] = "error"
        row["error"] = str(exc)
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the batch
        row["status"] = "error"
        row["error"] = f"internal error: {type(exc).__name__}: {exc}"
    return row


def _num(value: float | int | None) -> str | float | int:
    """A CSV cell: empty for unknown, full precision otherwise."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def solution_paths(files: Sequence[str], folder: str) -> list[str]:
    """One solution file per input in ``folder``: ``<stem>.solution.json``, made unique."""
    out: list[str] = []
    used: set[str] = set()
    for i, f in enumerate(files):
        stem = Path(f).stem
        name = f"{stem}.solution.json"
        if name in used:
            # Two inputs with the same stem (different folders): keep both, numbered.
            name = f"{stem}.{i + 1}.solution.json"
        used.add(name)
        out.append(os.path.join(folder, name))
    return out


class BatchOutcome:
    """Rows in input order, and the signal that cut the batch short (0: none)."""

    def __init__(self, rows: list[dict[str, Any]], interrupted: int) -> None:
        self.rows = rows
        self.interrupted = interrupted

    @property
    def failed(self) -> int:
        """Rows that have neither a checked solution nor a proof of infeasibility."""
        return sum(1 for r in self.rows if r["status"] not in SOLVED)


def run_batch(
    files: Sequence[str],
    settings: dict[str, Any],
    *,
    jobs: int,
    solution_dir: str | None = None,
    progress: bool = True,
    ray: str | None = None,
) -> BatchOutcome:
    """Solve ``files`` with ``jobs`` worker processes, or as Ray tasks.

    Parameters
    ----------
    files:
        Instance files.
    settings:
        :class:`~placement.solver.SolveOptions` keyword arguments for every solve.
    jobs:
        Worker processes (at most one per file); for ``ray="auto"`` without a cluster, the
        CPUs of the local Ray instance.
    solution_dir:
        Folder for one solution file per input, or None.
    progress:
        Show a tqdm progress bar on stderr, and a line for each file that fails as it fails.
    ray:
        None for the local pool, else the Ray address (``auto`` or ``HOST:PORT``).

    Returns
    -------
    BatchOutcome
        One row per file, in input order.

    Raises
    ------
    RayUnavailable
        ``ray`` is set and Ray is not installed or not reachable.
    """
    from tqdm import tqdm  # start-up: ~15 ms on every `placement` command; only a batch draws a bar

    rows: list[dict[str, Any] | None] = [None] * len(files)
    targets = solution_paths(files, solution_dir) if solution_dir else [None] * len(files)
    if ray is not None:
        connect_ray(ray, jobs)
        # The cluster's nodes may not see our files: send each file's text with its task.
        arglist = [(f, settings, t, _read_text(f)) for f, t in zip(files, targets, strict=True)]
        stop: Any = threading.Event()
        initargs: tuple[Any, ...] = ()
    else:
        arglist = [(f, settings, t) for f, t in zip(files, targets, strict=True)]
        stop = multiprocessing.get_context("spawn").Event()
        initargs = (stop,)
    interrupted = 0

    def handler(signum: int, frame: Any) -> None:
        # Ctrl-C, SIGTERM and SIGHUP alike: the running solves stop with their best, the
        # rest are skipped, and the CSV is written.
        nonlocal interrupted
        if interrupted:
            raise KeyboardInterrupt
        interrupted = signum
        stop.set()
        if progress:
            tqdm.write(
                "placement: interrupted: stopping the running solves, skipping the rest "
                "(Ctrl-C again to abort)",
                file=sys.stderr,
            )

    restore = install_stop_handlers(handler)
    bar = tqdm(total=len(files), file=sys.stderr, unit="file", disable=not progress)
    failed = 0
    try:
        for done in run_tasks(
            solve_file,
            arglist,
            jobs=jobs,
            ray=ray,
            initializer=_init_worker,
            initargs=initargs,
            should_stop=stop.is_set,
        ):
            path = files[done.index]
            row = _outcome_row(done, path, targets[done.index])
            rows[done.index] = row
            if row["status"] not in SOLVED:
                failed += 1
                if progress and row["status"] != "skipped":
                    bar.write(f"placement: error: {_failure_line(row)}", file=sys.stderr)
            bar.update(1)
            if failed:
                bar.set_postfix(failed=failed)
    finally:
        bar.close()
        restore()
    return BatchOutcome([r for r in rows if r is not None], interrupted)


def _read_text(path: str) -> str | None:
    """A file's text for a Ray task, or None to let the task report why it cannot be read."""
    try:
        return read_input_text(path)
    except InputError:
        return None


def _outcome_row(done: Any, path: str, target: str | None) -> dict[str, Any]:
    """The row of a finished, failed or cancelled task; writes a solution sent back by Ray."""
    if done.cancelled:
        row = _empty_row(path)
        row["status"] = "skipped"
        row["error"] = "not solved: the batch was interrupted"
        return row
    if done.error is not None:
        # The worker process died (killed, out of memory, a crash in native code).
        row = _empty_row(path)
        row["status"] = "error"
        row["error"] = f"internal error: worker failed: {done.error}"
        return row
    row = dict(done.value)
    document = row.pop("_document", None)
    if document is not None and target is not None:
        write_json(target, document)
        row["solution_file"] = target
    return row


def _failure_line(row: dict[str, Any]) -> str:
    if row["error"]:
        # InputError text already starts with the file name.
        text = str(row["error"])
        return text if text.startswith(row["file"]) else f"{row['file']}: {text}"
    return f"{row['file']}: no solution found ({row['status']}, {row['stop_reason']})"
