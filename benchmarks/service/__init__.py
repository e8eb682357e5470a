"""The gRPC service's benchmark suite (``placement bench service-latency``); the code is in
:mod:`.latency`."""

from __future__ import annotations

from placement.benchmarks.runner import Suite, suite_functions

SUITES = (
    Suite(
        name="service-latency",
        family="service",
        help="gRPC service: latency, throughput, deadline adherence, memory, cancellation",
        **suite_functions("placement.benchmarks.service.latency"),
        time_limit_s=5.0,
        quick_time_limit_s=5.0,
        exclusive=True,
    ),
)
