"""Structs as kernel parameters: a class declared with :func:`struct` bundles arrays and
scalars, a kernel takes it as one parameter and reads its fields (``m.data[i]``,
``m.rows``), a launch passes an instance.

A struct parameter ``m`` is its fields, each a parameter of its own named ``m_<field>``
(:func:`flat_name`) in the IR, in the order the class declares them: the kernel's
signature lists them in its place, the frontend reads ``m.field`` as that parameter
(:func:`read_fields`), and a launch passes the instance's field values there. So the IR,
the passes and every backend know nothing of structs.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["struct", "StructType", "struct_type", "flat_name", "read_fields", "flatten"]

C = TypeVar("C", bound=type)


@dataclass(frozen=True)
class StructType:
    """What :func:`struct` records of a class: its name and its fields' names and
    annotations (evaluated), in declaration order."""

    name: str
    fields: tuple[tuple[str, object], ...]


def struct(cls: C) -> C:
    """Decorator: make ``cls`` a struct kernels take as one parameter, of fields each
    an ``Array[...]`` or a scalar type; ``cls`` becomes a frozen dataclass
    (``Matrix(data=buf, rows=np.uint32(3))``).

    Its annotations are evaluated when a kernel taking it is first read, in the
    module that defines it (so they may name what is defined after it)."""
    made = dataclasses.dataclass(frozen=True)(cls)
    made.__cubecl_struct__ = True  # type: ignore[attr-defined]
    return made


def struct_type(ann: object) -> StructType | None:
    """The struct ``ann`` (a parameter's annotation) is, or None; raises ``TypeError``
    when its fields' annotations cannot be evaluated."""
    if not (isinstance(ann, type) and getattr(ann, "__cubecl_struct__", False)):
        return None
    hints = typing.get_type_hints(ann)
    names = [f.name for f in dataclasses.fields(ann)]
    return StructType(ann.__name__, tuple((n, hints[n]) for n in names))


def flat_name(param: str, field: str) -> str:
    """The IR parameter that holds field ``field`` of struct parameter ``param``."""
    return f"{param}_{field}"


def read_fields(tree: ast.FunctionDef, structs: dict[str, tuple[str, ...]],
                fail: Callable[[ast.AST, str], Exception]) -> ast.FunctionDef:
    """``tree`` (not changed) with each ``m.field`` of a struct parameter ``m`` (named
    in ``structs`` with its fields) read as the field's own parameter; ``m`` itself may
    only be an argument of a call (a helper's, which binds the fields). ``fail`` makes
    the error for a field the struct lacks or a struct used otherwise."""

    class _Fields(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            base = node.value
            if isinstance(base, ast.Name) and base.id in structs:
                fields = structs[base.id]
                if node.attr not in fields:
                    raise fail(node, f"struct `{base.id}` has no field `{node.attr}`; its "
                                     f"fields are {', '.join(fields)}")
                return ast.copy_location(ast.Name(flat_name(base.id, node.attr),
                                                  ast.Load()), node)
            return self.generic_visit(node)

        def visit_Call(self, node: ast.Call) -> ast.AST:
            # A struct passed whole to a helper stays a name: inlining binds its fields.
            node.func = self.visit(node.func)
            node.args = [a if _whole(a) else self.visit(a) for a in node.args]
            for kw in node.keywords:
                kw.value = kw.value if _whole(kw.value) else self.visit(kw.value)
            return node

        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in structs:
                fields = structs[node.id]
                raise fail(node, f"struct `{node.id}` is used by its fields "
                                 f"({', '.join(f'{node.id}.{f}' for f in fields)}) or "
                                 "passed whole to a cube_fn, nothing else")
            return node

    def _whole(e: ast.expr) -> bool:
        return isinstance(e, ast.Name) and e.id in structs

    out = _Fields().visit(copy.deepcopy(tree))
    assert isinstance(out, ast.FunctionDef)
    return out


def flatten(kernel: str, names: tuple[str, ...], structs: dict[str, tuple[type, tuple[str, ...]]],
            args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` (one per parameter in ``names``) with each struct instance replaced by
    its fields' values, in order; ``TypeError`` naming the parameter for a value that is
    not an instance of its struct."""
    if len(args) != len(names):
        raise TypeError(f"kernel {kernel!r} takes {len(names)} arguments "
                        f"({', '.join(names)}), got {len(args)}")
    out: list[Any] = []
    for name, value in zip(names, args, strict=True):
        entry = structs.get(name)
        if entry is None:
            out.append(value)
            continue
        cls, fields = entry
        if not isinstance(value, cls):
            raise TypeError(f"kernel {kernel!r}: parameter {name!r} is a struct "
                            f"{cls.__name__}, got {type(value).__name__}; pass "
                            f"{cls.__name__}({', '.join(f'{f}=...' for f in fields)})")
        out.extend(getattr(value, f) for f in fields)
    return tuple(out)
