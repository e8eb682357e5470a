"""The entanglement family's benchmark suites; the code is in :mod:`.suites`."""

from __future__ import annotations

from placement.benchmarks.runner import Suite, suite_functions

_CODE = "placement.benchmarks.entanglement.suites"

SUITES = (
    Suite(
        name="entanglement-qcast",
        family="entanglement",
        help="Q-CAST's setting: our MILP vs Q-CAST's greedy and REPS-style rounding (default, sweeps over n and p, plot)",
        **suite_functions(_CODE, "qcast"),
        time_limit_s=10.0,
    ),
    Suite(
        name="entanglement-topologies",
        family="entanglement",
        help="SURFnet and GEANT with fidelity thresholds: served requests, throughput, max-min fairness, reasons",
        **suite_functions(_CODE, "topologies"),
        data="quantum/topologies",
        time_limit_s=10.0,
    ),
)
