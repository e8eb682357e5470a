"""Asynchronous jobs: their states, the row a job store keeps, and the runner that claims
jobs from the store, runs them in the pool and records their outcomes.

The store (:mod:`placement.api.server.store`: SQLite or PostgreSQL) is the one place a job
lives: a job is written there before ``SubmitJob`` answers, so an accepted job survives any
replica. The runner claims queued jobs under a lease it renews every
:data:`RENEW_EVERY_S` (reading cancel requests from other replicas at the same time); a
replica that dies stops renewing, and another replica claims its jobs again once the lease
has expired. A job whose worker dies is retried once, then fails with the reason. Finished
jobs are kept ``retention_s`` seconds.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from placement.api.server.store import (  # noqa: F401 - the job states, used as jobs.QUEUED
    CANCELLED,
    DEFAULT_LEASE_S,
    FAILED,
    FINISHED,
    MAX_ATTEMPTS,
    QUEUED,
    RENEW_EVERY_S,
    RUNNING,
    STATE_NAMES,
    SUCCEEDED,
    JobRow,
    JobStore,
    JobStoreError,
)

log = logging.getLogger(__name__)
access_log = logging.getLogger("placement.access")


def log_job_event(job_id: str, state: int, replica: str, attempts: int | None = None) -> None:
    """One JSON line in the access log when this replica starts a job or writes its
    outcome (``at``: epoch seconds): counting the ``succeeded`` lines of a job over all
    replicas' logs shows it ended once."""
    record: dict[str, object] = {"event": "job", "job_id": job_id, "at": round(time.time(), 3),
                                 "state": STATE_NAMES[state], "replica": replica}  # fmt: skip
    if attempts is not None:
        record["attempts"] = attempts
    access_log.info(json.dumps(record, separators=(",", ":")))


JobListener = Callable[[], None]
"""Called when something about a job changed here (its watchers then read the store)."""


class JobRunner:
    """Claims jobs from the store for this replica, runs them in the pool, renews their
    leases, records their outcomes, and wakes the watchers.

    ``run(row, on_event) -> Ticket | None`` starts a job's solve (None: no room now);
    ``conclude(row, outcome) -> (state, result_bytes, error)`` turns an outcome into what is
    stored. Jobs use at most ``max_running`` workers, so synchronous solves keep some.
    ``replica`` names this replica's leases (unique per process); ``lease_s`` is how long a
    lease lasts without renewal.
    """

    def __init__(
        self,
        store: JobStore,
        run: Callable[[JobRow, Callable[[str, Any], None]], Any],
        conclude: Callable[[JobRow, Any], tuple[int, bytes | None, str]],
        max_running: int,
        retention_s: float,
        replica: str,
        lease_s: float = DEFAULT_LEASE_S,
    ):
        self.store = store
        self._run = run
        self._conclude = conclude
        self.max_running = max_running
        self.retention_s = retention_s
        self.replica = replica
        self.lease_s = lease_s
        self._lock = threading.Lock()
        self._tickets: dict[str, Any] = {}
        self._listeners: dict[str, list[JobListener]] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._unrecorded: dict[str, tuple[int, bytes | None, str]] = {}
        """Outcomes the store could not take (disk full, server down): written again every
        second, while this replica's lease renewer keeps the jobs."""
        self.store_ok = True
        """False while the last store operation failed (health reports NOT_SERVING)."""
        self.recovered = store.recover()
        store.purge(retention_s)
        self._thread = threading.Thread(target=self._loop, name="job-runner", daemon=True)
        self._renewer = threading.Thread(target=self._renew_loop, name="job-leases", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._renewer.start()

    def stop(self) -> None:
        """Stop claiming; jobs still running here go back to the queue (for another replica,
        or this one's successor) when their solves end with the shutdown."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=5)
        self._renewer.join(timeout=5)

    def release_all(self) -> int:
        """Queue again the jobs this replica holds (at shutdown, once its workers stopped), so
        another replica takes them at once instead of when their leases expire."""
        try:
            return self.store.release_owner(self.replica)
        except JobStoreError as exc:
            log.error("jobs of this replica not released (their leases expire): %s", exc)
            return 0

    def poke(self) -> None:
        """A job was queued or a worker may be free: look again now."""
        self._wake.set()

    # --- watchers -----------------------------------------------------------------------
    def listen(self, job_id: str, listener: JobListener) -> None:
        with self._lock:
            self._listeners.setdefault(job_id, []).append(listener)

    def unlisten(self, job_id: str, listener: JobListener) -> None:
        with self._lock:
            items = self._listeners.get(job_id, [])
            if listener in items:
                items.remove(listener)
            if not items:
                self._listeners.pop(job_id, None)

    def _notify(self, job_id: str) -> None:
        with self._lock:
            listeners = list(self._listeners.get(job_id, []))
        for fn in listeners:
            try:
                fn()
            except Exception:  # noqa: BLE001
                log.exception("job listener failed")

    # --- cancellation -------------------------------------------------------------------
    def cancel(self, job_id: str, wait_s: float = 5.0) -> JobRow | None:
        """Cancel a queued or running job, whichever replica runs it; returns its row
        afterwards (None if unknown). A job running elsewhere is stopped by its replica at
        its next lease renewal; this waits up to ``wait_s`` for it to end."""
        if self.store.cancel(job_id):
            self._notify(job_id)
            return self.store.get(job_id)
        with self._lock:
            ticket = self._tickets.get(job_id)
        if ticket is not None:
            ticket.cancel("cancelled")  # here: at once, not at the next renewal
        end = time.monotonic() + wait_s
        while True:
            row = self.store.get(job_id)
            if row is None or row.state in FINISHED or time.monotonic() > end:
                return row
            time.sleep(0.02)

    def unrecorded(self, job_id: str) -> tuple[int, bytes | None, str] | None:
        """The outcome of a finished job the store has not taken yet (None if none)."""
        with self._lock:
            return self._unrecorded.get(job_id)

    def _record(self, job_id: str, state: int, result: bytes | None, error: str) -> None:
        """Write an outcome (JobStoreError: kept, written again later)."""
        try:
            written = self.store.finish(job_id, self.replica, state, result, error)
        except JobStoreError:
            with self._lock:
                self._unrecorded[job_id] = (state, result, error)
            raise
        with self._lock:
            self._unrecorded.pop(job_id, None)
        if written:
            log_job_event(job_id, state, self.replica)
        else:
            # The lease expired while the store was out of reach and another replica took
            # the job: its answer is the one kept.
            log.warning(
                "job %s: another replica holds it now; this run's outcome is dropped", job_id
            )

    def _record_unrecorded(self) -> None:
        with self._lock:
            items = list(self._unrecorded.items())
        for job_id, (state, result, error) in items:
            self._record(job_id, state, result, error)  # JobStoreError: next round
            self._notify(job_id)

    # --- the loops ----------------------------------------------------------------------
    def _loop(self) -> None:
        last_purge = time.monotonic()
        while not self._stop.is_set():
            self._wake.wait(0.5)
            self._wake.clear()
            try:
                self._record_unrecorded()
                while not self._stop.is_set() and self._start_one():
                    pass
                if time.monotonic() - last_purge > 60:
                    self.store.purge(self.retention_s)
                    last_purge = time.monotonic()
                self.store_ok = True
            except JobStoreError as exc:
                if self.store_ok:
                    log.error("job runner: %s", exc)
                self.store_ok = False
                self._stop.wait(1.0)

    def _renew_loop(self) -> None:
        """Renew this replica's leases; stop the jobs cancelled elsewhere and those lost."""
        every = min(RENEW_EVERY_S, self.lease_s / 4)
        while not self._stop.wait(every):
            with self._lock:
                held = dict(self._tickets)
            if not held:
                continue
            try:
                kept = self.store.renew(self.replica, self.lease_s)
            except JobStoreError as exc:
                if self.store_ok:
                    log.error("job leases: %s", exc)
                self.store_ok = False
                continue
            for job_id, ticket in held.items():
                if job_id not in kept:
                    if job_id not in self._unrecorded and not ticket._done.is_set():
                        log.warning("job %s: lease lost (another replica runs it): stopped", job_id)
                        ticket.cancel("lease lost", kill=True)
                elif kept[job_id]:
                    ticket.cancel("cancelled")

    def _start_one(self) -> bool:
        with self._lock:
            if len(self._tickets) >= self.max_running:
                return False
        row = self.store.claim(self.replica, self.lease_s)
        if row is None:
            return False
        if row.cancel_requested:  # cancelled while its replica was dying
            self._record(row.id, CANCELLED, row.result, "cancelled")
            self._notify(row.id)
            return True
        if row.attempts > MAX_ATTEMPTS:
            self._record(
                row.id,
                FAILED,
                row.result,
                f"{row.error}; claimed {row.attempts} times without finishing",
            )
            self._notify(row.id)
            return True
        if row.error.startswith("its replica stopped"):
            log.warning("job %s: %s; running it again here", row.id, row.error)

        def on_event(kind: str, payload: Any, job_id: str = row.id) -> None:
            if kind == "incumbent" and self.store_ok:  # down: do not hold up the pool's events
                try:
                    self.store.add_incumbent(job_id, payload[0])
                except JobStoreError as exc:
                    log.warning("job %s: incumbent not stored: %s", job_id, exc)
                self._notify(job_id)

        ticket = self._run(row, on_event)
        if ticket is None:
            self.store.release(row.id, self.replica, uncount=True)
            return False
        with self._lock:
            self._tickets[row.id] = ticket
        log_job_event(row.id, RUNNING, self.replica, row.attempts)
        self._notify(row.id)
        threading.Thread(
            target=self._await, args=(row, ticket), name=f"job-{row.id[:8]}", daemon=True
        ).start()
        return True

    def _await(self, row: JobRow, ticket: Any) -> None:
        job_id = row.id
        outcome = ticket.wait()
        try:
            if outcome is None or outcome.error == "lease lost":
                pass  # another replica runs it
            elif outcome.kind == "crashed" and not self._stop.is_set():
                if self.store.requeue_after_crash(job_id, self.replica, outcome.error):
                    log.warning("job %s: %s; queued again", job_id, outcome.error)
                else:
                    log.error("job %s failed: %s", job_id, outcome.error)
            elif outcome.error == "shutdown" or self._stop.is_set():
                pass  # this replica is stopping: :meth:`release_all` queues the job again
            else:
                state, result, error = self._conclude(row, outcome)
                self._record(job_id, state, result, error)
        except JobStoreError as exc:
            log.error("job %s: could not record the outcome (kept, retried): %s", job_id, exc)
        with self._lock:
            self._tickets.pop(job_id, None)
        self._notify(job_id)
        self._wake.set()
