"""Warm starts in the engine, the library and the command line, on every family.

A start (an earlier answer, by names) is kept whole for the instance it was found for and is
the first incumbent; for a changed instance (a piece removed, a node or core gone, a piece
added) the report names what was dropped and why; a start the changed instance no longer
admits as a whole is said to be infeasible (or is cut to what the checker accepts). Real
solvers throughout; every returned solution passes the family's checker.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import placement
from placement.solver import InputError, Result, SolveOptions, get_family
from placement.solver.family import CheckReport, keep_while_feasible
from placement.solver.schema.v1 import placement_pb2
from tests.conftest import REPO

FILES = {
    "gpu": "instances/gpu/tiny.json",
    "dag": "instances/dag/random-20x3.json",
    "partition": "instances/partition/tiny-chain.json",
    "entanglement": "instances/entanglement/tiny.json",
    "mc": "instances/mc/tasks-20x4.json",
}


def _doc(family: str) -> dict[str, Any]:
    return json.loads((REPO / FILES[family]).read_text())


_BASES: dict[str, Result] = {}


def _base(family: str) -> Result:
    """The answer for the unchanged instance that every start below comes from (one solve
    per family for the module)."""
    if family not in _BASES:
        _BASES[family] = placement.solve(_doc(family), time_limit_s=1)
    return _BASES[family]


def _solve(doc: dict[str, Any], start: Any, **options: Any) -> Result:
    result = placement.solve(doc, start=start, **{"time_limit_s": 1, **options})
    assert result.warm_start is not None
    if result.solution is not None:
        family = get_family(result.family)
        assert family.check(result.instance, result.solution).feasible
    return result


def _reasons(result: Result) -> str:
    assert result.warm_start is not None
    return " | ".join(d.reason for d in result.warm_start.dropped)


def _score(result: Result) -> tuple[float, ...]:
    family = get_family(result.family)
    report: CheckReport = family.check(result.instance, result.solution)
    return report.score()


@pytest.mark.parametrize("family", sorted(FILES))
def test_a_start_for_the_same_instance_is_kept_whole_and_is_the_first_incumbent(
    family: str,
) -> None:
    base = _base(family)
    assert base.solution is not None
    result = _solve(_doc(family), base, backend="greedy")
    warm = result.warm_start
    assert warm is not None and warm.feasible and not warm.dropped
    assert warm.kept == warm.pieces > 0
    assert result.history[0].source == "start"
    assert warm.objective == pytest.approx(base.objective)
    # At least as good as the start; improved says whether strictly better.
    assert _score(result) >= _score(base)
    assert warm.improved == (_score(result) > _score(base))
    assert result.to_dict()["warm_start"]["kept"] == warm.kept


def _gpu_changed(doc: dict[str, Any], base: Result) -> tuple[dict[str, Any], list[str]]:
    # tiny: 'gang' on n1, 'train' and 'infer' on n0. 'infer' leaves, n0 goes: 'gang' stays.
    placed = list(base.named.placements)
    gone_job = placed[-1]
    node = base.named.placements[gone_job].workers[0].node
    assert sum(p.workers[0].node == node for p in base.named.placements.values()) == 2
    doc["gpu"]["jobs"] = [j for j in doc["gpu"]["jobs"] if j["name"] != gone_job]
    doc["gpu"]["jobs"].append(dict(doc["gpu"]["jobs"][-1], name="arrived"))
    doc["gpu"]["cluster"]["nodes"] = [
        n for n in doc["gpu"]["cluster"]["nodes"] if n["name"] != node
    ]
    return doc, [f"job {gone_job!r} no longer in the instance", f"node {node!r} gone"]


def _dag_changed(doc: dict[str, Any], base: Result) -> tuple[dict[str, Any], list[str]]:
    del base
    doc["dag"]["machines"] = [m for m in doc["dag"]["machines"] if m["name"] != "p2"]
    for t in doc["dag"]["tasks"]:
        t["times"] = [x for x in t["times"] if x["type"] != "p2"]
    doc["dag"]["tasks"].append(dict(doc["dag"]["tasks"][0], name="arrived"))
    return doc, ["machine 'p2' gone"]


def _partition_changed(doc: dict[str, Any], base: Result) -> tuple[dict[str, Any], list[str]]:
    del base
    last = doc["partition"]["layers"].pop()
    return doc, [f"layer {last['name']!r} no longer in the instance"]


def _entanglement_changed(doc: dict[str, Any], base: Result) -> tuple[dict[str, Any], list[str]]:
    gone = next(iter(base.named.routes))
    doc["entanglement"]["requests"] = [
        r for r in doc["entanglement"]["requests"] if r["name"] != gone
    ]
    return doc, [f"request {gone!r} no longer in the instance"]


def _mc_changed(doc: dict[str, Any], base: Result) -> tuple[dict[str, Any], list[str]]:
    del base
    gone = doc["mc"]["tasks"].pop(0)["name"]
    doc["mc"]["tasks"].append(dict(doc["mc"]["tasks"][0], name="arrived"))
    return doc, [f"task {gone!r} no longer in the instance"]


CHANGES: dict[str, Callable[[dict[str, Any], Result], tuple[dict[str, Any], list[str]]]] = {
    "gpu": _gpu_changed,
    "dag": _dag_changed,
    "partition": _partition_changed,
    "entanglement": _entanglement_changed,
    "mc": _mc_changed,
}


@pytest.mark.parametrize("family", sorted(FILES))
def test_a_start_for_a_changed_instance_is_kept_in_part_and_says_what_was_dropped(
    family: str,
) -> None:
    base = _base(family)
    doc, expected = CHANGES[family](_doc(family), base)
    result = _solve(doc, base, backend="greedy")
    warm = result.warm_start
    assert warm is not None
    assert 0 < warm.kept < warm.pieces
    assert warm.pieces - warm.kept == len(warm.dropped)
    reasons = _reasons(result)
    for words in expected:
        assert words in reasons
    assert warm.feasible, warm.message
    assert result.history[0].source == "start"
    line = warm.summary()
    assert line.startswith(f"kept {warm.kept} of {warm.pieces} (") and expected[0] in line


def _gpu_tight(doc: dict[str, Any]) -> dict[str, Any]:
    for node in doc["gpu"]["cluster"]["nodes"]:
        node["cpu_milli"] = 9000
    return doc


def _dag_tight(doc: dict[str, Any]) -> dict[str, Any]:
    base = _base("dag")
    last = max(base.named.runs.values(), key=lambda r: r.end_s)
    for t in doc["dag"]["tasks"]:
        if t["name"] == last.task:
            t["deadline_s"] = last.end_s - 1
    return doc


def _partition_tight(doc: dict[str, Any]) -> dict[str, Any]:
    for d in doc["partition"]["devices"]:
        d["memory_bytes"] //= 3
    return doc


def _entanglement_tight(doc: dict[str, Any]) -> dict[str, Any]:
    for link in doc["entanglement"]["links"]:
        link["channels"] = 1
    return doc


def _mc_tight(doc: dict[str, Any]) -> dict[str, Any]:
    for core in doc["mc"]["cores"]:
        core["speed"] = 0.5
    return doc


TIGHT = {
    "gpu": (_gpu_tight, "CPU"),
    "dag": (_dag_tight, "deadline"),
    "partition": (_partition_tight, "bytes over"),
    "entanglement": (_entanglement_tight, "channels used"),
    "mc": (_mc_tight, "no longer fits"),
}


@pytest.mark.parametrize("family", sorted(FILES))
def test_a_start_the_instance_no_longer_admits_as_a_whole(family: str) -> None:
    """Capacities shrunk under the start: families whose solutions may leave work out (gpu,
    entanglement) cut the start to what the checker accepts and name each piece cut with
    the rule it broke; the others say the start is infeasible as a whole and why. Either
    way nothing unchecked is returned."""
    tighten, words = TIGHT[family]
    result = _solve(tighten(_doc(family)), _base(family), backend="greedy")
    warm = result.warm_start
    assert warm is not None
    if family in ("gpu", "entanglement"):
        assert warm.dropped and words in _reasons(result)
        assert warm.kept < warm.pieces
    else:
        assert not warm.feasible and warm.objective is None and warm.improved is None
        assert words in warm.message + _reasons(result)
        assert "infeasible as a whole" in warm.summary()
        assert not result.history or result.history[0].source != "start"


def test_the_start_hints_the_exact_backend_and_is_returned_when_nothing_beats_it() -> None:
    base = _base("gpu")
    result = _solve(_doc("gpu"), base, backend="cpsat")
    assert result.warm_start is not None and result.warm_start.feasible
    assert result.history[0].source == "start"
    assert result.objective >= base.objective


def test_a_solution_of_another_family_is_refused_naming_the_field() -> None:
    with pytest.raises(InputError, match=r"start\.dag.*'gpu'"):
        placement.solve(_doc("gpu"), time_limit_s=1, start=_base("dag"))
    with pytest.raises(InputError, match="start"):
        placement.solve(_doc("gpu"), time_limit_s=1, start=42)


def test_starts_given_as_files_json_text_dicts_and_messages(tmp_path: Path) -> None:
    base = _base("gpu")
    as_dict = base.to_dict()
    path = tmp_path / "result.json"
    path.write_text(json.dumps(as_dict))
    envelope = placement_pb2.Solution()
    envelope.gpu.CopyFrom(get_family("gpu").solution_to_message(base.instance, base.solution))
    for start in (as_dict, json.dumps(as_dict), str(path), path, envelope, envelope.gpu):
        result = placement.solve(_doc("gpu"), time_limit_s=0.5, backend="greedy", start=start)
        assert result.warm_start is not None and result.warm_start.kept == len(
            base.named.placements
        )


def test_the_engine_takes_a_start_and_names_its_source() -> None:
    base = _base("mc")
    instance = placement.load(_doc("mc"))
    envelope = placement_pb2.Solution()
    envelope.mc.CopyFrom(get_family("mc").solution_to_message(base.instance, base.solution))
    result = placement.solver.solve(
        instance, SolveOptions(time_limit_s=0.5, backend="greedy"), envelope, "job abc"
    )
    assert result.warm_start is not None and result.warm_start.source == "job abc"


def test_keep_while_feasible_keeps_the_longest_acceptable_prefix_in_few_checks() -> None:
    """Pieces are numbers, the 'checker' accepts a set without 13 or 29: exactly those two
    are dropped, in far fewer checks than one per piece."""
    calls = []

    def check(chosen: list[int]) -> CheckReport:
        calls.append(1)
        bad = [x for x in chosen if x in (13, 29)]
        return CheckReport(not bad, [f"{x} is unlucky" for x in bad], {"n": len(chosen)}, ("max",))

    pieces = [(f"p{i}", i) for i in range(200)]
    solution, kept, dropped = keep_while_feasible(check, list, pieces)
    assert sorted(solution) == [i for i in range(200) if i not in (13, 29)]
    assert len(kept) == 198 and dropped == [
        ("p13", "p13: 13 is unlucky"),
        ("p29", "p29: 29 is unlucky"),
    ]
    assert len(calls) < 60


def test_cli_solve_start_prints_one_start_line_and_json(tmp_path: Path) -> None:
    from tests.test_cli import run

    first = tmp_path / "first.json"
    proc = run(
        "solve", REPO / FILES["gpu"], "--time-limit", "1", "-q", "--out", first, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    changed, expected = _gpu_changed(_doc("gpu"), _base("gpu"))
    instance = tmp_path / "changed.json"
    instance.write_text(json.dumps(changed))
    proc = run("solve", instance, "--time-limit", "1", "-q", "--start", first, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    start_lines = [line for line in proc.stdout.splitlines() if line.startswith("start ")]
    assert len(start_lines) == 1 and "kept 1 of 3 (" in start_lines[0]
    assert expected[0] in start_lines[0]
    proc = run("solve", instance, "--time-limit", "1", "--json", "--start", first, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warm = json.loads(proc.stdout)["warm_start"]
    assert warm["kept"] == 1 and warm["pieces"] == 3 and warm["source"] == f"solution {first}"
    # The wrong family, and an instance file given as a start: exit 2, one line naming it.
    proc = run("solve", REPO / FILES["dag"], "--start", first, cwd=tmp_path)
    assert proc.returncode == 2 and "--start" in proc.stderr and "gpu" in proc.stderr
    proc = run("solve", instance, "--start", instance, cwd=tmp_path)
    assert proc.returncode == 2 and "expected a solution file" in proc.stderr
