"""Every example output in README.md and docs/cli.md is what the command prints today.

An example is a fenced block right after the line ``<!-- example -->``. Its lines starting
with ``$ `` are commands; the lines after each command are what it prints, stderr and stdout
together as a terminal shows them. The examples of one Markdown file run in order, in one
scratch folder where ``instances/`` is the repository's, so a later example may read a file
an earlier one wrote. Before comparing, both sides have their timings normalised (progress
lines' seconds, the ``time`` row); an expected line ``...`` stands for any number of lines.

Run ``python tests/test_docs_examples.py [FILE.md]`` to print what each example prints now.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = ("README.md", "docs/cli.md")
MARKER = "<!-- example -->"
ELLIPSIS = "..."
_END = "@@placement-docs-example-end@@"


@dataclass
class Example:
    """One marked block: where it is, and its commands with their expected output."""

    doc: str
    line: int
    steps: list[tuple[str, list[str]]]


def examples(doc: str) -> list[Example]:
    """The marked example blocks of ``doc`` (a path relative to the repository)."""
    lines = (REPO / doc).read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.strip() != MARKER:
            continue
        assert lines[i + 1].startswith("```"), f"{doc}:{i + 1}: {MARKER} not above a fence"
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        steps: list[tuple[str, list[str]]] = []
        for body in lines[i + 2 : end]:
            if body.startswith("$ "):
                steps.append((body[2:], []))
            else:
                assert steps, f"{doc}:{i + 3}: an example starts with a '$ ' command"
                steps[-1][1].append(body)
        out.append(Example(doc, i + 1, steps))
    return out


def normalise(text: str) -> list[str]:
    """Lines as a terminal shows them, with the timings replaced (they differ from run to
    run)."""
    if text.endswith("\n"):
        text = text[:-1]
    if not text:
        return []
    out = []
    for line in text.split("\n"):
        # A progress bar redraws its line after each carriage return: a terminal shows the last.
        line = line.split("\r")[-1].rstrip()
        line = re.sub(r"^ *\d+\.\d\ds  ", "<T>s  ", line)
        if line.startswith("time "):
            line = re.sub(r"\d+\.\d\d s", "<T> s", line)
        out.append(line)
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` is ``expected`` with each ``...`` line standing for any lines."""
    if not expected:
        return not actual
    if expected[0] == ELLIPSIS:
        return any(matches(expected[1:], actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


def run_steps(steps: list[str], cwd: Path) -> list[str]:
    """Run the commands in one bash (so ``echo $?`` sees the previous one); each one's output
    (stderr and stdout as one stream)."""
    script = []
    for command in steps:
        script.append(f"{command} 2>&1\n__status=$?; echo {_END}; (exit $__status)")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": "100",
        "PYTHONUNBUFFERED": "1",
    }
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)], cwd=cwd, capture_output=True, env=env, timeout=300
    )
    # Bytes, not text mode: universal newlines would turn a progress bar's \r into lines.
    stdout = done.stdout.decode("utf-8", "replace")
    parts = stdout.split(_END + "\n")
    assert len(parts) == len(steps) + 1, stdout + done.stderr.decode("utf-8", "replace")
    return parts[:-1]


def scratch(tmp: Path) -> Path:
    """A folder where ``instances/`` is the repository's."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "instances").symlink_to(REPO / "instances")
    return tmp


@pytest.mark.parametrize("doc", DOCS)
def test_every_example_output_is_what_the_command_prints(doc: str, tmp_path: Path) -> None:
    found = examples(doc)
    assert found, f"{doc} has no {MARKER} blocks"
    cwd = scratch(tmp_path / "work")
    failures = []
    for ex in found:
        outputs = run_steps([command for command, _ in ex.steps], cwd)
        for (command, expected), actual in zip(ex.steps, outputs, strict=True):
            if not matches(normalise("\n".join(expected)), normalise(actual)):
                failures.append(
                    f"{doc}:{ex.line}: $ {command}\n--- documented\n"
                    + "\n".join(expected)
                    + "\n--- printed now\n"
                    + actual
                )
    assert not failures, "\n\n".join(failures)


def test_the_matcher_can_fail() -> None:
    assert matches(["a", ELLIPSIS, "d"], ["a", "b", "c", "d"])
    assert not matches(["a", ELLIPSIS, "d"], ["a", "b", "c"])
    assert not matches(["status      optimal"], ["status      feasible"])
    assert normalise("      0.02s  objective 1") == normalise("     12.50s  objective 1")
    assert normalise("bound       18.3") != normalise("bound       10.3")
    assert normalise("schedule    m0  2 task(s) until 57.5 s") != normalise(
        "schedule    m0  2 task(s) until 58.5 s"
    )


if __name__ == "__main__":
    import tempfile

    for doc in sys.argv[1:] or DOCS:
        with tempfile.TemporaryDirectory() as tmp:
            cwd = scratch(Path(tmp) / "work")
            for ex in examples(doc):
                print(f"=== {doc}:{ex.line}")
                outputs = run_steps([command for command, _ in ex.steps], cwd)
                for (command, _), actual in zip(ex.steps, outputs, strict=True):
                    print(f"$ {command}\n{actual}", end="")
