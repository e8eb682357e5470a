"""The GPU family's formats in and out: what ``placement import`` and ``placement export`` offer.

:mod:`.k8s` (Kubernetes objects in, Bindings out), :mod:`.slurm` (a Slurm cluster's
``topology.conf`` and ``scontrol show node`` text), :mod:`.openb` (the Alibaba openb trace's
node and pod lists).
"""

from __future__ import annotations

from placement.models.gpu.formats import k8s, openb, slurm

IMPORTERS = openb.IMPORTERS + k8s.IMPORTERS + slurm.IMPORTERS
EXPORTERS = k8s.EXPORTERS
