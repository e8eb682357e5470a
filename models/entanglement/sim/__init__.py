"""Simulation the entanglement benchmarks drive: :mod:`.slots`, Monte Carlo time slots of
what a routing really delivers.
"""
