"""The sharding family's formats in: the MLPerf DLRM-DCNv2 tables (:mod:`.mlperf`); what
``placement import`` offers."""

from __future__ import annotations

from placement.models.sharding.formats import mlperf

IMPORTERS = mlperf.IMPORTERS
EXPORTERS = ()
