"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_BENCHMARKS = REPO.parent / "shared" / "benchmarks"


@pytest.fixture(scope="session")
def repo() -> Path:
    """The repository root."""
    return REPO


@pytest.fixture(scope="session")
def shared_benchmarks() -> Path:
    """../shared/benchmarks, or skip with a clear message where it is absent."""
    if not SHARED_BENCHMARKS.is_dir():
        pytest.skip(
            f"public benchmark data not found at {SHARED_BENCHMARKS} (see docs/benchmarks.md)"
        )
    return SHARED_BENCHMARKS
