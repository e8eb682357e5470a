"""The dag family's formats in: STG, Braun ETC, WfCommons and the HEFT paper's example
(:mod:`.loaders`), what ``placement import`` offers.
"""

from __future__ import annotations

from placement.models.dag.formats import loaders

IMPORTERS = loaders.IMPORTERS
EXPORTERS = ()
