# --- the benchmark ----------------------------------------------------------------------------


def test_the_bench_suite_runs_quick_and_the_blind_packing_overloads(tmp_path: Path) -> None:
    """``placement bench gpu-density --quick`` in this process (tests/test_bench.py runs every
    suite in a real process too): every packer's density-blind packing overloads a node
    under the curve, and no density-aware packing does (the checker judged both)."""
    assert main(["bench", "gpu-density", "--quick", "--out", str(tmp_path)]) == 0
    with (tmp_path / "gpu-density.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["packer"] for r in rows} == {"first_fit", "best_fit", "cpsat"}
    for r in rows:
        assert r["invalid"] == "0"
        assert int(r["blind_overloaded"]) >= 1 and float(r["blind_worst_load"]) > 1
        assert float(r["aware_worst_load"]) <= 1
        assert int(r["aware_nodes"]) >= int(r["blind_nodes"])
    assert (
        "| packer | blind nodes | overloaded (of blind) |"
        in (tmp_path / "gpu-density.md").read_text()
    )
