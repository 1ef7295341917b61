"""Math functions of the kernel language that are compositions of the IR's operations,
built by the frontend (no ``MathFn`` of their own, so no backend or pass knows them):
``to_degrees``, ``to_radians``, ``recip``, ``magnitude`` and ``normalize``.
"""

from __future__ import annotations

import ast
import math

from .. import ir
from . import types as lt
from .tuples import Building
from .typerules import Value, Weak, type_name

__all__ = ["COMPOSED", "composed"]

COMPOSED = (lt.to_degrees, lt.to_radians, lt.recip, lt.magnitude, lt.normalize)
"""The intrinsics :func:`composed` builds."""

_SCALE = {"to_degrees": 180 / math.pi, "to_radians": math.pi / 180}


def composed(b: Building, fn: lt.Intrinsic, node: ast.Call) -> Value:
    """The value of ``fn(x)`` (one of :data:`COMPOSED`) in builder ``b``: ``x * (180 /
    pi)``, ``x * (pi / 180)``, ``1 / x``; the length ``sqrt(dot(v, v))`` of a line (of a
    scalar, ``abs(x)``), and ``v / magnitude(v)``."""
    if len(node.args) != 1 or node.keywords:
        raise b.fail(node, f"{fn.name}() takes 1 argument: {fn.name}(x)")
    arg = node.args[0]
    v = b.expr(arg)
    elem = ir.elem_of(v.type) if not isinstance(v, Weak) else None
    if (elem is None and not isinstance(v.value, float)) or (elem is not None
                                                             and not elem.is_float):
        raise b.fail(node, f"{fn.name}() takes floats, got {type_name(v)} in "
                           f"`{b.seg(node)}`; cast it, e.g. {fn.name}(f32({b.seg(arg)}))")
    if fn.name in _SCALE:
        return b.apply(ir.BinOp.MUL, v, Weak(_SCALE[fn.name]), node, arg, node)
    if fn is lt.recip:
        return b.apply(ir.BinOp.DIV, Weak(1.0), v, node, node, arg)
    if isinstance(v, Weak):
        length: Value = Weak(abs(v.value))
        return length if fn is lt.magnitude else b.apply(ir.BinOp.DIV, v, length, node,
                                                          arg, node)
    # Read once: the value is used twice (a load, a helper's statements).
    held = b.hold(v, node, arg, b.unit.pending)
    assert not isinstance(held, Weak)
    if isinstance(held.type, ir.Line):
        square = b.apply(ir.BinOp.MUL, held, held, node, arg, arg)
        assert not isinstance(square, Weak)
        total = ir.LineReduce(ir.ReduceFn.SUM, square, held.type.elem)
        length = b.derived(ir.Math(ir.MathFn.SQRT, (total,), held.type.elem),
                           b.weak_of(held))
    else:
        length = b.derived(ir.Math(ir.MathFn.ABS, (held,), held.type), b.weak_of(held))
    if fn is lt.magnitude:
        return length
    return b.apply(ir.BinOp.DIV, held, length, node, arg, node)
