"""Small instances with known optima, as data: ``tests/data/optima/<family>.json``.

Each file is a JSON list of cases::

    {
      "name": "chain",                      # unique within the family
      "instance": {"name": ..., "description": ..., "<family>": {...}},
                                            # the instance file form (instances/*.json)
      "optimum": {"<tier>": value, ...},    # every term of the checker, in its order
                                            # (primary first); null where the optimum of a
                                            # tier is not known (the tiers after it neither)
      "how": "by hand: ...",                # how the optimum is known
      "expect": {                           # what the tests hold the solvers to
        "options": {"time_limit_s": 8, "threads": 1},   # SolveOptions of every solve
        "tolerance": {"abs": 1e-9},         # pytest.approx arguments for the objective
        "backends": {"cpsat": {"proves": false, "gap_at_most": 0.001, "why": ...}},
                                            # per backend id (cpsat, milp-highs, auto, ...):
                                            # by default every exact backend proves
        "direct": {"milp": {"raises": "ValueError", "match": "...", "why": ...}},
                                            # per backend (cpsat, milp: the encoding, for
                                            # every MILP solver): the family's encoding,
                                            # driven directly, refuses the instance so
        "greedy_may_violate": {"prefix": "deadline", "why": ...}
                                            # a heuristic may be infeasible, only so
      }
    }
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from placement.solver.testing import instance_from_document

DATA = Path(__file__).resolve().parent / "data" / "optima"


@dataclass(frozen=True)
class Case:
    family: str
    name: str
    document: dict[str, Any]
    optimum: dict[str, float | None]
    how: str
    expect: dict[str, Any]

    def instance(self) -> Any:
        """A fresh typed instance (read as files are: validated)."""
        return instance_from_document(copy.deepcopy(self.document))

    @property
    def primary(self) -> float:
        """The optimum of the primary objective."""
        value = next(iter(self.optimum.values()))
        assert value is not None, f"{self.id}: no known optimum"
        return value

    @property
    def id(self) -> str:
        return f"{self.family}/{self.name}"


@cache
def _load(family: str) -> tuple[Case, ...]:
    path = DATA / f"{family}.json"
    if not path.exists():
        return ()
    raw = json.loads(path.read_text(encoding="utf-8"))
    return tuple(
        Case(family, c["name"], c["instance"], c["optimum"], c["how"], c.get("expect", {}))
        for c in raw
    )


def cases(family: str) -> list[Case]:
    """Every known-optimum case of ``family`` (none when it has no data file)."""
    return list(_load(family))


def case(family: str, name: str) -> Case:
    for c in _load(family):
        if c.name == name:
            return c
    raise KeyError(f"no case {name!r} in {DATA / (family + '.json')}")


def instance(family: str, name: str) -> Any:
    """A fresh typed instance of case ``name`` of ``family``."""
    return case(family, name).instance()
