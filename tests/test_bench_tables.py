"""The one way benchmark reports write Markdown tables (benchmarks/tables.py)."""

from __future__ import annotations

from placement.benchmarks.tables import markdown_table, rule


def test_rule_counts_columns_and_aligns() -> None:
    assert rule(3) == "|---|---|---|"
    assert rule("rrl") == "|---:|---:|---|"


def test_markdown_table_writes_header_rule_and_rows() -> None:
    assert markdown_table(["a", "b"], [[1, "x"], [2.5, None]], align="rl") == [
        "| a | b |",
        "|---:|---|",
        "| 1 | x |",
        "| 2.5 | None |",
    ]
