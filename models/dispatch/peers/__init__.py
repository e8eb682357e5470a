"""Dispatching policies of the literature, each coupled with FCFS at the server, written from
their papers' definitions (no code copied): round robin, join-idle-queue, join-shortest-queue,
least-work-left, SITA, join-below-threshold and a size-threshold two-stage split. The
simulator (:mod:`placement.models.dispatch.sim`) replays a trace through any of them.

Yildiz et al. compare RR, JIQ and LWL with FCFS servers on Google and Alibaba traces
(MertYILDIZ19/Dispatching_Scheduling, ``README.md``: "Round Robin (RR), Join-Idle-Queue
(JIQ), Least-Work-Left (LWL), all coupled with a First-Come-First-Served (FCFS) local
scheduling policy"); the notebooks are not in a form we could read, so the definitions below
are the textbook ones (Harchol-Balter, *Performance Modeling and Design of Computer Systems*,
2013, ch. 24) and are said where we chose.
"""

from __future__ import annotations

from placement.models.dispatch.peers.policies import POLICIES, Policy

__all__ = ["POLICIES", "Policy"]
