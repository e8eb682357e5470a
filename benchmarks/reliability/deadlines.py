"""Answer at the deadline, per instance size: how often a call whose deadline is shorter than
its solve is answered in time (OK with a checked solution) rather than DEADLINE_EXCEEDED,
with the fixed margin of before (``--per-mb 0``) and the margin that grows with the request.

For each margin setting an in-process server (2 workers, in-memory jobs) answers ``--calls``
solves of ``instances/gpu/{tiny,medium,large}.json`` with deadlines 0.1 / 0.5 / 1.0 s and a
60 s time limit. Prints one line per size and setting (docs/api.md quotes them).

    python benchmarks/reliability/deadlines.py --calls 10
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import grpc

from placement.api.client import Client, instance_message
from placement.api.server.app import start
from placement.api.server.config import ServerConfig
from placement.api.server.service import budget_for

INSTANCES = Path(__file__).resolve().parents[2] / "instances" / "gpu"
CASES = (("tiny", 0.1), ("medium", 0.5), ("large", 1.0))


def run(calls: int, per_mb: float) -> list[str]:
    docs = {name: json.loads((INSTANCES / f"{name}.json").read_text()) for name, _ in CASES}
    config = ServerConfig(port=0, workers=2, db_path=":memory:", deadline_margin_s_per_mb=per_mb)
    server = start(config)
    lines = []
    try:
        with Client(f"127.0.0.1:{server.port}") as client:
            client.solve_response(docs["tiny"], time_limit_s=1)  # connected, workers warm
            for name, deadline in CASES:
                size = instance_message(docs[name]).ByteSize()
                margin = budget_for(config, 60.0, deadline, size).margin
                ok = late = fallback = 0
                for _ in range(calls):
                    try:
                        resp = client.solve_response(docs[name], time_limit_s=60, timeout=deadline)
                        ok += 1
                        fallback += "had not answered" in resp.message
                    except grpc.RpcError as exc:
                        if exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                            raise
                        late += 1
                lines.append(
                    f"per_mb={per_mb:g} {name:<6} request {size / 1e3:4.0f} kB, margin "
                    f"{margin * 1e3:3.0f} ms, deadline {deadline:g} s: OK {ok}/{calls} "
                    f"(of which the worker's best incumbent: {fallback}), "
                    f"DEADLINE_EXCEEDED {late}"
                )
                print(lines[-1], flush=True)
    finally:
        server.stop(1.0)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=10, help="calls per size (default: 10)")
    ap.add_argument(
        "--per-mb", type=float, action="append", help="margin settings (default: 0 and the default)"
    )
    args = ap.parse_args()
    t0 = time.monotonic()
    for per_mb in args.per_mb or (0.0, ServerConfig().deadline_margin_s_per_mb):
        run(args.calls, per_mb)
    print(f"({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
