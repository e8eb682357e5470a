"""The four code folders install as one `placement` namespace, and the proto stubs are current."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

FOLDERS = ("solver", "models", "api", "benchmarks")
NOT_SHIPPED = ("benchmarks/reliability",)
"""Folders run from a checkout only (the CI's reliability scripts), not in the wheel."""


def _modules_in_tree() -> set[str]:
    out = set()
    for folder in FOLDERS:
        for path in (REPO / folder).rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            rel = path.relative_to(REPO).as_posix()
            if rel.startswith(tuple(f"{n}/" for n in NOT_SHIPPED)):
                continue
            out.add(f"placement/{rel}")
    return out


@pytest.fixture(scope="module")
def wheel_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel, and what building it printed (stdout and stderr)."""
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    (whl,) = out.glob("placement_solver-*.whl")
    return whl, done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(wheel_build: tuple[Path, str]) -> Path:
    return wheel_build[0]


def test_the_build_prints_no_warning_of_ours(wheel_build: tuple[Path, str]) -> None:
    """Issue 41: setuptools' deprecation of ``project.license`` as a table and its "Package
    would be ignored" for the proto folder were shown by every ``./setup.sh``."""
    printed = wheel_build[1]
    for word in ("Deprecat", "deprecat", "would be ignored", "is absent from the `packages`"):
        assert word not in printed, printed


def test_every_module_is_in_the_wheel(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(_modules_in_tree() - names)
    assert not missing, f"modules missing from the wheel: {missing}"
    assert "placement/solver/schema/proto/placement/v1/placement.proto" in names
    assert {"placement/__init__.py", "placement/py.typed"} <= names
    assert not [n for n in names if n.startswith("placement/benchmarks/reliability/")]


def test_no_top_level_models_or_api_module(wheel: Path) -> None:
    tops = {n.split("/")[0] for n in zipfile.ZipFile(wheel).namelist()}
    assert not tops & {"solver", "models", "api", "benchmarks"}, tops
    assert "placement" in tops


def test_console_script_declared(wheel: Path) -> None:
    zf = zipfile.ZipFile(wheel)
    (entry,) = [n for n in zf.namelist() if n.endswith("entry_points.txt")]
    text = zf.read(entry).decode()
    assert "placement = placement.api.cli:main" in text


def test_generated_proto_modules_are_current() -> None:
    from placement.solver.schema import protogen

    stale = protogen.stale(protogen.generate())
    assert not stale, (
        f"stale generated modules {stale}: run python -m placement.solver.schema.protogen"
    )
