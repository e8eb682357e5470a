"""The field's job-trace formats read into dispatch instances: the Standard Workload Format
(:mod:`.swf`, Parallel Workloads Archive) and Slurm ``sacct`` CSV as EPCC publishes Cirrus's
(:mod:`.sacct`). ``IMPORTERS``: what ``placement import`` offers."""

from __future__ import annotations

from placement.models.dispatch.formats import sacct, swf

IMPORTERS = (*swf.IMPORTERS, *sacct.IMPORTERS)
EXPORTERS: tuple = ()
