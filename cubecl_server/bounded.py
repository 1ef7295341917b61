"""Bounded reading of JSON that comes from outside the process.

Everything the store reads back (IR, artifact headers, tune and build-id rows,
bundle manifests) was written by some process, but may have been changed since by
anyone with write access to the file or the server. Before such text is trusted it
passes :func:`loads`, which bounds its size, its nesting and its numbers before the
standard decoder sees it, so a forged value fails with :class:`Unbounded` (a
``ValueError``) rather than exhausting the stack (``RecursionError``), memory, or
the integer conversion of a later ``struct.pack``. The readers then check the type
of every value they pick out of the document.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "Unbounded", "check_depth", "loads"]

MAX_DEPTH = 256
"""The deepest nesting of arrays and objects :func:`loads` accepts by default: Python's
own decoder, and a recursive walk over what it returns, stay far from the
interpreter's recursion limit below this (readers of deeper formats ask for less)."""
MAX_INT_DIGITS = 40
"""The most digits an integer may have: more than any 128-bit value, far fewer than
would make a conversion slow or a packing fail unexpectedly."""

_STRUCTURE = b'[]{}"\\'
_OTHER_BYTES = bytes(sorted(set(range(256)) - set(_STRUCTURE)))
_STRING = re.compile(rb'"[^"]*"')
_ESCAPED_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_EMPTY_PAIR = re.compile(rb"\[\]|\{\}")


class Unbounded(ValueError):
    """Text read from elsewhere that is not JSON within the bounds asked for (too big,
    nested too deep, a number too long)."""


def _reject_constant(name: str) -> None:
    # NaN and Infinity are not JSON; nothing here writes them.
    raise Unbounded(f"non-standard JSON constant {name}")


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise Unbounded(f"an integer of {len(text.lstrip('-'))} digits (at most "
                        f"{MAX_INT_DIGITS})")
    return int(text)


def _brackets(data: bytes) -> bytes:
    """The brackets of the JSON ``data`` outside its strings, in order.

    Everything but brackets, quotes and backslashes goes first (one C pass: UTF-8
    never hides an ASCII byte inside another character), so what is left of each
    string is its quotes around the brackets it holds. Without a backslash, removing
    every pair of adjacent quotes only merges neighbouring strings, and what remains
    in quotes goes with one more scan; escapes need the full scan of each string."""
    kept = data.translate(None, _OTHER_BYTES)
    if b"\\" in kept:
        return _NOT_BRACKET.sub(b"", _ESCAPED_STRING.sub(b"", data))
    kept = kept.replace(b'""', b"")
    return _STRING.sub(b"", kept) if b'"' in kept else kept


def check_depth(data: bytes, max_depth: int) -> None:
    """Raise Unbounded if the JSON ``data`` nests arrays and objects deeper than
    ``max_depth``.

    Every innermost empty pair of brackets goes, one level per pass: each pass is
    one regular-expression scan in C, so a deep document costs at most ``max_depth``
    scans and never a Python stack frame per level."""
    brackets = _brackets(data)
    for _ in range(max_depth):
        if not brackets:
            return
        shorter = _EMPTY_PAIR.sub(b"", brackets)
        if shorter == brackets:
            return  # unbalanced: the decoder says where
        brackets = shorter
    if brackets:
        raise Unbounded(f"nested deeper than {max_depth} levels")


def loads(data: str | bytes, *, max_bytes: int, max_depth: int = MAX_DEPTH,
          object_hook: Callable[[dict[str, Any]], Any] | None = None) -> Any:
    """The JSON value of ``data`` (UTF-8 when bytes), once it is at most ``max_bytes``
    long, nests at most ``max_depth`` levels and holds no integer longer than
    :data:`MAX_INT_DIGITS` digits and no NaN or infinity; Unbounded otherwise, or
    when it is not JSON. ``object_hook`` is the decoder's (a ValueError it raises
    comes as Unbounded)."""
    if len(data) > max_bytes:
        raise Unbounded(f"{len(data)} bytes of JSON, more than the {max_bytes} allowed")
    try:
        raw, text = (data, data.decode("utf-8")) if isinstance(data, bytes) \
            else (data.encode("utf-8"), data)
        check_depth(raw, max_depth)
        return json.loads(text, parse_int=_integer, parse_constant=_reject_constant,
                          object_hook=object_hook)
    except Unbounded:
        raise
    except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError
        raise Unbounded(f"not JSON: {e}") from None
