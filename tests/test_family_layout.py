"""A family's folder shows its parts (docs/architecture.md, "A family's folder").

``models/<family>/`` holds the family's own parts at the top (the contract's files and its
own solving); what is not its own solving sits in sub-packages named for what they hold, the
same names in every family: ``formats`` (the field's formats in and out), ``peers`` (other
systems' algorithms, written from their papers and sources), ``sim`` (simulators and trace
replays the benchmarks drive). The family's own modules never import those three (only the
family's ``__init__`` reads ``formats.IMPORTERS`` / ``EXPORTERS``), and formats read no peer
and no simulator, so each can be read, moved or dropped without touching the family.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from placement.solver.family import FAMILY_MODULES, get_family
from tests.conftest import REPO
from tests.test_layers import IMPORTS, MODULES

NEIGHBOURS = ("formats", "peers", "sim")
"""The sub-packages every family names the same way."""

OWN_SUBPACKAGES = {"dag": {"rcmax"}}
"""Sub-packages that are a family's own solving (dag's R||Cmax search), not neighbours."""


def layout_violations(root: Path, imports: dict[str, list[tuple[str, int, bool]]]) -> list[str]:
    """Every break of the layout rule under ``root/models``, one line each."""
    bad = []
    for folder in sorted(p for p in (root / "models").iterdir() if (p / "__init__.py").exists()):
        family = folder.name
        for sub in sorted(p for p in folder.iterdir() if (p / "__init__.py").exists()):
            if sub.name not in NEIGHBOURS and sub.name not in OWN_SUBPACKAGES.get(family, ()):
                bad.append(f"models/{family}/{sub.name}: not one of {NEIGHBOURS}")
        prefix = f"placement.models.{family}"
        for module, targets in imports.items():
            if not module.startswith(prefix + ".") and module != prefix:
                continue
            part = module[len(prefix) + 1 :].split(".")[0] if module != prefix else ""
            for target, line, _ in targets:
                if not target.startswith(prefix + "."):
                    continue
                target_part = target[len(prefix) + 1 :].split(".")[0]
                if target_part not in NEIGHBOURS or target_part == part:
                    continue
                if module == prefix and target_part == "formats":
                    continue  # the family object reads formats.IMPORTERS / EXPORTERS
                if part in NEIGHBOURS and part != "formats":
                    continue  # peers and simulators may use each other
                bad.append(f"{module}:{line} imports {target}")
    return bad


def test_every_family_folder_keeps_the_layout() -> None:
    assert not layout_violations(REPO, IMPORTS), "\n".join(layout_violations(REPO, IMPORTS))


def test_the_layout_rule_fails_on_a_planted_violation(tmp_path: Path) -> None:
    family = tmp_path / "models" / "fam"
    for sub in ("", "formats", "loaders"):
        (family / sub).mkdir(parents=True, exist_ok=True)
        (family / sub / "__init__.py").write_text("")
    imports = {
        "placement.models.fam": [("placement.models.fam.formats", 3, True)],
        "placement.models.fam.check": [("placement.models.fam.formats.csv", 7, True)],
        "placement.models.fam.formats.csv": [("placement.models.fam.peers.x", 9, False)],
    }
    assert layout_violations(tmp_path, imports) == [
        "models/fam/loaders: not one of ('formats', 'peers', 'sim')",
        "placement.models.fam.check:7 imports placement.models.fam.formats.csv",
        "placement.models.fam.formats.csv:9 imports placement.models.fam.peers.x",
    ]


@pytest.mark.parametrize("name", sorted(FAMILY_MODULES))
def test_a_family_imports_what_its_formats_declare(name: str) -> None:
    family = get_family(name)
    formats = f"placement.models.{name}.formats"
    if formats not in MODULES:
        assert not family.importers and not family.exporters
        return
    module = __import__(formats, fromlist=["IMPORTERS", "EXPORTERS"])
    assert tuple(family.importers) == tuple(module.IMPORTERS)
    assert tuple(family.exporters) == tuple(module.EXPORTERS)
