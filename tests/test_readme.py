"""The README's "Try it" block runs as written in a fresh clone, its table of results is what
the solves print, and it lists every stop reason the code defines (issue 41).

The block is the fenced block right after ``<!-- try-it -->``: one command a line (``#``
lines are comments). The commands run in order in one scratch folder where ``instances/``
and ``tests/`` are the repository's, so a later command may read a file an earlier one
wrote. The table after ``<!-- try-it-results -->`` has one row per bundled solve: the test
checks its status and stop reason (never its time, which is that run's).

Run ``python tests/test_readme.py`` to print the table's rows as the commands print them now
(with their times and the load average), to paste into the README.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from placement.solver.result import SolutionStatus, StopReason

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
BLOCK = "<!-- try-it -->"
TABLE = "<!-- try-it-results -->"


def try_it_commands() -> list[str]:
    lines = README.read_text().splitlines()
    start = lines.index(BLOCK)
    assert lines[start + 1].startswith("```"), f"README.md:{start + 1}: {BLOCK} not above a fence"
    end = next(j for j in range(start + 2, len(lines)) if lines[j].startswith("```"))
    body = [line.strip() for line in lines[start + 2 : end]]
    return [line for line in body if line and not line.startswith("#")]


def documented_results() -> dict[str, tuple[str, str]]:
    """Command -> (status, stop reason) from the README's table."""
    lines = README.read_text().splitlines()
    start = lines.index(TABLE)
    out = {}
    for line in lines[start + 3 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[cells[0].strip("`")] = (cells[1], cells[2])
    return out


def run_all(cwd: Path) -> list[tuple[str, int, str]]:
    """Each command's (command, exit code, stdout and stderr)."""
    (cwd / "instances").symlink_to(REPO / "instances")
    (cwd / "tests").symlink_to(REPO / "tests")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    out = []
    for command in try_it_commands():
        done = subprocess.run(
            ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, env=env, timeout=120
        )
        out.append((command, done.returncode, done.stdout + done.stderr))
    return out


def row(output: str, label: str) -> str:
    line = next((x for x in output.splitlines() if x.startswith(label)), None)
    return "" if line is None else line[12:].strip()


FINISHED_SOONER = {"time_limit": ("time_limit", "search_exhausted", "proven")}
"""A row that ran into its time limit says what this machine reached in that time; a run
whose (multi-threaded, so not repeatable) search gets further before the limit ends with more
proved, never less: it agrees with the row."""


def _agrees(printed: tuple[str, str], documented: tuple[str, str]) -> bool:
    status, stop = printed
    want_status, want_stop = documented
    if want_stop in FINISHED_SOONER:
        return status in (want_status, "optimal") and stop in FINISHED_SOONER[want_stop]
    return printed == documented


def test_try_it_runs_as_written_and_its_table_is_what_it_prints(tmp_path: Path) -> None:
    commands = try_it_commands()
    assert any(c.startswith("placement import k8s") for c in commands)
    documented = documented_results()
    bundled = [c for c in commands if re.fullmatch(r"placement solve instances/\S+\.json", c)]
    assert sorted(documented) == sorted(bundled), "one table row per bundled solve"
    failures = []
    for command, code, output in run_all(tmp_path):
        if code != 0:
            failures.append(f"$ {command}\nexit {code}\n{output}")
        elif command in documented:
            printed = (row(output, "status"), row(output, "stop reason"))
            if not _agrees(printed, documented[command]):
                failures.append(f"$ {command}\ndocumented {documented[command]}, printed {printed}")
    assert not failures, "\n\n".join(failures)


def test_the_readme_lists_every_stop_reason_and_status() -> None:
    text = README.read_text()
    missing = [v.value for v in (*StopReason, *SolutionStatus) if f"`{v.value}`" not in text]
    assert not missing, f"README.md does not list: {missing}"


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for command, code, output in run_all(Path(tmp)):
            if command in documented_results() or re.fullmatch(
                r"placement solve instances/\S+\.json", command
            ):
                time_s = row(output, "time").split(" s", 1)[0]
                print(
                    f"| `{command}` | {row(output, 'status')} | {row(output, 'stop reason')} "
                    f"| {time_s} s | |"
                )
            elif code != 0:
                print(f"FAILED ({code}): {command}\n{output}")
    print("load average", os.getloadavg())
