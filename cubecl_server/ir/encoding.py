"""The IR's canonical serialisation: compact JSON, keys in field order, floats exact.

Its text is what a kernel's digest hashes (:attr:`~cubecl_server.ir.Kernel.digest`),
so it must not change for a kernel that did not: a field added later is left out
where it holds its default (``omit_at_default`` in its metadata).
:mod:`.decoding` reads it back.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any

from .expr import BinOp, BuiltinName, MathFn, PlaneFn, ReduceFn, UnOp
from .stmt import AtomicOp
from .types import Elem, SourceLoc

__all__ = ["to_json", "ENUMS"]

ENUMS: tuple[type[enum.Enum], ...] = (Elem, BuiltinName, BinOp, UnOp, MathFn, PlaneFn,
                                      AtomicOp, ReduceFn)
"""Every enumeration of the IR: a member is written as its type's name and its value."""

_ENUM_TYPES = frozenset(ENUMS)

_ALWAYS: Any = object()

_ENCODED_FIELDS: dict[type, tuple[tuple[str, Any], ...]] = {}
"""Per node type met: the fields its serialisation holds, in order, each with the
default it is left out at (``_ALWAYS`` for a field always written)."""


def _encoded_fields(cls: type) -> tuple[tuple[str, Any], ...]:
    """The fields of the node type ``cls`` :data:`_ENCODED_FIELDS` holds, worked out
    once per type instead of once per node."""
    fields = _ENCODED_FIELDS[cls] = tuple(
        (f.name, f.default if f.metadata.get("omit_at_default") else _ALWAYS)
        for f in dataclasses.fields(cls) if f.compare)
    return fields


def _encode(value: Any) -> Any:
    # The IR's own types by exact type first; anything else as _encode_other says.
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    fields = _ENCODED_FIELDS.get(t)
    if fields is not None:
        out: dict[str, Any] = {"node": t.__name__}
        for name, omitted in fields:
            v = getattr(value, name)
            if v is not omitted and v != omitted:
                out[name] = _encode(v)
        return out
    if t is tuple:
        return [_encode(v) for v in value]
    if t is float:
        # float.hex is exact and has a spelling for nan and inf, unlike JSON numbers.
        return {"float": value.hex()}
    if t in _ENUM_TYPES:
        return {"enum": t.__name__, "v": value._value_}
    return _encode_other(value)


def _encode_other(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return {"enum": type(value).__name__, "v": value.value}
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        # float.hex is exact and has a spelling for nan and inf, unlike JSON numbers.
        return {"float": value.hex()}
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    if isinstance(value, SourceLoc):
        raise TypeError("SourceLoc is not serialised")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # A node type met for the first time: from now on _encode writes it directly.
        _encoded_fields(type(value))
        return _encode(value)
    raise TypeError(f"cannot serialise {type(value).__name__} in the IR")


def to_json(node: Any) -> str:
    """The canonical serialisation of an IR node: compact JSON, keys in field order."""
    return json.dumps(_encode(node), separators=(",", ":"), allow_nan=False)
