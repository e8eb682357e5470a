"""The Helix layer-placement model: the artifact's reader, the max-flow evaluator, the exact
MILP and the replica plans (models/partition/formats/helix.py, serving_flow.py, serving_milp.py,
serving_plans.py)."""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from placement.models.partition import FAMILY
from placement.models.partition.formats.helix import build_cluster, load_helix, read_placement
from placement.models.partition.greedy import greedy_solutions
from placement.models.partition.instance import (
    SINK,
    SOURCE,
    PartitionInstance,
    PartitionMode,
    PartitionSolution,
)
from placement.models.partition.serving_cluster import HelixCluster, HelixNode, cluster_of
from placement.models.partition.serving_flow import check_placement, score_placement
from placement.models.partition.serving_milp import (
    links_never_bind,
    relaxation_bound,
    solve_placement,
)
from placement.models.partition.serving_plans import (
    PipelinePlan,
    best_plan,
    check_plan,
    plan_throughput,
)
from placement.solver import SolveOptions, solve
from placement.solver.errors import InputError
from placement.solver.family import instance_document, instance_from_document

DATA = Path(__file__).parent / "data" / "helix"
HELIX = "partition/helix"


def tiny() -> HelixCluster:
    """tests/data/helix: node 0 of type A (T = 10, 6, 4), nodes 1, 2 of type B (T = 5, 3);
    4 layers; links 1e5 tokens/s except 0 <-> 2 at 2 tokens/s."""
    return build_cluster(DATA / "tiny_cluster.ini", {"": (DATA / "tiny_model.lp", None)}, 4, "tiny")


# --- the reader and the evaluator on the hand-made sample -----------------------------------


def test_tiny_sample_is_read_as_written() -> None:
    c = tiny()
    assert [n.type for n in c.nodes] == ["A", "B", "B"]
    assert c.throughput == {"A": (10.0, 6.0, 4.0), "B": (5.0, 3.0)}
    # 1 mbps = 1e6; the MILP's caps give token size 1e6 / 5e5 = 2, activation 1e6 / 1e5 = 10
    assert c.links[(SOURCE, 1)] == pytest.approx(5e5)
    assert c.links[(0, 1)] == c.links[(1, 0)] == pytest.approx(1e5)
    assert c.links[(0, 2)] == c.links[(2, 0)] == pytest.approx(2.0)  # 0.02 kbps / 10
    assert c.links[(2, SINK)] == pytest.approx(5e5)
    assert not links_never_bind(c)


def test_tiny_placement_scored_by_hand() -> None:
    c = tiny()
    placement = read_placement(DATA / "tiny_sol.ini", c)
    assert placement == {0: (0, 2), 1: (2, 2), 2: (2, 2)}
    # node 0 serves 6; it hands 3 to node 1 (node 1's limit) and 2 to node 2 (the link)
    assert score_placement(c, placement).tokens_per_s == pytest.approx(5.0)
    # without the narrow link's limit the same placement would carry min(6, 3 + 3) = 6
    wide = HelixCluster(c.name, 4, c.nodes, c.throughput, {**c.links, (0, 2): 1e5})
    assert score_placement(wide, placement).tokens_per_s == pytest.approx(6.0)
    # boundaries that do not meet carry nothing (Helix's rule); its partial rule lets them
    apart = {0: (0, 1), 1: (2, 2)}  # layer 1 is held by nobody
    assert score_placement(c, apart).tokens_per_s == 0.0
    overlap = {0: (0, 3), 1: (2, 2)}  # [0, 3) then [2, 4): partial inference joins them
    assert score_placement(c, overlap).tokens_per_s == 0.0
    assert score_placement(c, overlap, partial=True).tokens_per_s == pytest.approx(3.0)


def test_checker_rejects_broken_placements() -> None:
    c = tiny()
    assert check_placement(c, {1: (0, 3)})  # B holds at most 2 layers
    assert check_placement(c, {0: (2, 3)})  # [2, 5) runs past layer 4
    assert check_placement(c, {0: (-1, 1)})
    assert check_placement(c, {0: (0, 0)})
    assert check_placement(c, {7: (0, 1)})  # no such node
    assert score_placement(c, {1: (0, 3)}).tokens_per_s == 0.0
    assert not score_placement(c, {1: (0, 3)}).feasible


def test_malformed_files_are_input_errors(tmp_path: Path) -> None:
    c = tiny()
    bad = tmp_path / "sol.ini"
    bad.write_text("[Settings]\noffset=2\n\n[Solution]\ncompute_node_2=[0, 2]\n")
    with pytest.raises(InputError, match="consecutive"):
        read_placement(bad, c)
    bad.write_text("[Settings]\noffset=2\n\n[Solution]\ncompute_node_9=[0]\n")
    with pytest.raises(InputError, match="compute_node_9"):
        read_placement(bad, c)
    with pytest.raises(InputError, match="model"):
        load_helix(DATA, "gpt")
    with pytest.raises(InputError, match="the Helix artifact folder"):
        load_helix(tmp_path, "llama2_70b")


def test_a_folder_without_the_artifact_is_named_with_what_it_misses(tmp_path: Path) -> None:
    """Issue 41: the error said ``file:`` and the first path opened, not the folder given."""
    done = subprocess.run(
        [sys.executable, "-m", "placement.api.cli", "import", "helix", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"placement: error: DIR: got '{tmp_path}', expected"), done.stderr
    assert "config/cluster24.ini, layout_llama70b/ilp/ilp_model.lp" in done.stderr
    assert f"missing in {tmp_path}" in done.stderr


def test_instance_round_trip_through_the_family() -> None:
    c = tiny()
    instance = c.to_instance()
    FAMILY.validate(instance)
    back = instance_from_document(instance_document(instance))
    assert back.workload.mode is PartitionMode.SERVING_FLOW
    assert cluster_of(back) == c


# --- the family path: checker, greedy, exact, errors ----------------------------------------


def ranges(placement: dict[int, tuple[int, int]]) -> PartitionSolution:
    return PartitionSolution((), tuple((d, s, k) for d, (s, k) in sorted(placement.items())))


def test_family_checker_scores_and_rejects_ranges() -> None:
    c = tiny()
    instance = c.to_instance()
    placement = read_placement(DATA / "tiny_sol.ini", c)
    report = FAMILY.check(instance, ranges(placement))
    assert report.feasible and report.terms == {"tokens_per_s": pytest.approx(5.0)}
    assert report.senses == ("max",)
    assert FAMILY.objective_sense(instance) == "max"
    for broken, words in (
        ({1: (0, 3)}, "expected 1..2"),  # B holds at most 2 layers
        ({0: (2, 3)}, "outside [0, 4)"),
        ({0: (0, 0)}, "expected 1..3"),
        ({0: (-1, 2)}, "outside"),
    ):
        report = FAMILY.check(instance, ranges(broken))
        assert not report.feasible and any(words in v for v in report.violations), report
    twice = PartitionSolution((), ((0, 0, 2), (0, 2, 2)))
    assert "more than one layer range" in FAMILY.check(instance, twice).violations[0]
    nowhere = FAMILY.corrupt(instance, ranges(placement))
    assert not FAMILY.check(instance, nowhere).feasible
    assignments = PartitionSolution((0, 0, 0, 0))
    assert not FAMILY.check(instance, assignments).feasible
    # partial inference is the instance's rule: the overlap of the sample's test above
    partial = HelixCluster(c.name, 4, c.nodes, c.throughput, c.links, c.notes, partial=True)
    overlap = ranges({0: (0, 3), 1: (2, 2)})
    assert FAMILY.check(instance, overlap).terms["tokens_per_s"] == 0.0
    assert FAMILY.check(partial.to_instance(), overlap).terms["tokens_per_s"] == pytest.approx(3.0)


def test_engine_solves_the_sample_to_its_brute_force_optimum() -> None:
    c = tiny()
    result = solve(c.to_instance(), SolveOptions(time_limit_s=20))
    assert result.sense == "max"
    assert result.objective == pytest.approx(brute_force(c))  # 5.0, the narrow link binds
    assert result.bound is not None and result.bound >= result.objective - 1e-9
    assert FAMILY.check(c.to_instance(), result.solution).feasible
    named = result.named
    assert set(named.ranges) <= {n.name for n in c.nodes} and not named.device_of


def test_partial_inference_gets_no_milp_bound() -> None:
    """Under the partial rule the boundary MILP's bound is not a bound: only the quick
    (relaxation) bound is reported, and the checker scores with the partial rule."""
    c = tiny()
    partial = HelixCluster(c.name, 4, c.nodes, c.throughput, c.links, c.notes, partial=True)
    instance = partial.to_instance()
    assert instance.serving_flow is not None and instance.serving_flow.partial_inference
    result = solve(instance, SolveOptions(time_limit_s=20))
    assert result.bound == pytest.approx(relaxation_bound(partial))
    report = FAMILY.check(instance, result.solution)
    assert report.feasible and result.objective == report.objective
    assert result.objective <= result.bound + 1e-9


def test_greedy_gives_feasible_pipelines() -> None:
    c = random_cluster(0, wide=True)
    instance = c.to_instance()
    for name, solution in greedy_solutions(instance):
        report = FAMILY.check(instance, solution)
        assert report.feasible, (name, report.violations)
        assert report.objective > 0, name
        held = sorted((s, k) for _, s, k in solution.ranges)
        assert held[0][0] == 0  # pipelines start at layer 0


def doc(instance: PartitionInstance) -> dict:
    return json.loads(json.dumps(instance_document(instance)))


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        (lambda d: d["partition"].pop("serving_flow"), ["partition.serving_flow", "absent"]),
        (
            lambda d: d["partition"]["serving_flow"]["device_types"][0]["tokens_per_s"].pop(),
            ["partition.serving_flow.device_types[0].tokens_per_s", "max_layers = 3"],
        ),
        (
            lambda d: d["partition"]["serving_flow"]["links"][0].update(dst="nobody"),
            ["partition.serving_flow.links[0].dst", "nobody"],
        ),
        (
            lambda d: d["partition"]["serving_flow"]["links"][0].update(tokens_per_s=-1),
            ["partition.serving_flow.links[0].tokens_per_s", "[0, 1e12]"],
        ),
        (
            lambda d: d["partition"]["devices"][0].update(type="Z"),
            ["partition.devices[0].type", "A, B"],
        ),
        (
            lambda d: d["partition"]["workload"].update(mode="LLM_SERVING"),
            ["partition.serving_flow", "unless workload.mode is LLM_SERVING_FLOW"],
        ),
    ],
)
def test_bad_flow_sections_name_the_field(change, fragments) -> None:
    d = doc(tiny().to_instance())
    change(d)
    with pytest.raises(InputError) as err:
        instance_from_document(d)
    for fragment in fragments:
        assert fragment in str(err.value)


def cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "placement.api.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_sample_through_the_command_line(tmp_path: Path) -> None:
    instance = tmp_path / "tiny.json"
    instance.write_text(json.dumps(instance_document(tiny().to_instance())))
    done = cli("solve", instance, "--time-limit", "20", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["objective"] == pytest.approx(5.0) and result["sense"] == "max"
    solution = tmp_path / "sol.json"
    solution.write_text(json.dumps(result["solution"]))
    check = cli("check", instance, solution, "--json", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["objective_terms"]["tokens_per_s"] == pytest.approx(5.0)
    # a broken range: exit 1, the violation named
    bad = json.loads(solution.read_text())
    bad["partition"]["ranges"][0]["layer_count"] = 9
    solution.write_text(json.dumps(bad))
    check = cli("check", instance, solution, cwd=tmp_path)
    assert check.returncode == 1 and "expected 1.." in check.stdout
    bad["partition"]["ranges"][0]["device"] = "nobody"
    solution.write_text(json.dumps(bad))
    check = cli("check", instance, solution, cwd=tmp_path)
    assert check.returncode == 2 and "partition.ranges[0].device" in check.stderr


# --- exact = brute force -------------------------------------------------------------------


def brute_force(c: HelixCluster) -> float:
    """Best max flow over every placement (each node: unused or any range in its limit)."""
    options = []
    for i in range(len(c.nodes)):
        ranges = [None] + [
            (s, k) for k in range(1, c.limit(i) + 1) for s in range(c.num_layers - k + 1)
        ]
        options.append(ranges)
    best = 0.0
    for combo in itertools.product(*options):
        placement = {i: r for i, r in enumerate(combo) if r is not None}
        best = max(best, score_placement(c, placement).tokens_per_s)
    return best


def random_cluster(seed: int, wide: bool) -> HelixCluster:
    rng = random.Random(seed)
    L = rng.randint(3, 5)
    types = {
        "X": tuple(sorted((rng.randint(5, 40) for _ in range(rng.randint(2, 3))), reverse=True)),
        "Y": tuple(sorted((rng.randint(5, 40) for _ in range(rng.randint(1, 2))), reverse=True)),
    }
    nodes = tuple(HelixNode(f"compute_node_{i + 2}", rng.choice("XY")) for i in range(3))
    links: dict[tuple[int | str, int | str], float] = {}
    for i in range(3):
        links[(SOURCE, i)] = links[(i, SINK)] = 1e4
        for j in range(3):
            if i != j:
                links[(i, j)] = 1e4 if wide else float(rng.randint(1, 30))
    return HelixCluster(f"random-{seed}", L, nodes, types, links)


@pytest.mark.parametrize("seed", range(4))
def test_exact_equals_brute_force(seed: int) -> None:
    wide = random_cluster(seed, wide=True)
    assert links_never_bind(wide)
    optimum = brute_force(wide)
    result = solve_placement(wide, time_limit_s=20)
    assert result.proven
    assert result.tokens_per_s == pytest.approx(optimum, abs=1e-5)
    assert relaxation_bound(wide) >= optimum - 1e-6
    # narrow links: the MILP's bound stays a bound, its placement no better than the best
    narrow = random_cluster(seed, wide=False)
    optimum = brute_force(narrow)
    result = solve_placement(narrow, time_limit_s=20)
    assert result.bound >= optimum - 1e-6
    assert result.tokens_per_s <= optimum + 1e-6
    assert not result.proven or result.tokens_per_s == pytest.approx(optimum, abs=1e-5)


def test_exact_on_tiny_sample_is_honest_about_links() -> None:
    c = tiny()
    result = solve_placement(c, time_limit_s=20)
    assert brute_force(c) == pytest.approx(5.0)
    assert result.tokens_per_s == pytest.approx(5.0)
    assert result.bound >= 5.0 and not result.proven  # the narrow link is not in the MILP


# --- replica plans -------------------------------------------------------------------------


def test_plan_checker_rejects_broken_plans() -> None:
    c = tiny()
    good = PipelinePlan((((0, 0, 2), (1, 2, 2)),))
    assert plan_throughput(c, good) == (pytest.approx(3.0), [])
    over = PipelinePlan((((1, 0, 3), (0, 3, 1)),))  # B holds at most 2: memory overflow
    assert any("memory overflow" in e for e in check_plan(c, over))
    gap = PipelinePlan((((0, 0, 1), (1, 2, 2)),))  # layer 1 held by nobody
    assert any("gap" in e for e in check_plan(c, gap))
    overlap = PipelinePlan((((0, 0, 3), (1, 2, 2)),))
    assert any("overlap" in e for e in check_plan(c, overlap))
    short = PipelinePlan((((0, 0, 3),),))
    assert any("ends at layer 3" in e for e in check_plan(c, short))
    reused = PipelinePlan((((0, 0, 2), (1, 2, 2)), ((0, 0, 2), (2, 2, 2))))
    assert any("already serves" in e for e in check_plan(c, reused))
    assert plan_throughput(c, reused)[0] == 0.0


def brute_plans(c: HelixCluster, free: frozenset[int]) -> float:
    """Best plan value: pick a pipeline (an ordered sequence of free nodes with layer
    counts tiling [0, L)), recurse on the nodes left."""
    best = 0.0
    for r in range(1, len(free) + 1):
        for seq in itertools.permutations(sorted(free), r):
            for ks in itertools.product(*(range(1, c.limit(i) + 1) for i in seq)):
                if sum(ks) != c.num_layers:
                    continue
                stages, at = [], 0
                for i, k in zip(seq, ks, strict=True):
                    stages.append((i, at, k))
                    at += k
                value, errors = plan_throughput(c, PipelinePlan((tuple(stages),)))
                assert not errors
                best = max(best, value + brute_plans(c, free - set(seq)))
    return best


@pytest.mark.parametrize("seed", range(4))
def test_best_plan_equals_brute_force(seed: int) -> None:
    c = random_cluster(seed, wide=True)
    value, errors = plan_throughput(c, best_plan(c))
    assert not errors
    assert value == pytest.approx(brute_plans(c, frozenset(range(len(c.nodes)))))
    # a plan is a flow: never above the max-flow optimum
    assert value <= solve_placement(c, time_limit_s=20).tokens_per_s + 1e-6


# --- the artifact itself -------------------------------------------------------------------


def test_helix_logged_objective_reproduced(shared_benchmarks: Path) -> None:
    root = shared_benchmarks / HELIX
    c = load_helix(root, "llama2_70b")
    assert len(c.nodes) == 24 and c.num_layers == 80
    assert {t: len(v) for t, v in c.throughput.items()} == {"A100": 12, "L4": 7, "T4": 4}
    layout = root / "single_cluster" / "layout_llama70b"
    helix = read_placement(layout / "ilp" / "ilp_sol.ini", c)
    # Gurobi's log and ilp_solution.sol: objective 1289.5557702751735
    assert score_placement(c, helix).tokens_per_s == pytest.approx(1289.5557702751735, abs=1e-5)
    # trace.txt: Gurobi started from Petals' placement at 531.7
    petals = read_placement(layout / "petals" / "petals_sol.ini", c)
    assert score_placement(c, petals).tokens_per_s == pytest.approx(531.7025845523623, abs=1e-5)
    # the artifact's separate pipelines put 20 layers on an A100 (its limit here is 12)
    c30 = load_helix(root, "llama1_30b")
    assert {t: len(v) for t, v in c30.throughput.items()} == {"A100": 18, "L4": 11, "T4": 7}


def test_import_solve_check_plot_on_the_artifact(shared_benchmarks: Path, tmp_path: Path) -> None:
    root = shared_benchmarks / HELIX
    out = tmp_path / "h.json"
    done = cli("import", "helix", root, "--model", "llama2_70b", "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    written = json.loads(out.read_text())
    assert set(written) == {"name", "description", "partition"}
    instance = instance_from_document(written)
    assert cluster_of(instance) == load_helix(root, "llama2_70b")
    # solve: the exact path proves LLaMA-2 70B's optimum on cluster24
    solution = tmp_path / "s.json"
    done = cli("solve", out, "--time-limit", "120", "--out", solution, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "optimal", result["message"]
    assert result["objective"] == pytest.approx(2045.64, abs=0.01)
    check = cli("check", out, solution, "--json", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["objective_terms"]["tokens_per_s"] == pytest.approx(
        2045.64, abs=0.01
    )
    # Helix's own placement as a solution file: the checker gives its logged objective
    helix = read_placement(
        root / "single_cluster/layout_llama70b/ilp/ilp_sol.ini", cluster_of(instance)
    )
    theirs = tmp_path / "helix.json"
    theirs.write_text(json.dumps({"partition": FAMILY.solution_to_dict(instance, ranges(helix))}))
    check = cli("check", out, theirs, "--json", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["objective_terms"]["tokens_per_s"] == pytest.approx(
        1289.55577, abs=1e-4
    )
    picture = tmp_path / "p.png"
    done = cli("plot", out, solution, "--out", picture, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert picture.stat().st_size > 1000
    bad = cli("import", "helix", root, "--model", "gpt", cwd=tmp_path)
    assert bad.returncode == 2 and "--model" in bad.stderr


def test_sample_through_the_grpc_service(tmp_path: Path) -> None:
    """A real ``placement serve`` on loopback solves and checks a flow-mode instance."""
    from placement.api.client import Client
    from placement.api.server.probe import start_server
    from placement.solver.schema.v1 import service_pb2

    document = instance_document(tiny().to_instance())
    server = start_server(tmp_path, workers=1)
    try:
        with Client(server.target) as client:
            resp = client.solve_response(document, time_limit_s=20)
            assert resp.status in (
                service_pb2.SOLUTION_STATUS_OPTIMAL,
                service_pb2.SOLUTION_STATUS_FEASIBLE,
            )
            assert resp.sense == "max"
            assert resp.objective == pytest.approx(5.0)
            assert resp.solution.partition.ranges
            check = client.check(document, resp.solution)
            assert check.feasible and check.sense == "max"
            assert check.objective == pytest.approx(5.0)
    finally:
        server.stop()
