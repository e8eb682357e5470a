"""Prometheus metrics of the service (prometheus-client), in a registry of the server's own."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800)


class Metrics:
    """Solve counts by family and status, latency, queue depth, worker restarts, jobs."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.solves = Counter(
            "placement_solves",
            "Solve and SolveStream calls by family and outcome (solution status or gRPC code)",
            ["family", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "placement_solve_latency_seconds",
            "Wall time of Solve and SolveStream calls, seconds",
            ["family"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.restarts = Counter(
            "placement_worker_restarts",
            "Solve workers replaced, by reason (crash, overrun, cancelled, deadline)",
            ["reason"],
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "placement_queue_depth", "Solves waiting for a worker", registry=self.registry
        )
        self.in_flight = Gauge(
            "placement_solves_in_flight", "Solves queued or running", registry=self.registry
        )
        self.jobs = Gauge(
            "placement_jobs", "Stored asynchronous jobs by state", ["state"], registry=self.registry
        )

    def bind(self, pool: Any, store: Any) -> None:
        """Read the gauges from the pool and the job store at scrape time."""
        self.queue_depth.set_function(lambda: max(0, pool.in_flight - pool.running))
        self.in_flight.set_function(lambda: pool.in_flight)
        for number, name in (
            (1, "queued"),
            (2, "running"),
            (3, "succeeded"),
            (4, "failed"),
            (5, "cancelled"),
        ):
            self.jobs.labels(name).set_function(lambda n=number: _count(store, n))

    def solved(self, family: str, status: str, seconds: float) -> None:
        self.solves.labels(family or "unknown", status).inc()
        self.latency.labels(family or "unknown").observe(seconds)

    def worker_restarted(self, reason: str) -> None:
        self.restarts.labels(reason).inc()

    def serve(self, port: int, host: str = "127.0.0.1") -> None:
        """Serve ``/metrics`` over HTTP (a daemon thread)."""
        start_http_server(port, addr=host, registry=self.registry)


def _count(store: Any, state: int) -> float:
    try:
        return float(store.count((state,)))
    except Exception:  # noqa: BLE001 - a scrape must not fail on a broken store
        return float("nan")
