"""What the frontend read from outside a kernel's own code: every global, closure
variable, builtin, module attribute and helper it resolved, with a fingerprint of
the value it found. The IR cache (:mod:`.ircache`) keys a stored kernel by these.

A read is a *path* of names from the kernel's scope: ``("SCALE",)`` is a name the
kernel resolved; ``("np", "float32")`` an attribute of a module it resolved;
``("axpy", "SCALE")`` a name resolved in the scope of the helper ``axpy`` (a
:class:`~.types.CubeFn` the kernel resolved), and so on. :func:`resolve` follows a
path in any process, so a later process can check whether it would read the same.
"""

from __future__ import annotations

import builtins
import enum
import hashlib
import inspect
import json
import types as pytypes
from collections.abc import Callable
from typing import Any

from . import types as lt
from .source import closure_vars, quick_text

__all__ = ["MISSING", "Path", "Reads", "fingerprint", "lookup", "resolve"]

Path = tuple[str, ...]
"""A read: names from the kernel's scope, through helpers' scopes and modules."""


class _Missing:
    """What a name that resolves to nothing resolves to."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()
"""The value of a path that resolves to nothing (a missing name is a read too: it
may be defined in a later process)."""


def lookup(fn: Callable[..., Any], name: str) -> object:
    """What ``name`` means in ``fn``'s body, as the frontend resolves it: a closure
    variable, else a global, else a builtin; :data:`MISSING` if none."""
    closure = closure_vars(fn)
    if name in closure:
        return closure[name]
    scope = fn.__globals__
    if name in scope:
        return scope[name]
    return getattr(builtins, name, MISSING)


def resolve(fn: Callable[..., Any], path: Path) -> object:
    """The value ``path`` leads to from kernel ``fn`` now; :data:`MISSING` where a
    step has nothing to resolve in (a value that is neither a helper nor a module)."""
    obj = lookup(fn, path[0])
    for step in path[1:]:
        if isinstance(obj, lt.CubeFn):
            obj = lookup(obj.fn, step)
        elif isinstance(obj, pytypes.ModuleType | enum.EnumMeta):
            try:
                obj = getattr(obj, step, MISSING)
            except Exception:  # a module __getattr__ that fails is as good as absent
                obj = MISSING
        else:
            return MISSING
    return obj


def _named() -> dict[int, tuple[object, str]]:
    """The objects whose meaning is their identity: the kernel language's own (what
    they mean is the language's version) and Python's builtins, by ``id``."""
    out: dict[int, tuple[object, str]] = {}
    for name, obj in vars(builtins).items():
        out[id(obj)] = (obj, f"builtin:{name}")
    for name in lt.__all__:
        obj = getattr(lt, name)
        out[id(obj)] = (obj, f"lang:{name}")
    return out


_NAMED = _named()


def _number(value: object) -> str:
    """A number's exact text (floats in hex: repr would do, hex says so)."""
    return value.hex() if isinstance(value, float) else repr(value)


def _annotation(ann: object) -> str | None:
    """The fingerprint of a helper parameter's annotation object (a string one is
    source text, and its names are reads of their own)."""
    if ann is inspect.Parameter.empty:
        return "-"
    if isinstance(ann, str):
        return f"str:{ann}"
    if isinstance(ann, (lt.ArrayType, lt.LineType, lt.TypeRef, lt.ComptimeType)):
        return f"ann:{ann!r}"
    return fingerprint(ann)


def _helper(cf: lt.CubeFn, checked: bool) -> str | None:
    """A helper's fingerprint: its name, its source, and its parameters' defaults and
    annotation objects (evaluated where it was defined, so not in its source).

    ``checked``: make sure the source text is what the frontend parses (the quick
    block parses as one statement); a key written under it stays right for any
    process whose text is the same, so a lookup need not check again.
    """
    fn = cf.fn
    text = quick_text(fn, checked)
    if text is None:
        return None
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    parts: list[str] = [cf.name, text]
    for p in sig.parameters.values():
        default = "-" if p.default is p.empty else fingerprint(p.default)
        ann = _annotation(p.annotation)
        if default is None or ann is None:
            return None
        parts += [p.name, str(p.kind), default, ann]
    digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()
    return f"cube_fn:{digest}"


def fingerprint(obj: object, checked: bool = False) -> str | None:
    """What ``obj`` means to the frontend, as text that is the same in every process
    where it means the same; None for an object that has no such text (nothing built
    from it is cached). ``checked``: see :func:`_helper`."""
    if obj is MISSING:
        return "missing"
    t = type(obj)
    if t is bool or t is int or t is float:
        return f"{t.__name__}:{_number(obj)}"
    named = _NAMED.get(id(obj))
    if named is not None and named[0] is obj:
        return named[1]
    if isinstance(obj, lt.CubeFn):
        return _helper(obj, checked)
    if isinstance(obj, pytypes.ModuleType):
        return f"module:{obj.__name__}"
    if t.__module__ == "numpy":
        import numpy as np  # lazily: only a NumPy scalar constant needs it

        if isinstance(obj, np.generic) and not isinstance(obj, (np.void, np.object_)):
            return f"numpy:{obj.dtype.name}:{_number(obj.item())}"
        return None
    if isinstance(obj, enum.Enum):
        return f"enum:{t.__module__}.{t.__qualname__}.{obj.name}:{obj.value!r}"
    if isinstance(obj, (int, float)):
        # A subclass: its type too, to be safe.
        return f"{t.__module__}.{t.__qualname__}:{_number(obj)}"
    if isinstance(obj, type) or t.__module__ == "typing":
        # A class or a typing form can only be a helper's annotation in a kernel that
        # parses (`tile: MyTile`, `v: Any`), where the frontend ignores all but the
        # language's types: its name says all that matters.
        return f"type:{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', obj)!s}"
    return None


class Reads:
    """The reads of one parse, in the order first made, each with its fingerprint.

    ``keyable`` turns False when a read's value has no fingerprint: then the parse's
    result cannot be keyed and is not stored.
    """

    def __init__(self) -> None:
        self.found: dict[Path, str] = {}
        self.keyable = True

    def note(self, path: Path, obj: object) -> None:
        """The frontend resolved ``path`` to ``obj``."""
        if path in self.found or not self.keyable:
            return
        fp = fingerprint(obj, checked=True)
        if fp is None:
            self.keyable = False
        else:
            self.found[path] = fp
