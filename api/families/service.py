"""The gRPC service's benchmark suite (``placement bench service-latency``)."""

from __future__ import annotations

from placement.api.extensions import Suite, register, suite_functions

_MODULE = "placement.api.server.bench"

register(
    Suite(
        name="service-latency",
        family="service",
        help="gRPC service: latency, throughput, deadline adherence, memory, cancellation",
        **suite_functions(_MODULE),
        time_limit_s=5.0,
        quick_time_limit_s=5.0,
        exclusive=True,
    )
)
