"""Reading and writing the placement/v1 JSON form (instance and solution files).

The schema is the protobuf in ``solver/schema/proto/placement/v1/placement.proto``; files are its proto3
JSON form. This module turns JSON text into a protobuf message with one-line, path-naming
errors, and back. Families then build their typed objects from the message's dict form.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor

from placement.solver.errors import InputError, Shown
from placement.solver.schema.v1 import placement_pb2

MAX_FILE_BYTES = 512 * 1024 * 1024
"""Files larger than this are refused before reading."""

SOLUTION_ONLY_KEYS = ("instance_name",)
"""Top-level keys only a solution file has (an instance file given one is a solution)."""


@dataclass(frozen=True)
class FieldRange:
    """The documented range of one numeric field: ``lo <= value <= hi``.

    Families declare one per numeric field of their messages, in a table keyed by
    ``"<Message>.<field>"`` (``"GpuJob.gpus"``) that :func:`check_ranges` reads. The limits are
    round numbers that the exact encodings can honour once they scale values to integers.
    """

    lo: float
    hi: float
    integer: bool = False
    unit: str = ""
    """What the number counts, shown in the message (``GB``, ``milli-GPU``)."""
    lo_open: bool = False
    """True when ``lo`` itself is refused (``value > lo``)."""

    def contains(self, value: float) -> bool:
        """Whether ``value`` is inside the range (NaN is not: every comparison fails)."""
        try:
            above = value > self.lo if self.lo_open else value >= self.lo
            inside = above and value <= self.hi
        except TypeError:
            return False
        if inside and self.integer and isinstance(value, float):
            return value.is_integer()
        return inside

    def expected(self) -> str:
        """The range in words, e.g. ``an integer in [0, 1024] (GPUs)``."""
        left = "(" if self.lo_open else "["
        what = "an integer" if self.integer else "a number"
        unit = f" ({self.unit})" if self.unit else ""
        return f"{what} in {left}{format_number(self.lo)}, {format_number(self.hi)}]{unit}"


def format_number(value: float) -> str:
    """A number as people write it: ``1024``, ``0.001``, ``1e6``, ``2**62`` stays exact."""
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        v = int(value)
        exp = len(str(abs(v))) - 1
        if exp >= 5 and abs(v) == 10**exp:
            return f"{'-' if v < 0 else ''}1e{exp}"
        if abs(v) < 10**7:
            return str(v)
        for base in (2,):
            k = abs(v).bit_length() - 1
            if abs(v) == base**k:
                return f"{'-' if v < 0 else ''}2**{k}"
            if abs(v) == base ** (k + 1) - 1:
                return f"{'-' if v < 0 else ''}2**{k + 1}-1"
        return f"{value:.6g}"
    return f"{value:.6g}"


RangeTable = Mapping[str, FieldRange]
"""``"<Message>.<field>"`` -> its :class:`FieldRange`."""

_RANGES: dict[str, FieldRange] = {}
"""Every family's declared ranges, by ``"<Message>.<field>"`` (filled by :func:`register_ranges`)."""

family_loader: Callable[[str], Any] | None = None
"""Loads the family of a file section by its key, so its ranges are registered before the
file is parsed (set by :mod:`placement.solver.family`, which knows the registry)."""


def register_ranges(table: RangeTable) -> RangeTable:
    """Make a family's range table known to the JSON reader (for values too large to store)."""
    _RANGES.update(table)
    return table


def declared_range(type_name: str, field_name: str, prefix: str = "") -> FieldRange | None:
    """The registered range of ``field_name`` of the message called ``type_name`` (or
    ``prefix + type_name``: the typed ``Layer`` is the ``PartitionLayer`` message)."""
    return _RANGES.get(f"{type_name}.{field_name}") or _RANGES.get(
        f"{prefix}{type_name}.{field_name}"
    )


_PLANS: dict[tuple[int, str], tuple[list[Any], list[Any]]] = {}
"""Per (table, message type): the ranged scalar fields and the message fields to walk."""


def _plan(descriptor: Any, table: RangeTable) -> tuple[list[Any], list[Any]]:
    key = (id(table), descriptor.full_name)
    plan = _PLANS.get(key)
    if plan is None:
        scalars, messages = [], []
        for fd in descriptor.fields:
            if fd.type == FieldDescriptor.TYPE_MESSAGE:
                messages.append((fd.name, fd.is_repeated))
                continue
            rng = table.get(f"{descriptor.name}.{fd.name}")
            if rng is not None:
                optional = fd.has_presence and not fd.is_repeated
                scalars.append((fd.name, rng, fd.is_repeated, optional))
        plan = _PLANS[key] = (scalars, messages)
    return plan


def check_ranges(message: Any, table: RangeTable, path: str, collector: Any) -> None:
    """Add an error to ``collector`` for each numeric field of ``message`` (recursively) that
    is outside its range in ``table``. Fields with presence that are unset are skipped (their
    defaults apply); paths are the JSON paths, ``gpu.jobs[3].gpus``."""
    scalars, messages = _plan(message.DESCRIPTOR, table)
    for name, rng, repeated, optional in scalars:
        if optional and not message.HasField(name):
            continue
        value = getattr(message, name)
        if repeated:
            for i, item in enumerate(value):
                if not rng.contains(item):
                    collector.add(f"{path}.{name}[{i}]", item, rng.expected())
        elif not rng.contains(value):
            collector.add(f"{path}.{name}", value, rng.expected())
    for name, repeated in messages:
        if repeated:
            for i, item in enumerate(getattr(message, name)):
                check_ranges(item, table, f"{path}.{name}[{i}]", collector)
        elif message.HasField(name):
            check_ranges(getattr(message, name), table, f"{path}.{name}", collector)


def json_type_name(value: Any) -> str:
    """What a JSON value is, in JSON's words (never a Python type name)."""
    if value is None:
        return Shown("null")
    if isinstance(value, bool):
        return Shown("true" if value else "false")
    if isinstance(value, dict):
        return Shown("a JSON object")
    if isinstance(value, list | tuple):
        return Shown("a JSON list")
    if isinstance(value, str):
        return Shown("a string")
    if isinstance(value, int | float):
        return Shown("a number")
    return Shown("a value of another kind")


_AT = re.compile(r' at "([^"]*)"')
_NO_FIELD = re.compile(r'has no field named "([^"]+)"')


def read_input_text(path: str | Path, what: str = "UTF-8 text") -> str:
    """The text of an input file, read at most :data:`MAX_FILE_BYTES` (plus one) bytes into
    memory whatever the file is (``/dev/zero``, a pipe, a growing file); every failure is an
    :class:`InputError` naming the file. ``what`` is what the file is expected to hold."""
    p = Path(path)
    file = str(path)
    if not p.exists():
        raise InputError.single("", file, "an existing file", file=file)
    if p.is_dir():
        raise InputError.single("", file, "a file, not a directory", file=file)
    try:
        with open(p, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError.single("", file, f"a readable file ({exc.strerror})", file=file) from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError.single(
            "", f"more than {MAX_FILE_BYTES} bytes", f"at most {MAX_FILE_BYTES} bytes", file=file
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.single("", f"byte {exc.start}", what, file=file) from None


def load_json(path: str | Path) -> dict[str, Any]:
    """Read a JSON object from ``path``; every failure is an :class:`InputError`."""
    return parse_json_text(read_input_text(path), file=str(path))


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def parse_json_value(text: str, file: str | None = None) -> Any:
    """Parse any JSON value; NaN and Infinity, a key given twice in one object (JSON leaves
    it undefined; Python would keep the last silently) and nesting deeper than Python's
    stack are refused with an :class:`InputError`."""
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InputError.single(
            f"line {exc.lineno} column {exc.colno}", exc.msg, "valid JSON", file=file
        ) from None
    except _DuplicateKey as exc:
        raise InputError.single(
            exc.key, "a key given twice in one object", "each key once per object", file=file
        ) from None
    except ValueError as exc:
        raise InputError.single("", str(exc), "finite JSON numbers", file=file) from None
    except RecursionError:
        raise InputError.single(
            "", "deeply nested JSON", "at most a few hundred levels", file=file
        ) from None


def parse_json_text(text: str, file: str | None = None) -> dict[str, Any]:
    """Parse JSON text into a dict (see :func:`parse_json_value`)."""
    data = parse_json_value(text, file=file)
    if not isinstance(data, dict):
        raise InputError.single("", json_type_name(data), "a JSON object", file=file)
    return data


_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}
_FLOATS = (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT)


def _scalar_problem(field: Any, value: Any) -> str | None:
    """What is expected of ``value`` for scalar ``field``, or None if it is acceptable.

    The declared range of the field (:func:`register_ranges`) is what a value that cannot even
    be stored is told; values that fit are judged against it by the family's
    :func:`check_ranges`, for files and typed instances alike."""
    t = field.type
    declared = _RANGES.get(f"{field.containing_type.name}.{field.name}")
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        expected = declared.expected() if declared else f"an integer in [{lo}, {hi}]"
        if isinstance(value, str):
            try:
                value = int(value)
            except ValueError:
                return expected
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            return expected
        return None
    if t in _FLOATS:
        if isinstance(value, bool) or not finite(value):
            return declared.expected() if declared else "a finite number"
        return None
    if t == FieldDescriptor.TYPE_BOOL:
        return None if isinstance(value, bool) else "true or false"
    if t == FieldDescriptor.TYPE_STRING:
        return None if isinstance(value, str) else "a string"
    if t == FieldDescriptor.TYPE_ENUM:
        names = [v.name for v in field.enum_type.values]
        return None if value in names else "one of " + ", ".join(names)
    return None


def _locate(data: Any, descriptor: Any, path: str) -> tuple[str, Any, str] | None:
    """Walk JSON ``data`` against a message descriptor; the first bad field, if any."""
    if not isinstance(data, dict):
        return path, data, f"a JSON object ({descriptor.name})"
    by_json = {f.json_name: f for f in descriptor.fields}
    oneofs_seen: dict[str, str] = {}
    for key, value in data.items():
        field = descriptor.fields_by_name.get(key) or by_json.get(key)
        here = f"{path}.{key}" if path else key
        if field is None:
            return here, key, f"a known field of {descriptor.full_name}"
        if field.containing_oneof is not None:
            other = oneofs_seen.setdefault(field.containing_oneof.name, key)
            if other != key:
                return (
                    here,
                    key,
                    f"only one of the {field.containing_oneof.name} fields (already {other!r})",
                )
        if value is None:
            continue
        repeated = field.is_repeated
        items = value if repeated else [value]
        if repeated and not isinstance(value, list):
            return here, value, "a JSON list"
        for i, item in enumerate(items):
            where = f"{here}[{i}]" if repeated else here
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                found = _locate(item, field.message_type, where)
                if found:
                    return found
            else:
                expected = _scalar_problem(field, item)
                if expected:
                    return where, item, expected
    return None


def _message_from_dict(data: dict[str, Any], message: Any, root: str) -> Any:
    if family_loader is not None:
        oneof = message.DESCRIPTOR.oneofs_by_name.get("family")
        for key in data:
            if oneof is not None and key in {f.name for f in oneof.fields}:
                family_loader(key)
    # Walk first: json_format accepts some wrong shapes (a list for a message field) and
    # loses list indices in its errors.
    try:
        found = _locate(data, message.DESCRIPTOR, "")
    except RecursionError:
        raise InputError.single("", "deeply nested JSON", "at most a few hundred levels") from None
    if found:
        raise InputError.single(*found)
    try:
        json_format.ParseDict(data, message)
    except json_format.ParseError as exc:
        text = str(exc).split("\n")[0]
        m = _AT.search(text)
        path = m.group(1) if m else ""
        # protobuf names the message type first ("Instance.gpu.jobs[0]"): drop it.
        path = path.split(".", 1)[1] if "." in path else ("" if path == root else path)
        field = _NO_FIELD.search(text)
        if field:
            full = f"{path}.{field.group(1)}" if path else field.group(1)
            raise InputError.single(
                full, field.group(1), "a known field of the placement/v1 schema"
            ) from None
        detail = _AT.sub("", text).strip().rstrip(".")
        raise InputError.single(path, detail, "a value of the placement/v1 schema type") from None
    except RecursionError:
        raise InputError.single("", "deeply nested JSON", "at most a few hundred levels") from None
    return message


def instance_message(data: dict[str, Any]) -> Any:
    """A ``placement.v1.Instance`` from its JSON dict (a solution's content is refused as
    such)."""
    check_file_kind(data, "instance")
    return _message_from_dict(data, placement_pb2.Instance(), "Instance")


def solution_message(data: dict[str, Any]) -> Any:
    """A ``placement.v1.Solution`` from its JSON dict (an instance's content is refused as
    such)."""
    check_file_kind(data, "solution")
    return _message_from_dict(data, placement_pb2.Solution(), "Solution")


def start_message(data: dict[str, Any]) -> Any:
    """The ``placement.v1.Solution`` of a warm start's JSON: a solution file's content, or a
    result's (``placement solve --json``, ``Result.to_dict()``), whose ``solution`` it takes."""
    if "solution" in data and "status" in data:
        solution = data["solution"]
        if not isinstance(solution, dict):
            raise InputError.single("solution", solution, "a result with a solution")
        # A result holds its family's section only.
        data = {str(data.get("family", "")): solution}
    return solution_message(data)


_INSTANCE_ONLY = {
    f.name
    for fam in placement_pb2.Instance.DESCRIPTOR.oneofs_by_name["family"].fields
    for f in fam.message_type.fields
} - {
    f.name
    for fam in placement_pb2.Solution.DESCRIPTOR.oneofs_by_name["family"].fields
    for f in fam.message_type.fields
}
"""Field names of the family sections that only instances have (``jobs``, ``tasks``...)."""


def _looks_like_instance(data: dict[str, Any]) -> bool:
    """True when a family section holds fields only an instance has."""
    return any(
        isinstance(section, dict) and any(k in _INSTANCE_ONLY for k in section)
        for section in data.values()
    )


def check_file_kind(data: dict[str, Any], wanted: str) -> None:
    """Refuse a solution's content where an instance is expected (``wanted="instance"``) and
    vice versa, saying so, rather than naming the first field that does not fit."""
    is_solution = any(key in data for key in SOLUTION_ONLY_KEYS)
    is_instance = "description" in data or _looks_like_instance(data)
    if wanted == "instance" and is_solution and not is_instance:
        raise InputError.single("", Shown("a solution file"), "an instance file")
    if wanted == "solution" and is_instance and not is_solution:
        raise InputError.single("", Shown("an instance file"), "a solution file")


_INT64 = {
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_SFIXED64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_FIXED64,
}


def _int64_as_numbers(data: Any, descriptor: Any) -> None:
    """proto3 JSON writes 64-bit integers as strings; write plain numbers (parsers accept both)."""
    for key, value in data.items():
        field = descriptor.fields_by_name.get(key)
        if field is None:
            continue
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    _int64_as_numbers(item, field.message_type)
        elif field.type in _INT64:
            data[key] = [int(v) for v in value] if isinstance(value, list) else int(value)


def message_to_dict(message: Any) -> dict[str, Any]:
    """The JSON dict of a message: snake_case names, defaults included, integers as numbers."""
    data = json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    _int64_as_numbers(data, message.DESCRIPTOR)
    return data


def family_key(message: Any, path: str = "") -> str:
    """The family a message is for (the name of its ``oneof family`` field)."""
    which = message.WhichOneof("family")
    if which is None:
        raise InputError.single(path or "family", None, 'one family section, e.g. {"gpu": {...}}')
    return which


def finite(value: float) -> bool:
    """True for a finite number (an integer too large for a double is not)."""
    if not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
