"""The trace replay: any online policy (the peers', the family's greedy) dispatches a trace
job by job, the servers run FCFS, and the checker checks the schedule
(:func:`.replay.replay`)."""

from __future__ import annotations

from placement.models.dispatch.sim.replay import POLICY_NAMES, Replay, make_policy, replay

__all__ = ["POLICY_NAMES", "Replay", "make_policy", "replay"]
