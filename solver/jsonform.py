"""Reading and writing the placement/v1 JSON form (instance and solution files).

The schema is the protobuf in ``solver/schema/proto/placement/v1/placement.proto``; files are its proto3
JSON form. This module turns JSON text into a protobuf message with one-line, path-naming
errors, and back. Families then build their typed objects from the message's dict form.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor

from placement.solver.errors import InputError
from placement.solver.schema.v1 import placement_pb2

MAX_FILE_BYTES = 512 * 1024 * 1024
"""Files larger than this are refused before reading."""

_AT = re.compile(r' at "([^"]*)"')
_NO_FIELD = re.compile(r'has no field named "([^"]+)"')


def load_json(path: str | Path) -> dict[str, Any]:
    """Read a JSON object from ``path``; every failure is an :class:`InputError`."""
    p = Path(path)
    file = str(path)
    if not p.exists():
        raise InputError.single("", file, "an existing file", file=file)
    if p.is_dir():
        raise InputError.single("", file, "a file, not a directory", file=file)
    size = p.stat().st_size
    if size > MAX_FILE_BYTES:
        raise InputError.single("", f"{size} bytes", f"at most {MAX_FILE_BYTES} bytes", file=file)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.single("", f"byte {exc.start}", "UTF-8 text", file=file) from None
    except OSError as exc:
        raise InputError.single("", file, f"a readable file ({exc.strerror})", file=file) from None
    return parse_json_text(text, file=file)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


def parse_json_text(text: str, file: str | None = None) -> dict[str, Any]:
    """Parse JSON text into a dict; NaN and Infinity are refused."""
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError.single(
            f"line {exc.lineno} column {exc.colno}", exc.msg, "valid JSON", file=file
        ) from None
    except ValueError as exc:
        raise InputError.single("", str(exc), "finite JSON numbers", file=file) from None
    except RecursionError:
        raise InputError.single(
            "", "deeply nested JSON", "at most a few hundred levels", file=file
        ) from None
    if not isinstance(data, dict):
        raise InputError.single("", type(data).__name__, "a JSON object", file=file)
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
    """What is expected of ``value`` for scalar ``field``, or None if it is acceptable."""
    t = field.type
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        if isinstance(value, str):
            try:
                value = int(value)
            except ValueError:
                return f"an integer in [{lo}, {hi}]"
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            return f"an integer in [{lo}, {hi}]"
        return None
    if t in _FLOATS:
        if isinstance(value, bool) or not finite(value):
            return "a finite number"
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
    """A ``placement.v1.Instance`` from its JSON dict."""
    return _message_from_dict(data, placement_pb2.Instance(), "Instance")


def solution_message(data: dict[str, Any]) -> Any:
    """A ``placement.v1.Solution`` from its JSON dict."""
    return _message_from_dict(data, placement_pb2.Solution(), "Solution")


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
