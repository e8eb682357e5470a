"""The gRPC service's benchmark suite (``placement bench service-latency``)."""

from __future__ import annotations

from placement.api.extensions import Suite, lazy, register

_MODULE = "placement.api.server.bench"

register(
    Suite(
        name="service-latency",
        family="service",
        help="gRPC service: latency, throughput, deadline adherence, memory, cancellation",
        cases=lazy(_MODULE, "cases"),
        run=lazy(_MODULE, "run"),
        report=lazy(_MODULE, "report"),
        time_limit_s=5.0,
        quick_time_limit_s=5.0,
        exclusive=True,
    )
)
