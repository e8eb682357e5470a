"""``placement batch``: many instance files in worker processes, one CSV row each."""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys

from placement.api.batch import COLUMNS, run_batch
from placement.api.cli.exits import EXIT_FAILED, EXIT_OK, err, exit_for_signal
from placement.api.cli.solve import solve_settings, warn_ignored
from placement.api.files import check_writable, write_text
from placement.solver import InputError


def cmd_batch(args: argparse.Namespace) -> int:
    """``placement batch``."""
    warn_ignored(args)
    if args.out:
        check_writable(args.out, inputs=args.instances)
    if args.solutions and not os.path.isdir(args.solutions):
        raise InputError.single("", args.solutions, "an existing folder", file=args.solutions)
    cores = os.cpu_count() or 1
    jobs = min(args.jobs or cores, len(args.instances))
    settings = solve_settings(args)
    if settings["threads"] == 0:
        # Share the cores among the workers instead of every worker taking all of them.
        settings["threads"] = max(1, cores // jobs)
    outcome = run_batch(
        args.instances,
        settings,
        jobs=jobs,
        solution_dir=args.solutions,
        progress=not args.quiet,
        ray=args.ray,
    )
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(outcome.rows)
    if args.out:
        write_text(args.out, buffer.getvalue())
    else:
        sys.stdout.write(buffer.getvalue())
        sys.stdout.flush()
    if not args.quiet:
        skipped = sum(1 for r in outcome.rows if r["status"] == "skipped")
        solved = len(outcome.rows) - outcome.failed
        counts = f"{solved} of {len(outcome.rows)} solved, {outcome.failed - skipped} failed"
        if skipped:
            counts += f", {skipped} skipped (interrupted)"
        where = f"; results in {args.out}" if args.out else ""
        err(f"batch: {counts}{where}")
    if outcome.interrupted:
        return exit_for_signal(outcome.interrupted)
    return EXIT_FAILED if outcome.failed else EXIT_OK
