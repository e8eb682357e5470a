"""The sharding family: the known optima by enumeration, the checker's rules, errors that name
the field, the explanation of a table that fits nowhere, the generator, the MLPerf importer
and the balanced peers."""

from __future__ import annotations

import dataclasses
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from placement.models.sharding import FAMILY, generate
from placement.models.sharding.check import check
from placement.models.sharding.cost_model import options, plan_from_option, row_blocks
from placement.models.sharding.formats.mlperf import load_mlperf
from placement.models.sharding.instance import (
    COLUMN_WISE,
    DATA_PARALLEL,
    ROW_WISE,
    TABLE_WISE,
    Device,
    Shard,
    ShardingInstance,
    ShardingSolution,
    Table,
    TablePlan,
)
from placement.models.sharding.peers.balanced import PEERS
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.errors import InputError
from placement.solver.testing import instance_from_document
from tests import optima

GIB = 1024**3
SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "sharding"
MLPERF = SHARED / "mlperf-dlrmv2-criteo" / "tables.csv"


def _devices(n: int, hosts: int, hbm: int) -> list[Device]:
    per = n // hosts
    return [Device(f"h{k // per}d{k % per}", f"h{k // per}", hbm) for k in range(n)]


def _enumerate(instance: ShardingInstance) -> dict[str, float]:
    """The best checker terms over every plan of every table."""
    per = []
    for t in range(len(instance.tables)):
        plans = []
        for o in options(instance, t):
            if o.fixed is not None:
                plans.append(plan_from_option(instance, t, o))
            else:
                for devs in itertools.product(range(instance.world_size), repeat=o.free):
                    plans.append(plan_from_option(instance, t, o, devs))
        per.append(plans)
    best = None
    for combo in itertools.product(*per):
        report = check(instance, ShardingSolution(tuple(combo)))
        if report.feasible and (best is None or report.score() > best.score()):
            best = report
    assert best is not None
    return best.terms


@pytest.mark.parametrize("case", optima.cases("sharding"), ids=lambda c: c.name)
def test_the_known_optima_are_the_enumerated_ones(case: optima.Case) -> None:
    assert _enumerate(case.instance()) == case.optimum


def _small() -> ShardingInstance:
    return ShardingInstance(
        [
            Table("a", 10_000, 128, 4.0),
            Table("b", 5_000, 256, 2.0),
            Table("c", 100, 64, 1.0),
        ],
        _devices(4, 2, GIB),
        256,
    )


def _feasible(instance: ShardingInstance) -> ShardingSolution:
    name, solution = next(iter(FAMILY.greedy(instance, SolveOptions())))
    assert check(instance, solution).feasible, name
    return solution


def _with_plan(solution: ShardingSolution, t: int, plan: TablePlan | None) -> ShardingSolution:
    plans = list(solution.plans)
    plans[t] = plan
    return ShardingSolution(tuple(plans))


def test_the_checker_rejects_a_missing_plan_and_a_partial_cover() -> None:
    inst = _small()
    good = _feasible(inst)
    report = check(inst, _with_plan(good, 0, None))
    assert not report.feasible and "table 'a' has no plan" in report.violations
    # Row-wise with one block missing its last row.
    blocks = row_blocks(10_000, 4)
    shards = [Shard(k, off, n, 0, 128) for k, (off, n) in enumerate(blocks)]
    shards[-1] = dataclasses.replace(shards[-1], rows=shards[-1].rows - 1)
    report = check(inst, _with_plan(good, 0, TablePlan(ROW_WISE, tuple(shards))))
    assert any("cover 1279872 of its 1280000 cells" in v for v in report.violations)


def test_the_checker_rejects_overlapping_shards_and_wrong_layouts() -> None:
    inst = _small()
    good = _feasible(inst)
    # Column-wise: both shards on columns 0..127 (overlap, and 128..255 uncovered).
    overlap = TablePlan(COLUMN_WISE, (Shard(0, 0, 5000, 0, 128), Shard(1, 0, 5000, 0, 128)))
    report = check(inst, _with_plan(good, 1, overlap))
    assert any("overlap" in v for v in report.violations), report.violations
    # Row-wise on three of the four devices.
    blocks = row_blocks(10_000, 3)
    rw = TablePlan(ROW_WISE, tuple(Shard(k, o, n, 0, 128) for k, (o, n) in enumerate(blocks)))
    report = check(inst, _with_plan(good, 0, rw))
    assert any(
        "row-wise needs one full-column shard on every device" in v for v in report.violations
    )
    # Data-parallel missing a replica.
    dp = TablePlan(DATA_PARALLEL, tuple(Shard(k, 0, 100, 0, 64) for k in range(3)))
    report = check(inst, _with_plan(good, 2, dp))
    assert any("data-parallel" in v for v in report.violations)
    # A shard outside its table.
    out = TablePlan(TABLE_WISE, (Shard(0, 0, 10_001, 0, 128),))
    assert not check(inst, _with_plan(good, 0, out)).feasible


def test_the_checker_rejects_a_type_the_table_may_not_use_and_an_hbm_overflow() -> None:
    inst = _small()
    inst.tables[2] = dataclasses.replace(inst.tables[2], allowed=(TABLE_WISE,))
    good = _feasible(inst)
    dp = TablePlan(DATA_PARALLEL, tuple(Shard(k, 0, 100, 0, 64) for k in range(4)))
    report = check(inst, _with_plan(good, 2, dp))
    assert any("not allowed" in v for v in report.violations)
    tight = ShardingInstance(inst.tables, _devices(4, 2, 5_000_000), 256)
    everything_on_0 = ShardingSolution(
        tuple(TablePlan(TABLE_WISE, (Shard(0, 0, t.rows, 0, t.dim),)) for t in inst.tables)
    )
    report = check(tight, everything_on_0)
    assert any(v.startswith("device 'h0d0': HBM") and "over by" in v for v in report.violations)


def test_the_checker_recomputes_the_costs() -> None:
    """The terms are the sums of the cost model's shard figures, not the solver's."""
    inst = _small()
    solution = _feasible(inst)
    report = check(inst, solution)
    msg = FAMILY.solution_to_message(inst, solution)
    per_device = {d.device: d.cost_ms for d in msg.devices}
    assert report.terms["max_device_cost_ns"] == pytest.approx(
        max(per_device.values()) * 1e6, abs=0.5
    )
    total = sum(s.comm_ms for p in msg.plans for s in p.shards)
    assert report.terms["total_comm_ns"] == pytest.approx(total * 1e6, abs=0.5)


def _document(section: dict) -> dict:
    return {"name": "x", "description": "", "sharding": section}


def test_bad_inputs_name_the_field() -> None:
    base = {
        "tables": [{"name": "a", "rows": 10, "dim": 8, "pooling_factor": 1.0}],
        "devices": [{"name": "d0", "host": "h0", "hbm_bytes": 1_000_000}],
    }
    cases = [
        (("tables", 0, "bytes_per_element"), 3, "sharding.tables[0].bytes_per_element"),
        (("tables", 0, "rows"), 0, "sharding.tables[0].rows"),
        (("tables", 0, "pooling_factor"), 0, "sharding.tables[0].pooling_factor"),
        (("devices", 0, "hbm_bytes"), -5, "sharding.devices[0].hbm_bytes"),
        (("devices", 0, "host"), "", "sharding.devices[0].host"),
    ]
    for (key, index, field), value, path in cases:
        doc = json.loads(json.dumps(base))
        doc[key][index][field] = value
        with pytest.raises(InputError) as info:
            instance_from_document(_document(doc))
        assert any(e.path == path for e in info.value.errors), str(info.value)
    doc = json.loads(json.dumps(base))
    doc["devices"] += [
        {"name": "d1", "host": "h1", "hbm_bytes": 1_000_000},
        {"name": "d2", "host": "h1", "hbm_bytes": 1_000_000},
    ]
    with pytest.raises(InputError, match="same number of devices"):
        instance_from_document(_document(doc))
    doc = json.loads(json.dumps(base))
    doc["tables"][0]["dim"] = 200
    doc["tables"][0]["allowed"] = ["COLUMN_WISE"]
    with pytest.raises(InputError) as info:
        FAMILY.validate(instance_from_document(_document(doc)))
    assert info.value.errors[0].path == "sharding.tables[0].allowed"


def test_a_solution_naming_an_unknown_device_is_refused_by_name() -> None:
    inst = _small()
    msg = FAMILY.solution_to_message(inst, _feasible(inst))
    msg.plans[0].shards[0].device = "nowhere"
    with pytest.raises(InputError) as info:
        FAMILY.solution_from_message(inst, msg)
    assert info.value.errors[0].path == "sharding.plans[0].shards[0].device"


def test_a_table_larger_than_every_device_is_explained() -> None:
    """6 GiB of weights over two 2 GiB devices: even row-wise each needs 3 GiB."""
    inst = ShardingInstance(
        [Table("huge", 12_582_912, 128, 1.0), Table("ok", 1000, 128, 1.0)],
        _devices(2, 1, 2 * GIB),
        512,
    )
    result = solve(inst, SolveOptions(time_limit_s=5, threads=1))
    assert result.solution is None
    assert result.status == SolutionStatus.INFEASIBLE, result.message
    assert "table 'huge'" in result.message and "row-wise" in result.message
    assert "short by" in result.message
    reasons = FAMILY.explain_unplaced(inst, None)
    assert [r["name"] for r in reasons] == ["huge"]
    # The largest row block plus its buffers, less the device.
    assert reasons[0]["short_bytes"] > 1 * GIB


def test_the_exact_model_beats_or_meets_every_greedy_and_proves_small_sets() -> None:
    inst = generate(8, 4, hosts=2, seed=3)
    result = solve(inst, SolveOptions(time_limit_s=30, threads=1))
    assert result.status == SolutionStatus.OPTIMAL and result.stop_reason == StopReason.PROVEN
    report = check(inst, result.solution)
    for name, solution in FAMILY.greedy(inst, SolveOptions()):
        assert check(inst, solution).score() <= report.score(), name
    for name, peer in PEERS.items():
        peer_report = check(inst, peer(inst))
        assert peer_report.feasible, (name, peer_report.violations)
        assert peer_report.score() <= report.score(), name


def test_generation_is_seeded() -> None:
    a, b = generate(50, 8, hosts=2, seed=7), generate(50, 8, hosts=2, seed=7)
    assert FAMILY.instance_to_dict(a) == FAMILY.instance_to_dict(b)
    c = generate(50, 8, hosts=2, seed=8)
    assert FAMILY.instance_to_dict(a) != FAMILY.instance_to_dict(c)
    assert all(1 <= t.pooling_factor <= 100 for t in a.tables)
    with pytest.raises(InputError) as info:
        generate(10, 8, hosts=3)
    assert info.value.errors[0].path == "hosts"


def test_a_malformed_tables_csv_names_the_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "tables.csv"
    path.write_text(
        "table,feature,num_embeddings_mlperf,num_embeddings_torchrec_full,multi_hot_size,"
        "embedding_dim\n0,cat_0,1000,1000,3,128\n1,cat_1,many,10,1,128\n"
    )
    with pytest.raises(InputError) as info:
        load_mlperf(str(path))
    assert info.value.errors[0].path == "line 3.num_embeddings_mlperf"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="feature"):
        load_mlperf(str(path))


@pytest.mark.skipif(not MLPERF.exists(), reason=f"shared MLPerf tables absent: {MLPERF}")
def test_the_mlperf_tables_import_as_published() -> None:
    inst = load_mlperf(str(MLPERF), devices=8, hosts=1, hbm_gib=40)
    assert len(inst.tables) == 26
    assert sum(t.rows for t in inst.tables) == 204_184_588
    assert sum(t.pooling_factor for t in inst.tables) == 214
    # Five 40M-row tables of 19.07 GiB each fit a 40 GiB device table-wise.
    assert sum(1 for t in inst.tables if t.rows == 40_000_000) == 5
    result = solve(inst, SolveOptions(time_limit_s=10, threads=1))
    assert result.solution is not None and check(inst, result.solution).feasible


@pytest.mark.skipif(not MLPERF.exists(), reason=f"shared MLPerf tables absent: {MLPERF}")
def test_placement_import_writes_the_instance(tmp_path: Path) -> None:
    out = tmp_path / "mlperf.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "placement.api.cli",
            "import",
            "mlperf-dlrm",
            str(MLPERF),
            "--devices",
            "16",
            "--hosts",
            "2",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert len(doc["sharding"]["tables"]) == 26 and len(doc["sharding"]["devices"]) == 16


def test_numbers_whose_costs_would_leave_int64_are_refused_by_field() -> None:
    base = {
        "tables": [{"name": "a", "rows": 10, "dim": 8, "pooling_factor": 1.0}],
        "devices": [{"name": "d0", "host": "h0", "hbm_bytes": 1_000_000}],
    }
    doc = json.loads(json.dumps(base))
    doc["tables"][0].update(pooling_factor=1e6, dim=65536)
    doc["batch_size"] = 1_000_000
    doc["cost_model"] = {"intra_host_bandwidth_bytes_per_ms": 1000.0}
    with pytest.raises(InputError) as info:
        instance_from_document(_document(doc))
    assert [e.path for e in info.value.errors] == ["sharding.tables[0]"]
    doc = json.loads(json.dumps(base))
    doc["devices"][0]["hbm_bandwidth_bytes_per_ms"] = 1e-300
    with pytest.raises(InputError) as info:
        instance_from_document(_document(doc))
    assert info.value.errors[0].path == "sharding.devices[0].hbm_bandwidth_bytes_per_ms"
