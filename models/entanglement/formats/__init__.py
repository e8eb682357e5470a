"""The entanglement family's formats in: network topologies in GML and GraphML (Internet
Topology Zoo style, :mod:`.topology_zoo`), what ``placement import`` offers.
"""

from __future__ import annotations

from placement.models.entanglement.formats import topology_zoo

IMPORTERS = topology_zoo.IMPORTERS
EXPORTERS = ()
