"""Reliability campaign: fuzz targets and the fuzzing, overload and fault-injection scripts
(see docs/reliability.md)."""
