"""Compare two ``placement bench --quick`` result folders on their non-timing columns.

Usage::

    python -m placement.benchmarks.compare BEFORE AFTER [--noise AGAIN]

For every suite CSV present in both folders, the rows are compared column by column after
dropping the columns that measure time or memory (names ending in ``_s`` or ``ms``, or
containing ``wall``, ``time``, ``latency``, ``rss``, ``mib``, ``throughput``, ``per_s``,
``rate``, ``load``, ``_us``, ``seconds``). ``--noise AGAIN`` names a second run of the BEFORE code: a column that differs
between BEFORE and AGAIN depends on the clock (a solve stopped by its time limit), so a
difference there is reported as run-to-run variation, not as a change of behaviour.

Prints one line per suite (``same``, ``noise`` or ``CHANGED`` with the columns and the first
differing row) and exits 1 when a suite changed outside its noisy columns, or a suite is
missing from AFTER.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

TIMING_MARKS = (
    "wall",
    "time",
    "latency",
    "rss",
    "mib",
    "throughput",
    "per_s",
    "rate",
    "_ms",
    "_us",
    "load",
    "seconds",
)


def is_timing(column: str) -> bool:
    """A column that measures time or memory, whose value no two runs share."""
    name = column.lower()
    return name.endswith(("_s", "ms")) or any(mark in name for mark in TIMING_MARKS)


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the rows of one suite CSV."""
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def differing_columns(a: Path, b: Path) -> tuple[set[str], str]:
    """Non-timing columns whose values differ between two CSVs of one suite (rows in order),
    and a one-line example of the first difference."""
    head_a, rows_a = read_rows(a)
    head_b, rows_b = read_rows(b)
    columns = [c for c in head_a if not is_timing(c)]
    changed: set[str] = {c for c in head_a if c not in head_b and not is_timing(c)}
    changed |= {c for c in head_b if c not in head_a and not is_timing(c)}
    example = f"columns {sorted(changed)} exist in one file only" if changed else ""
    if len(rows_a) != len(rows_b):
        changed.add("<row count>")
        example = example or f"{len(rows_a)} rows vs {len(rows_b)}"
    for i, (ra, rb) in enumerate(zip(rows_a, rows_b, strict=False)):
        for c in columns:
            if c in rb and ra.get(c) != rb.get(c):
                if not example:
                    example = f"row {i + 1} {c}: {ra.get(c)!r} -> {rb.get(c)!r}"
                changed.add(c)
    return changed, example


def compare(before: Path, after: Path, noise: Path | None) -> tuple[list[str], bool]:
    """Report lines, and whether behaviour changed anywhere."""
    lines, bad = [], False
    for path in sorted(before.glob("*.csv")):
        other = after / path.name
        suite = path.stem
        if not other.exists():
            lines.append(f"{suite:24s} MISSING in {after}")
            bad = True
            continue
        changed, example = differing_columns(path, other)
        noisy: set[str] = set()
        if noise is not None and (noise / path.name).exists():
            noisy, _ = differing_columns(path, noise / path.name)
        real = changed - noisy
        if not changed:
            lines.append(f"{suite:24s} same")
        elif not real:
            lines.append(f"{suite:24s} noise: {', '.join(sorted(changed))} (differ run to run)")
        else:
            lines.append(f"{suite:24s} CHANGED: {', '.join(sorted(real))}; {example}")
            bad = True
    return lines, bad


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--noise", type=Path, help="a second run of the BEFORE code")
    args = parser.parse_args(argv)
    for folder in (args.before, args.after, args.noise):
        if folder is not None and not folder.is_dir():
            print(f"placement: error: {folder}: not a folder of bench results", file=sys.stderr)
            return 2
    lines, bad = compare(args.before, args.after, args.noise)
    print("\n".join(lines))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
