"""The Helix layer-placement model: the artifact's reader, the max-flow evaluator, the exact
MILP and the replica plans (models/partition/helix.py, serving_flow.py, serving_milp.py,
serving_plans.py)."""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from placement.models.partition.helix import (
    SINK,
    SOURCE,
    HelixCluster,
    HelixNode,
    build_cluster,
    load_helix,
    read_placement,
)
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
from placement.solver.errors import InputError

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
    with pytest.raises(InputError, match="an existing Helix artifact file"):
        load_helix(tmp_path, "llama2_70b")


def test_instance_json_round_trip() -> None:
    c = tiny()
    back = HelixCluster.from_json(json.loads(json.dumps(c.to_json())))
    assert back == c


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


def test_import_command_writes_the_instance(shared_benchmarks: Path, tmp_path: Path) -> None:
    out = tmp_path / "h.json"
    root = shared_benchmarks / HELIX
    cmd = [sys.executable, "-m", "placement.api.cli", "import", "helix", str(root)]
    done = subprocess.run(
        [*cmd, "--model", "llama2_70b", "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    back = HelixCluster.from_json(json.loads(out.read_text()))
    assert back == load_helix(root, "llama2_70b")
    bad = subprocess.run([*cmd, "--model", "gpt"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--model" in bad.stderr
