"""The ladder of layers, read from the code: every import of every module, with ast.

    schema (placement.solver.schema)  <  solver  <  models  <  api, benchmarks

An import may only go down the ladder (or stay on its rung). On the top rung, benchmarks may
import api, and api reaches benchmarks only inside a function (the ``bench`` command loads
the suites when it runs). Imports among our modules form no circle, function-level ones
included: a function-local import buys start-up time or keeps an optional dependency
optional, and says so; it never hides a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

from tests.conftest import REPO

FOLDERS = {"solver": "placement.solver", "models": "placement.models", "api": "placement.api"}
FOLDERS["benchmarks"] = "placement.benchmarks"


def layer(module: str) -> tuple[int, str]:
    """(rung, package) of one of our modules."""
    if module == "placement.solver.schema" or module.startswith("placement.solver.schema."):
        return 0, "schema"
    for rung, package in ((1, "solver"), (2, "models"), (3, "api"), (3, "benchmarks")):
        root = f"placement.{package}"
        if module == root or module.startswith(root + "."):
            return rung, package
    raise ValueError(module)


def module_files() -> dict[str, Path]:
    """Module name -> file, for every module of the four code folders."""
    out: dict[str, Path] = {}
    for folder, package in FOLDERS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join((package, *parts))] = path
    return out


MODULES = module_files()


def _imports(module: str, path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level) for each import of one of our modules."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    out: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = top and not isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            if isinstance(child, ast.Import):
                out.extend((a.name, child.lineno, top) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = module.split(".")
                    anchor = anchor[: len(anchor) - child.level + (1 if is_package else 0)]
                    base = ".".join([*anchor, base] if base else anchor)
                for a in child.names:
                    candidate = f"{base}.{a.name}"
                    out.append((candidate if candidate in MODULES else base, child.lineno, top))
            visit(child, inner)

    visit(tree, True)
    return [(name, line, top) for name, line, top in out if name.startswith("placement.")]


IMPORTS = {module: _imports(module, path) for module, path in MODULES.items()}


def test_the_tree_is_read() -> None:
    assert "placement.solver.portfolio" in MODULES
    assert "placement.solver.schema.v1.placement_pb2" in MODULES
    assert any(m.startswith("placement.models.gpu.") for m in MODULES)
    assert sum(len(v) for v in IMPORTS.values()) > 100


def test_no_import_climbs_the_ladder() -> None:
    bad = []
    for module, imports in IMPORTS.items():
        rung, package = layer(module)
        for target, line, top in imports:
            target_rung, target_package = layer(target)
            where = f"{MODULES[module].relative_to(REPO)}:{line} imports {target}"
            if target_rung > rung:
                bad.append(where)
            elif package == "api" and target_package == "benchmarks" and top:
                bad.append(where + " at module level (only the bench command, inside it)")
    assert not bad, "imports that climb the ladder:\n" + "\n".join(bad)


def circles(
    imports: dict[str, list[tuple[str, int, bool]]], *, module_level_only: bool
) -> list[list[str]]:
    """The import circles among the modules of ``imports`` (each sorted): strongly connected
    components of more than one module, over module-level imports only or over all."""
    graph = nx.DiGraph()
    for module, found in imports.items():
        for target, _, top in found:
            if (top or not module_level_only) and target != module and target in imports:
                graph.add_edge(module, target)
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


def _edges_within(circle: list[str]) -> list[str]:
    """Where the modules of one circle import each other: ``file:line imports target``."""
    members = set(circle)
    return [
        f"{MODULES[module].relative_to(REPO)}:{line} imports {target}"
        + ("" if top else " (in a function)")
        for module in circle
        for target, line, top in IMPORTS[module]
        if target in members and target != module
    ]


def test_no_circle_among_module_level_imports() -> None:
    found = circles(IMPORTS, module_level_only=True)
    assert not found, f"import circles: {found}"


def test_no_circle_among_all_imports() -> None:
    """Function-level imports count too: a circle hidden inside a function is still one."""
    found = circles(IMPORTS, module_level_only=False)
    where = "\n".join(e for circle in found for e in _edges_within(circle))
    assert not found, f"import circles: {found}\n{where}"


def test_the_circle_rule_catches_one_through_a_function_level_import(tmp_path: Path) -> None:
    """Two planted modules: a imports b at the top, b imports a inside a function. The
    module-level rule does not see it; the rule over all imports does."""
    (tmp_path / "a.py").write_text("from placement.solver.probe_b import g\n\n\nf = g\n")
    (tmp_path / "b.py").write_text(
        "def g():\n    from placement.solver.probe_a import f  # hides a circle\n    return f\n"
    )
    planted = {
        "placement.solver.probe_a": _imports("placement.solver.probe_a", tmp_path / "a.py"),
        "placement.solver.probe_b": _imports("placement.solver.probe_b", tmp_path / "b.py"),
    }
    assert planted["placement.solver.probe_a"] == [("placement.solver.probe_b", 1, True)]
    assert planted["placement.solver.probe_b"] == [("placement.solver.probe_a", 2, False)]
    assert circles(planted, module_level_only=True) == []
    assert circles(planted, module_level_only=False) == [
        ["placement.solver.probe_a", "placement.solver.probe_b"]
    ]


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("placement.solver.schema.v1.gpu_pb2", (0, "schema")),
        ("placement.solver.family", (1, "solver")),
        ("placement.models.dag.check", (2, "models")),
        ("placement.api.server.service", (3, "api")),
    ],
)
def test_layer_names_the_rung(module: str, expected: tuple[int, str]) -> None:
    assert layer(module) == expected


def test_the_ladder_test_catches_a_climbing_import(tmp_path: Path) -> None:
    """The reader sees a function-local import of api from solver (a test that can fail)."""
    source = tmp_path / "probe.py"
    source.write_text("def f():\n    from placement.api import cli\n    return cli\n")
    ((target, _, top),) = _imports("placement.solver.probe", source)
    assert target == "placement.api.cli" or target == "placement.api"
    assert not top
    assert layer(target)[0] > layer("placement.solver.probe")[0]


def _local_imports_without_reason(path: Path) -> list[str]:
    """Function-local imports with no comment saying why: on the line, in the three lines
    above it, or above the first of a run of consecutive imports it belongs to."""
    lines = path.read_text().split("\n")

    def explained(node: ast.stmt) -> bool:
        above = lines[max(0, node.lineno - 4) : node.lineno - 1]
        return "#" in lines[node.lineno - 1] or any(a.strip().startswith("#") for a in above)

    out = []
    for func in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for block in ast.walk(func):
            for field in ("body", "orelse", "finalbody", "handlers"):
                statements = getattr(block, field, None)
                if not isinstance(statements, list):
                    continue
                run_ok = False
                for stmt in statements:
                    if not isinstance(stmt, ast.Import | ast.ImportFrom):
                        run_ok = False
                        continue
                    run_ok = run_ok or explained(stmt)
                    if not run_ok:
                        out.append(f"{path.relative_to(REPO)}:{stmt.lineno}")
    return out


def test_every_function_local_import_says_why() -> None:
    """A function-local import buys start-up time or breaks an optional dependency, and its
    comment says which; one that hides a circle has no reason to give."""
    missing = [
        where
        for path in MODULES.values()
        if "_pb2" not in path.name
        for where in _local_imports_without_reason(path)
    ]
    assert not missing, "function-local imports without a reason:\n" + "\n".join(
        sorted(set(missing))
    )


def test_the_reason_rule_flags_an_unexplained_local_import(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("tests.test_layers.REPO", tmp_path)
    source = tmp_path / "probe.py"
    source.write_text(
        "def f():\n    import json\n    return json\n\n\n"
        "def g():\n    # ortools loads in 0.85 s: only when a model is built\n"
        "    import os\n    import sys\n    return os, sys\n"
    )
    assert _local_imports_without_reason(source) == ["probe.py:2"]
