"""The import report: what ``placement import k8s`` read, assumed, left out and ignored."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from placement.solver.errors import InputError

SHOWN_PER_LINE = 8
"""Objects named per line of the stderr report; ``--report`` lists them all."""


@dataclass
class ImportReport:
    """What the import read, assumed, left out and ignored, per object (JSON: ``to_dict``)."""

    files: dict[str, str] = field(default_factory=dict)
    levels: list[dict[str, Any]] = field(default_factory=list)
    priorities: dict[str, int] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    ignored: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """object (``Node n1`` / ``Pod ns/p``) -> field -> details."""
    excluded_nodes: dict[str, str] = field(default_factory=dict)
    not_imported: dict[str, str] = field(default_factory=dict)
    """Pending pod ``ns/name`` -> why it is not a job of the instance."""
    jobs: dict[str, list[str]] = field(default_factory=dict)
    """Job name -> its pods."""

    def ignore(self, obj: str, field_name: str, detail: str = "") -> None:
        self.ignored.setdefault(obj, {}).setdefault(field_name, []).append(detail)

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "levels": self.levels,
            "priorities": self.priorities,
            "assumptions": self.assumptions,
            "excluded_nodes": self.excluded_nodes,
            "not_imported": self.not_imported,
            "ignored": self.ignored,
            "jobs": self.jobs,
        }

    def lines(self) -> list[str]:
        """The report for people: one line per kind of finding, naming its objects."""

        def names(objs: list[str]) -> str:
            shown = ", ".join(objs[:SHOWN_PER_LINE])
            more = len(objs) - SHOWN_PER_LINE
            return shown + (f" and {more} more" if more > 0 else "")

        out = [f"assumed: {a}" for a in self.assumptions]
        by_reason: dict[str, list[str]] = {}
        for node, why in self.excluded_nodes.items():
            by_reason.setdefault(why, []).append(node)
        out += [f"left out (no new pods): {why}: {names(ns)}" for why, ns in by_reason.items()]
        by_reason = {}
        for pod, why in self.not_imported.items():
            by_reason.setdefault(why, []).append(pod)
        out += [f"pending pods not imported: {why}: {names(ps)}" for why, ps in by_reason.items()]
        by_field: dict[str, list[str]] = {}
        for obj, fields in self.ignored.items():
            for f in fields:
                by_field.setdefault(f, []).append(obj)
        out += [f"ignored {f} of {len(objs)}: {names(objs)}" for f, objs in by_field.items()]
        return out


def write_report(path: str, data: dict[str, Any]) -> None:
    """Write an import report as indented JSON."""
    try:
        Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
    except OSError as exc:
        raise InputError.single(
            "", exc.strerror or str(exc), "a writable file", file=path
        ) from None
