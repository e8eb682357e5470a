"""Kubernetes objects as the importer reads them: quantities, files and typed fields.

:func:`parse_quantity` (the apimachinery grammar), and the readers that load a JSON or YAML
file of objects and hand out each object with its :class:`Source`, so that every error names
the file, the object and the JSON path of the bad field.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from placement.solver.errors import InputError
from placement.solver.jsonform import parse_json_value, read_input_text

GPU = "nvidia.com/gpu"
IGNORED_RESOURCES = ("ephemeral-storage", "pods")
"""Node and pod resources we do not model but that never keep a pod from being imported."""


# -------------------------------------------------------------------------------------------
# Quantities

_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|m|k|M|G|T|P|E|)$"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(value: Any) -> Fraction | None:
    """The exact value of a Kubernetes resource quantity, or None if it is not one.

    The grammar of k8s.io/apimachinery ``pkg/api/resource/quantity.go``: a signed decimal
    number (``1``, ``1.5``, ``.5``, ``5.``) then a binary suffix (``Ki`` .. ``Ei``, powers of
    1024), a decimal exponent (``e3``, ``E-2``) or a decimal suffix (``m`` milli, ``k``, ``M``,
    ``G``, ``T``, ``P``, ``E``; ``E`` alone is exa, ``E`` followed by digits an exponent).
    JSON numbers are accepted as the apimachinery decoder accepts them.

    Examples
    --------
    >>> parse_quantity("500m"), parse_quantity("64Gi") == 64 * 2**30, parse_quantity("1e3")
    (Fraction(1, 2), True, Fraction(1000, 1))
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    m = _QUANTITY.match(value.strip())
    if m is None:
        return None
    number = Fraction(m["number"] if not m["number"].endswith(".") else m["number"][:-1])
    suffix = m["suffix"]
    if suffix in _BINARY:
        number *= 1024 ** _BINARY[suffix]
    elif suffix in _DECIMAL:
        number *= Fraction(10) ** _DECIMAL[suffix]
    else:
        exponent = int(suffix[1:])
        if abs(exponent) > 100:
            return None
        number *= Fraction(10) ** exponent
    return -number if m["sign"] == "-" else number


def milli_up(q: Fraction) -> int:
    """Milli-units rounded up, as ``Quantity.MilliValue``."""
    return math.ceil(q * 1000)


MIB = 2**20


# -------------------------------------------------------------------------------------------
# Reading objects, with the path of every field


@dataclass
class Source:
    """One input file and where an object sits in it, for error messages."""

    file: str
    path: str
    kind: str
    name: str

    def fail(self, field_path: str, value: Any, expected: str) -> InputError:
        where = f"{self.path}.{field_path}" if field_path else self.path
        label = f"{self.kind} {self.name}" if self.name else self.kind
        return InputError.single(f"{where} ({label})", value, expected, file=self.file)


def get_field(obj: dict[str, Any], dotted: str) -> Any:
    """``obj["a"]["b"]`` for ``a.b``; None where a step is missing."""
    cur: Any = obj
    for key in dotted.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(key)
    return cur


def typed_field(src: Source, obj: dict[str, Any], dotted: str, kind: type, default: Any) -> Any:
    """The field ``dotted`` of ``obj`` if of type ``kind``; ``default`` when absent."""
    value = get_field(obj, dotted)
    if value is None:
        return default
    if kind is int and isinstance(value, bool):
        raise src.fail(dotted, value, "an integer")
    if not isinstance(value, kind):
        expected = {dict: "a JSON object", list: "a JSON list", str: "a string", int: "an integer"}
        raise src.fail(dotted, value, expected.get(kind, kind.__name__))
    return value


def string_map(src: Source, obj: dict[str, Any], dotted: str) -> dict[str, str]:
    """The labels or annotations at ``dotted``: a map of strings (empty when absent)."""
    value = typed_field(src, obj, dotted, dict, {})
    for k, v in value.items():
        if not isinstance(v, str):
            raise src.fail(f"{dotted}.{k}", v, "a string (labels and annotations are strings)")
    return value


def load_document(path: str | Path) -> Any:
    """The JSON or YAML document of ``path`` (YAML by suffix)."""
    file = str(path)
    text = read_input_text(path, "a readable UTF-8 file")
    if file.endswith((".yaml", ".yml")):
        # pyyaml is needed only for YAML inputs; JSON (kubectl -o json) needs nothing.
        import yaml

        try:
            docs = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as exc:
            raise InputError.single("", str(exc).splitlines()[0], "valid YAML", file=file) from None
        except RecursionError:
            raise InputError.single(
                "", "deeply nested YAML", "at most a few hundred levels", file=file
            ) from None
        if len(docs) == 1:
            return docs[0]
        return {"apiVersion": "v1", "kind": "List", "items": docs}
    return parse_json_value(text, file=file)


def read_items(path: str | Path, kinds: tuple[str, ...]) -> list[tuple[Source, dict[str, Any]]]:
    """The objects of a list file (``XList`` or ``List``) or a single object, each with its
    source; every item must be one of ``kinds``."""
    file = str(path)
    doc = load_document(path)
    if not isinstance(doc, dict):
        raise InputError.single("", type(doc).__name__, "a Kubernetes object or list", file=file)
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc["items"]
        if not isinstance(items, list):
            raise InputError.single("items", type(items).__name__, "a JSON list", file=file)
        pairs = [(f"items[{i}]", item) for i, item in enumerate(items)]
    else:
        pairs = [("", doc)]
    out = []
    for where, item in pairs:
        if not isinstance(item, dict):
            raise InputError.single(where, item, "a Kubernetes object", file=file)
        item_kind = item.get("kind") or (kind[: -len("List")] if kind and kind != "List" else "")
        meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
        name = meta.get("name") if isinstance(meta.get("name"), str) else ""
        ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
        src = Source(file, where or "$", str(item_kind or "object"), f"{ns}/{name}" if ns else name)
        if item_kind not in kinds:
            raise src.fail("kind", item_kind, "one of " + ", ".join(kinds))
        if not name:
            raise src.fail("metadata.name", meta.get("name"), "a non-empty name")
        out.append((src, item))
    return out
