"""House rules read from the source, each a function of a root directory.

* No raw HiGHS or CP-SAT status or handle outside ``solver/backends`` (docs/architecture.md,
  "Results people can trust"): the wrappers there map every status to ``RunStatus`` and
  ``StopReason``, and :class:`~placement.solver.backends.highs.HighsModel` is the one way to
  build and run a HiGHS model.
* No module over :data:`MAX_MODULE_LINES` lines: a file that grows past it holds several
  things and is split by what they compute.

Both read the code folders (:data:`CODE_FOLDERS`) and skip the generated protobuf stubs.
Each rule runs on the repository and on small planted trees, so that a rule that no longer
sees a violation fails here rather than passing silently.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

CODE_FOLDERS = ("solver", "models", "api", "benchmarks")
"""The folders the rules read, relative to the root."""

BACKENDS = Path("solver") / "backends"
"""The one place raw backend statuses and handles may appear."""

MAX_MODULE_LINES = 1_000
"""The most lines a module may have."""

CP_SAT_STATUSES = frozenset({"OPTIMAL", "FEASIBLE", "INFEASIBLE", "MODEL_INVALID", "UNKNOWN"})
"""CP-SAT's status constants (``cp_model.OPTIMAL``, ...)."""

CP_SAT_MODULES = frozenset({"cp_model", "cp_model_pb2"})
"""The names CP-SAT's statuses are read through."""

RAW_NAMES = {
    "HighsModelStatus": "HiGHS model status",
    "HighsStatus": "HiGHS run status",
    "CpSolverStatus": "CP-SAT status",
    "Highs": "raw HiGHS handle",
    "CpSolver": "raw CP-SAT solver",
    "new_highs": "raw HiGHS handle",
    "getModelStatus": "HiGHS model status",
    "setOptionValue": "raw HiGHS option",
}
"""Attribute and imported names that are a raw backend status or handle, and what each is."""


def generated(path: Path) -> bool:
    """A generated protobuf stub (``*_pb2.py``, ``*_pb2_grpc.py``)."""
    return "_pb2" in path.name


def code_files(root: Path) -> list[Path]:
    """Every hand-written Python module of the code folders under ``root``."""
    files: list[Path] = []
    for folder in CODE_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            if "__pycache__" not in path.parts and not generated(path):
                files.append(path)
    return files


def raw_backend_uses(root: Path) -> list[str]:
    """Each raw HiGHS / CP-SAT status or handle outside ``solver/backends`` under ``root``,
    as ``path:line: name (what it is)``; read with ast, so comments and strings never count.
    """
    found: list[str] = []
    for path in code_files(root):
        rel = path.relative_to(root)
        if rel.is_relative_to(BACKENDS):
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            hits: list[tuple[str, str]] = []
            if isinstance(node, ast.Attribute):
                if node.attr in RAW_NAMES:
                    hits.append((node.attr, RAW_NAMES[node.attr]))
                elif (
                    node.attr in CP_SAT_STATUSES
                    and isinstance(node.value, ast.Name)
                    and node.value.id in CP_SAT_MODULES
                ):
                    hits.append((f"{node.value.id}.{node.attr}", "CP-SAT status"))
            elif isinstance(node, ast.ImportFrom) and node.module is not None:
                backend = node.module == "highspy" or node.module.startswith("ortools.sat")
                for alias in node.names:
                    if alias.name in RAW_NAMES and (backend or alias.name == "new_highs"):
                        hits.append((alias.name, RAW_NAMES[alias.name]))
                    elif backend and alias.name in CP_SAT_STATUSES:
                        hits.append((alias.name, "CP-SAT status"))
            found.extend(f"{rel}:{node.lineno}: {name} ({what})" for name, what in hits)
    return found


def oversized_modules(root: Path, limit: int = MAX_MODULE_LINES) -> list[tuple[str, int]]:
    """(path, lines) of each module under ``root`` with more than ``limit`` lines."""
    out: list[tuple[str, int]] = []
    for path in code_files(root):
        lines = len(path.read_text().splitlines())
        if lines > limit:
            out.append((str(path.relative_to(root)), lines))
    return out


def size_report(oversized: list[tuple[str, int]]) -> str:
    """The failure message of the size rule: one offending file per line with its count."""
    listed = "\n".join(f"  {path}: {lines:,} lines" for path, lines in oversized)
    return f"modules over {MAX_MODULE_LINES:,} lines (split them by what they compute):\n{listed}"


# --------------------------------------------------------------------------- the repository


def test_no_raw_backend_status_or_handle_outside_backends() -> None:
    found = raw_backend_uses(REPO)
    assert not found, "raw backend statuses or handles outside solver/backends:\n" + "\n".join(
        f"  {line}" for line in found
    )


def test_no_module_over_the_line_limit() -> None:
    oversized = oversized_modules(REPO)
    assert not oversized, size_report(oversized)


# --------------------------------------------------------------------------- planted trees


def plant(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (relative path -> text) under ``root``; returns ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


COMPLIANT = {
    "solver/backends/highs.py": (
        "import highspy\n\n\n"
        "def new_highs():\n"
        "    h = highspy.Highs()\n"
        '    h.setOptionValue("threads", 1)\n'
        "    return h\n\n\n"
        "def solved(h):\n"
        "    return h.getModelStatus() == highspy.HighsModelStatus.kOptimal\n"
    ),
    "solver/backends/cpsat.py": (
        "from ortools.sat.python import cp_model\n\n\n"
        "def mapped(model):\n"
        "    raw = cp_model.CpSolver().solve(model)\n"
        "    return raw in (cp_model.OPTIMAL, cp_model.FEASIBLE)\n"
    ),
    "models/fam/encoding.py": (
        '"""Says highspy.HighsModelStatus.kOptimal and cp_model.OPTIMAL in a docstring."""\n\n'
        "from placement.solver.backends.base import RunStatus\n"
        "from placement.solver.backends.highs import HighsModel\n\n\n"
        "def solved(model: HighsModel) -> bool:\n"
        "    # highspy.Highs() in a comment is no use of it\n"
        "    return model.run().status == RunStatus.OPTIMAL\n"
    ),
    "solver/schema/v1/fam_pb2.py": "STATUS = cp_model.OPTIMAL\n" + "x = 1\n" * 1_500,
    "models/fam/long.py": "x = 1\n" * MAX_MODULE_LINES,
}
"""A tree both rules accept: raw statuses only in backends and in a generated stub, names in
comments and docstrings only, a module of exactly the limit, and a long generated stub."""


def test_a_compliant_tree_passes_both_rules(tmp_path: Path) -> None:
    root = plant(tmp_path, COMPLIANT)
    assert raw_backend_uses(root) == []
    assert oversized_modules(root) == []


@pytest.mark.parametrize(
    ("source", "name"),
    [
        (
            "import highspy\n\n\ndef f(h):\n"
            "    return h.getModelStatus() != highspy.HighsModelStatus.kOptimal\n",
            "HighsModelStatus",
        ),
        ("import highspy\n\nh = highspy.Highs()\n", "Highs"),
        ("from highspy import HighsModelStatus\n", "HighsModelStatus"),
        ('def f(h):\n    h.setOptionValue("threads", 4)\n', "setOptionValue"),
        (
            "from placement.solver.backends.highs import new_highs\n\nh = new_highs()\n",
            "new_highs",
        ),
        (
            "from ortools.sat.python import cp_model\n\n\ndef f(model):\n"
            "    solver = cp_model.CpSolver()\n"
            "    return solver.solve(model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)\n",
            "cp_model.OPTIMAL",
        ),
        (
            "from ortools.sat.python import cp_model\n\nBAD = cp_model.MODEL_INVALID\n",
            "MODEL_INVALID",
        ),
        ("from ortools.sat.python.cp_model import UNKNOWN\n", "UNKNOWN"),
    ],
)
def test_the_status_rule_fails_on_a_planted_violation(
    tmp_path: Path, source: str, name: str
) -> None:
    root = plant(tmp_path, {**COMPLIANT, "models/fam/bad.py": source})
    found = raw_backend_uses(root)
    assert found, "the planted raw status or handle was not found"
    assert all(line.startswith("models/fam/bad.py:") for line in found), found
    assert any(name in line for line in found), found


@pytest.mark.parametrize("folder", CODE_FOLDERS)
def test_the_status_rule_reads_every_code_folder(tmp_path: Path, folder: str) -> None:
    source = "import highspy\n\nOK = highspy.HighsModelStatus.kOptimal\n"
    root = plant(tmp_path, {f"{folder}/sub/bad.py": source})
    assert raw_backend_uses(root) == [
        f"{folder}/sub/bad.py:3: HighsModelStatus (HiGHS model status)"
    ]


def test_the_size_rule_fails_on_a_planted_module_over_the_limit(tmp_path: Path) -> None:
    root = plant(
        tmp_path,
        {
            **COMPLIANT,
            "models/fam/big.py": "x = 1\n" * (MAX_MODULE_LINES + 1),
            "benchmarks/fam/bigger.py": "y = 2\n" * 1_234,
        },
    )
    oversized = oversized_modules(root)
    assert oversized == [("models/fam/big.py", 1_001), ("benchmarks/fam/bigger.py", 1_234)]
    message = size_report(oversized)
    assert "benchmarks/fam/bigger.py: 1,234 lines" in message
    assert "models/fam/big.py: 1,001 lines" in message
