"""Traversals of the IR: every node under a statement or expression, parents first, and
the locals a block assigns."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from .stmt import Assign, AtomicStmt, For, Stmt

__all__ = ["walk", "assigned_names", "node_fields"]


_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}
"""Per type met by :func:`walk`: its dataclass field names, or None if not a dataclass."""

_UNSEEN: Any = object()


def _field_names(cls: type) -> tuple[str, ...] | None:
    """``cls``'s dataclass field names (None for a type that is no dataclass), worked
    out once per type instead of once per node."""
    names = (tuple(f.name for f in dataclasses.fields(cls))
             if dataclasses.is_dataclass(cls) else None)
    _FIELD_NAMES[cls] = names
    return names


def node_fields(cls: type) -> tuple[str, ...] | None:
    """The dataclass field names of the IR node type ``cls`` (None for a type that is no
    dataclass), from the table :func:`walk` keeps."""
    names = _FIELD_NAMES.get(cls, _UNSEEN)
    return _field_names(cls) if names is _UNSEEN else names


def walk(nodes: tuple[Any, ...] | Any) -> Any:
    """Yield every statement and expression under ``nodes``, parents first."""
    stack = list(nodes) if isinstance(nodes, tuple) else [nodes]
    stack.reverse()
    names_of = _FIELD_NAMES.get
    while stack:
        node = stack.pop()
        if node is None:
            continue
        yield node
        names = names_of(type(node), _UNSEEN)
        if names is _UNSEEN:
            names = _field_names(type(node))
        if names is None:
            continue
        children: list[Any] = []
        for name in names:
            v = getattr(node, name)
            for c in (v if isinstance(v, tuple) else (v,)):
                known = names_of(type(c), _UNSEEN)
                if known is _UNSEEN:
                    known = _field_names(type(c))
                if known is not None:
                    children.append(c)
        children.reverse()
        stack.extend(children)


def assigned_names(stmts: tuple[Stmt, ...]) -> Iterator[str]:
    """The local each assignment under ``stmts`` writes, once per assignment, nested
    blocks included: ``Assign``, a ``For``'s variable, an atomic's result."""
    for n in walk(stmts):
        if isinstance(n, Assign):
            yield n.name
        elif isinstance(n, For):
            yield n.var
        elif isinstance(n, AtomicStmt) and n.result is not None:
            yield n.result
