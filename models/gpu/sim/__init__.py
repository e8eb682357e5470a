"""Simulators and trace replays the GPU benchmarks drive.

:mod:`.topology` (scheduling cycles on a generated gang trace, :mod:`.topology_trace`, with the
users' cases of :mod:`.topology_user_cases`), :mod:`.openb` (the FGD paper's replay of the
openb trace: online, batch, defragmenting, with departures, and its trace-level bounds).
"""
