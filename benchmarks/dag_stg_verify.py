"""A second opinion on new STG proofs: the disjunctive MILP (HiGHS), a different model and a
different solver from the CP-SAT lanes model that found them.

    python benchmarks/dag_stg_verify.py
"""

from __future__ import annotations

import time
from pathlib import Path

from placement.models.dag.loaders import load_stg
from placement.solver import SolveOptions, solve

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "benchmarks" / "dag" / "stg"
CASES = [("50/rand0113.stg", 8), ("50/rand0080.stg", 2), ("50/rand0098.stg", 8)]


def main() -> None:
    """Solve each case with MILP-HiGHS (150 s, one thread) and print status and bound."""
    for graph, m in CASES:
        instance = load_stg(DATA / graph, m)
        t0 = time.time()
        r = solve(instance, SolveOptions(time_limit_s=150, backend="milp", threads=1))
        print(
            graph,
            m,
            r.status.value,
            r.stop_reason.value,
            r.objective,
            r.bound,
            r.backend,
            round(time.time() - t0, 1),
            flush=True,
        )


if __name__ == "__main__":
    main()
