"""The partition family's formats in: Tarnawski et al.'s layer graphs (:mod:`.tarnawski`),
transformer model configs and device spec files (:mod:`.hf`), the Helix artifact
(:mod:`.helix`); what ``placement import`` offers.
"""

from __future__ import annotations

from placement.models.partition.formats import helix, hf, tarnawski

IMPORTERS = tarnawski.IMPORTERS + hf.IMPORTERS + helix.IMPORTERS
EXPORTERS = ()
