"""``placement solve FILE --json`` prints JSON and nothing else on stdout, for every bundled
instance.

A real subprocess each time, so that whatever a native solver writes to file descriptor 1
(HiGHS printed its banner there on the first ``highspy.Highs()`` of a process, which broke
``placement solve instances/dag/grid-64x8.json --json | python -m json.tool``) lands in what
is parsed. Every instance file under ``instances/`` (each family: a file whose top-level
section names a registered family), each backend that applies, ``--threads 1`` and the
default, with a short time limit. To stay within about two minutes the matrix is: every
instance with ``auto`` at the default threads and at ``--threads 1``, and every other backend
(``cpsat``, ``milp``, ``greedy``) at one of the two thread settings, alternating.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from placement.solver.family import family_names

ROOT = Path(__file__).resolve().parents[1]
TIME_LIMIT_S = 2
BACKENDS = ("cpsat", "milp", "greedy")


def _instances() -> list[tuple[str, Path]]:
    """(family, file) of every bundled instance (device descriptions and other JSON that is
    not an instance are left out: their top level names no family)."""
    names = set(family_names())
    out = []
    for path in sorted((ROOT / "instances").rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        family = [key for key in data if key in names] if isinstance(data, dict) else []
        if family:
            out.append((family[0], path))
    return out


def _command() -> list[str]:
    """The installed ``placement`` command (the one beside this interpreter when there is
    one), else the same entry point through this interpreter."""
    script = Path(sys.executable).with_name("placement")
    if script.exists():
        return [str(script)]
    found = shutil.which("placement")
    if found:
        return [found]
    return [
        sys.executable,
        "-c",
        "import sys; from placement.api.cli import main; sys.exit(main())",
    ]


def _cases() -> list[pytest.param]:
    cases = []
    for i, (family, path) in enumerate(_instances()):
        name = f"{family}/{path.stem}"
        cases.append(pytest.param(path, "auto", None, id=f"{name}-auto"))
        cases.append(pytest.param(path, "auto", 1, id=f"{name}-auto-t1"))
        for j, backend in enumerate(BACKENDS):
            threads = 1 if (i + j) % 2 else None
            suffix = "-t1" if threads else ""
            cases.append(pytest.param(path, backend, threads, id=f"{name}-{backend}{suffix}"))
    return cases


def test_every_family_has_a_bundled_instance() -> None:
    assert {family for family, _ in _instances()} == set(family_names())


@pytest.mark.parametrize(("path", "backend", "threads"), _cases())
def test_solve_json_prints_only_json(path: Path, backend: str, threads: int | None) -> None:
    argv = [*_command(), "solve", str(path), "--json", "--backend", backend]
    argv += ["--time-limit", str(TIME_LIMIT_S)]
    if threads is not None:
        argv += ["--threads", str(threads)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        pytest.fail(f"stdout is not JSON ({exc}); rc={done.returncode}\n{done.stdout[:500]!r}")
    assert isinstance(result, dict) and result.get("status"), done.stderr[-2000:]
