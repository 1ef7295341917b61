"""A line's lanes chosen at run time, a lane replaced, and operations that take
scalars applied to each lane of a line. The frontend builds them from the IR's
``LineElement``, ``LineMake`` and ``Select``, so no pass or backend knows them:

- ``v[i]`` with ``i`` not a constant is lane ``i`` of ``v``, and 0 (``False``) where
  ``i`` is not below the line's size;
- ``v[k] = x`` gives the local ``v`` a line that is ``v`` but for lane ``k``, which
  holds ``x``; a ``k`` chosen at run time past the line's end changes nothing;
- :func:`per_lane` applies a scalar operation (``bitcast``, a plane operation) to each
  lane, giving a line of the results.

A kernel with line arrays treats a scalar as a line of one, so each of these works at
line size 1 too.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .. import ir
from .tuples import Building
from .typerules import Value, Weak, concrete

__all__ = ["lane_choice", "lane_of", "with_lane", "per_lane"]

U32 = ir.Elem.U32


def _size(v: ir.Expr) -> int:
    return v.type.size if isinstance(v.type, ir.Line) else 1


def _element(v: ir.Expr, k: int) -> ir.Expr:
    return ir.LineElement(v, k, v.type.elem) if isinstance(v.type, ir.Line) else v


def _held(b: Building, v: ir.Expr, node: ast.AST, value_node: ast.expr) -> ir.Expr:
    # A value each lane reads is computed once (it may load, or be a long expression).
    if isinstance(v, ir.Var | ir.Const | ir.Builtin):
        return v
    held = b.hold(v, node, value_node, b.unit.pending)
    assert not isinstance(held, Weak) and not isinstance(held, tuple)
    return held  # type: ignore[return-value]


def lane_choice(b: Building, k: Value, size: int, node: ast.Subscript) -> int | ir.Expr:
    """The lane ``k`` of ``node`` (``v[k]``, ``v`` a line of ``size``): a constant,
    checked inside the line, or a value chosen at run time as a ``u32`` held in a local
    (a negative one wraps past every lane, as the language's casts do)."""
    k_node = node.slice
    if isinstance(k, Weak | ir.Const):
        if isinstance(k.value, bool) or not isinstance(k.value, int):
            raise b.fail(node, f"the lane of a line is chosen by an integer, not "
                               f"`{b.seg(k_node)}`")
        if not 0 <= k.value < size:
            raise b.fail(node, f"element {k.value} of `{b.seg(node.value)}`, a line of "
                               f"{size}: the elements are 0..{size - 1}")
        return int(k.value)
    if isinstance(k.type, ir.Line) or not k.type.is_int:
        raise b.fail(node, f"the lane of a line is chosen by an integer, not "
                           f"`{b.seg(k_node)}` ({k.type.value})")
    index = k if k.type is U32 else ir.Cast(k, U32)
    return _held(b, index, node, k_node)


def lane_of(b: Building, v: Value, k: ir.Expr, node: ast.AST,
            v_node: ast.expr) -> ir.Expr:
    """Lane ``k`` (a ``u32`` from :func:`lane_choice`) of ``v``: a chain of selects, 0
    (``False``) past the line's end."""
    line = _held(b, concrete(v), node, v_node)
    elem = ir.elem_of(line.type)
    result: ir.Expr = ir.Const(False if elem is ir.Elem.BOOL else 0, elem)
    for j in reversed(range(_size(line))):
        chosen = ir.Binary(ir.BinOp.EQ, k, ir.Const(j, U32), ir.Elem.BOOL)
        result = ir.Select(chosen, _element(line, j), result, elem)
    return result


def with_lane(line: ir.Expr, k: int | ir.Expr, x: ir.Expr) -> ir.Expr:
    """The line ``line`` (a local's value) with lane ``k`` (from :func:`lane_choice`)
    replaced by ``x`` (of its element type, and read once where ``k`` is not a
    constant)."""
    size = _size(line)
    if isinstance(k, int):
        parts = [x if j == k else _element(line, j) for j in range(size)]
    else:
        parts = [ir.Select(ir.Binary(ir.BinOp.EQ, k, ir.Const(j, U32), ir.Elem.BOOL), x,
                           _element(line, j), x.type) for j in range(size)]
    if not isinstance(line.type, ir.Line):
        return parts[0]
    return ir.LineMake(tuple(parts), line.type)


def per_lane(b: Building, v: ir.Expr, op: Callable[[ir.Expr], ir.Expr], elem: ir.Elem,
             node: ast.AST, v_node: ast.expr) -> ir.Expr:
    """``op`` (of one lane, giving an ``elem``) applied to each lane of the line
    ``v``, in order."""
    assert isinstance(v.type, ir.Line)
    line = _held(b, v, node, v_node)
    return ir.LineMake(tuple(op(_element(line, j)) for j in range(v.type.size)),
                       ir.Line(elem, v.type.size))
