"""The serving family's formats in: the Azure LLM inference traces (:mod:`.azure`); what
``placement import`` offers."""

from __future__ import annotations

from placement.models.serving.formats import azure

IMPORTERS = azure.IMPORTERS
EXPORTERS = ()
