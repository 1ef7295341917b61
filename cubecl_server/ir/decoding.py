"""Reading the IR's canonical serialisation back: any node from :func:`from_json`, and a
kernel, bounded, from text that may come from a store anyone could have written
(:func:`kernel_from_json`)."""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import struct
from typing import Any

from cubecl_server import bounded

from . import expr, stmt, types
from .encoding import ENUMS
from .kernel import Kernel
from .types import Elem, SourceLoc

__all__ = ["from_json", "kernel_from_json", "MAX_KERNEL_JSON", "MAX_KERNEL_DEPTH"]

_NODES: dict[str, type] = {
    cls.__name__: cls for cls in (
        *(getattr(module, name) for module in (types, expr, stmt) for name in module.__all__),
        Kernel)
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls is not SourceLoc
}
"""Every node type of the IR by name: what a serialised ``"node"`` names."""

_ENUM_MEMBERS: dict[tuple[str, Any], enum.Enum] = {
    (cls.__name__, member._value_): member for cls in ENUMS for member in cls
}
"""Every member of every enumeration of the IR, by its type's name and its value."""


def _tuple(value: list[Any]) -> tuple[Any, ...]:
    return tuple([_tuple(v) if type(v) is list else v for v in value])


def _decode_object(value: dict[str, Any]) -> Any:
    # json calls this for each object, innermost first: its members are decoded.
    name = value.get("enum")
    if name is not None:
        return _ENUM_MEMBERS[(name, value["v"])]
    text = value.get("float")
    if text is not None:
        return float.fromhex(text)
    cls = _NODES[value.pop("node")]
    for k, v in value.items():
        if type(v) is list:
            value[k] = _tuple(v)
    return cls(**value)


_DECODER = json.JSONDecoder(object_hook=_decode_object)


def from_json(text: str) -> Any:
    """Rebuild an IR node from :func:`to_json` output (``loc`` is not restored)."""
    value = _DECODER.decode(text)
    return _tuple(value) if type(value) is list else value


MAX_KERNEL_JSON = 64 << 20
"""The longest serialised kernel :func:`kernel_from_json` decodes (far beyond any
kernel the frontend makes)."""
MAX_KERNEL_DEPTH = 200
"""The deepest nesting of a serialised kernel :func:`kernel_from_json` decodes: about
as deep as an expression Python's parser reads (200 parentheses) and every backend
lowers, so a walk over the IR never nears the interpreter's recursion limit."""


def kernel_from_json(text: str, loc: SourceLoc | None = None,
                     access: tuple[frozenset[str], frozenset[str]] | None = None,
                     elems: frozenset[Elem] | None = None) -> Kernel:
    """Rebuild a kernel from :func:`to_json` output, with its ``loc`` and, when given,
    its :attr:`Kernel.array_access` and :attr:`Kernel.elems`. Its digest is the SHA-256
    of ``text``, not of a new encoding: to_json's output is canonical, so that is the
    digest it would give.

    Raises ValueError when ``text`` is not a serialised kernel, or is one beyond the
    bounds of :func:`cubecl_server.bounded.loads` (at most :data:`MAX_KERNEL_JSON`
    bytes, :data:`MAX_KERNEL_DEPTH` levels): the text may come from a store anyone
    could have written.
    """
    try:
        value = bounded.loads(text, max_bytes=MAX_KERNEL_JSON, max_depth=MAX_KERNEL_DEPTH,
                              object_hook=_decode_object)
        kernel = _tuple(value) if type(value) is list else value
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError, struct.error,
            RecursionError) as exc:
        # A node's own checks raise what they raise on a value no frontend made.
        raise ValueError(f"not a serialised kernel: {type(exc).__name__}: {exc}") from None
    if type(kernel) is not Kernel:
        raise ValueError(f"not a serialised kernel: a {type(kernel).__name__}")
    kernel = dataclasses.replace(kernel, loc=loc)
    # Filled as the cached properties would fill them.
    kernel.__dict__["digest"] = hashlib.sha256(text.encode()).hexdigest()
    if access is not None:
        kernel.__dict__["array_access"] = access
    if elems is not None:
        kernel.__dict__["elems"] = elems
    return kernel
