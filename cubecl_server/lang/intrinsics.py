"""The kernel language's functions in expressions: :func:`intrinsic` finds, for a
callee, the function that builds its call - casts, ``bitcast``, ``select``, ``len``
and the array queries, the line functions, the plane operations, atomics, the math
functions (:mod:`.mathcalls`) and those composed of other operations
(:mod:`.composed`) - or one that refuses it with a message saying where it belongs.
Each takes the builder, the function called and the call; the table is at the end of
this module.

The effects used as statements (barriers, ``tma_load``, atomics) are built here too;
:mod:`.calls` decides which a call is.
"""

from __future__ import annotations

import ast
import builtins
import copy
from collections.abc import Callable
from typing import Any

from .. import ir
from . import types as lt
from .builder import Builder
from .composed import COMPOSED, composed
from .lanes import per_lane
from .mathcalls import call_math
from .memory import (
    EXAMPLE_DECL,
    array_ref,
    index_into,
    shared_or_param_elem,
    slice_of,
    subscript,
)
from .operations import apply, choose, coerce
from .slices import window_index
from .typerules import TypeRuleError, Value, Weak, concrete, const_of, fold_cast, kind_of
from .uniformity import UniformLoad

__all__ = ["Intrinsic", "atomic", "atomic_value", "intrinsic", "tma_load"]

Intrinsic = Callable[[Builder, Any, ast.Call], Value]
"""What builds the call of a kernel-language function: from the builder, the function
called and the call."""

_ATOMIC_INTS = (ir.Elem.I32, ir.Elem.U32, ir.Elem.I64, ir.Elem.U64)


# ---------------------------------------------------------------- values


def call_cast(b: Builder, t: lt.ScalarType, node: ast.Call) -> Value:
    """``T(x)``: a conversion, folded on constants, elided when ``x`` is a ``T``."""
    if len(node.args) != 1:
        raise b.fail(node, f"the cast {t.name}() takes exactly one argument")
    v = b.expr(node.args[0])
    if t.elem.is_minifloat or (not isinstance(v, Weak) and ir.elem_of(v.type).is_minifloat):
        return minifloat_cast(b, t.elem, v, node)
    if isinstance(v, (Weak, ir.Const)):
        try:
            return fold_cast(v.value, t.elem)
        except TypeRuleError as err:
            b.rule_error(node, err, node.args[0])
    if isinstance(v.type, ir.Line):
        # Per element: a line of the same size.
        line = ir.Line(t.elem, v.type.size)
        return v if v.type is line else ir.Cast(v, line)
    if v.type is t.elem:
        # A cast's value has its type for good: a weak one is copied, not marked.
        return copy.copy(v) if b.weak_of(v) is not None else v
    return ir.Cast(v, t.elem)


def minifloat_cast(b: Builder, elem: ir.Elem, v: Value, node: ast.Call) -> Value:
    """``T(x)`` where ``T`` or ``x`` is a minifloat: through ``f32``, which holds every
    minifloat exactly, so a value is rounded once (from f32, an integer or f16; not
    from f64, which would round twice)."""
    arg = node.args[0]
    f32 = ir.Elem.F32
    if isinstance(v, Weak | ir.Const):
        if isinstance(v.value, bool):
            raise b.fail(node, f"{elem.value}() takes a number, not a bool")
        try:
            v = fold_cast(v.value, f32)
        except TypeRuleError as err:
            b.rule_error(node, err, arg)
    if isinstance(v.type, ir.Line):
        raise b.fail(node, f"lines of minifloats are not built: convert `{b.seg(arg)}` "
                           "one element at a time")
    src = v.type
    if src is elem:
        return v
    if not elem.is_minifloat:
        wide = v if src is f32 else ir.Cast(v, f32)
        return wide if elem is f32 else ir.Cast(wide, elem)
    if src is ir.Elem.F64 or src is ir.Elem.BOOL:
        raise b.fail(node, f"{elem.value}() takes f32, f16, an integer or another "
                           f"minifloat, not {src.value}: write {elem.value}(f32("
                           f"{b.seg(arg)})) to round it to f32 first")
    return ir.Cast(v if src is f32 else ir.Cast(v, f32), elem)


def call_bitcast(b: Builder, fn: object, node: ast.Call) -> Value:
    """``bitcast(x, T)``: ``x``'s bits as ``T``, of the same width; a literal is
    taken at ``T``'s width (a float literal as that float, an int one as that
    unsigned or, when negative, signed integer)."""
    if len(node.args) != 2:
        raise b.fail(node, "bitcast() takes 2 arguments: bitcast(x, T), e.g. "
                           "bitcast(x, u32)")
    x_node, t_node = node.args
    t = b.static_type(t_node)
    if t is None or t.elem in (ir.Elem.BOOL, ir.Elem.F16) or t.elem.is_narrow:
        raise b.fail(t_node, f"the second argument of bitcast() must be one of f32, "
                             f"i32, u32, f64, i64, u64, not `{b.seg(t_node)}`")
    v = b.expr(x_node)
    if isinstance(v, Weak):
        width = t.elem.bits
        if v.kind == "float":
            src = ir.Elem.F32 if width == 32 else ir.Elem.F64
        elif v.kind == "int":
            unsigned = ir.Elem.U32 if width == 32 else ir.Elem.U64
            signed = ir.Elem.I32 if width == 32 else ir.Elem.I64
            src = signed if int(v.value) < 0 else unsigned
        else:
            raise b.fail(x_node, "bitcast() needs a number, got a bool")
        try:
            v = const_of(v, src)
        except TypeRuleError as err:
            b.rule_error(node, err, x_node)
    elem = ir.elem_of(v.type)
    if elem.is_narrow:
        raise b.fail(node, f"bitcast() takes f32, i32, u32, f64, i64 or u64, not "
                           f"{elem.value} `{b.seg(x_node)}`; for the bits of a "
                           f"narrow integer, cast it: {t.name}(...) wraps")
    if elem in (ir.Elem.BOOL, ir.Elem.F16) or elem.bits != t.elem.bits:
        raise b.fail(node, f"bitcast() keeps the width: `{b.seg(x_node)}` is "
                           f"{elem.value} ({elem.bits} bits) and {t.name} has "
                           f"{t.elem.bits}{b.describe_vars(x_node)}")
    if elem is t.elem:
        return v
    if isinstance(v.type, ir.Line):
        # Each lane's bits on their own.
        return per_lane(b, v, lambda e: ir.Bitcast(e, t.elem), t.elem, node, x_node)
    return ir.Bitcast(concrete(v), t.elem)


def call_len(b: Builder, fn: object, node: ast.Call) -> Value:
    """``len(a)`` of an array parameter (u32)."""
    if len(node.args) != 1:
        raise b.fail(node, "len() takes exactly one argument")
    arg = node.args[0]
    if isinstance(arg, ast.Name) and arg.id in b.shared_arrays:
        # A shared array's size is static: its length is a constant.
        return ir.Const(b.shared_arrays[arg.id].size, ir.Elem.U32)
    view = slice_of(b, arg)
    if view is not None:
        return view.length_var
    ref = array_ref(b, arg)
    if ref is not None:
        return ir.Len(ref[0])
    raise b.fail(node, f"len() needs an array parameter or a shared array, not "
                       f"`{b.seg(arg)}`")


def call_buffer_meta(b: Builder, fn: lt.Intrinsic, node: ast.Call) -> Value:
    """``buffer_len(a)`` / ``rank(a)`` of an array parameter (u32); the buffer_len of a
    line array counts lines."""
    arg = node.args[0] if len(node.args) == 1 and not node.keywords else None
    ref = array_ref(b, arg) if arg is not None else None
    p = b.params.get(arg.id) if isinstance(arg, ast.Name) else None
    if ref is None or p is None or not p.array or ref[0] != p.name:
        raise b.fail(node, f"{fn.name}() takes one array parameter: {fn.name}(a)")
    if fn is lt.rank:
        return ir.Rank(p.name)
    n: ir.Expr = ir.BufferLen(p.name)
    if p.line > 1:
        # Lines of the buffer, as len() counts them: the last one may be partial.
        u32, size = ir.Elem.U32, ir.Const(p.line, ir.Elem.U32)
        rest = ir.Binary(ir.BinOp.REM, n, size, u32)
        partial = ir.Select(ir.Binary(ir.BinOp.NE, rest, ir.Const(0, u32), ir.Elem.BOOL),
                            ir.Const(1, u32), ir.Const(0, u32), u32)
        n = ir.Binary(ir.BinOp.ADD, ir.Binary(ir.BinOp.IDIV, n, size, u32), partial, u32)
    return n


def call_line(b: Builder, obj: lt.Intrinsic, node: ast.Call) -> Value:
    """``line(x, n)``, ``line_size(a)``, ``line_sum/min/max(v)``, ``dot(a, b)``."""
    name, args = obj.name, node.args
    arity = 2 if obj in (lt.line, lt.dot) else 1
    if len(args) != arity:
        spelled = {"line": "(x, n)", "dot": "(a, b)"}.get(name, "(v)" if name != "line_size"
                                                          else "(a)")
        raise b.fail(node, f"{name}() takes {arity} argument{'s' * (arity > 1)}: "
                           f"{name}{spelled}")
    if obj is lt.line_size:
        ref = array_ref(b, args[0])
        t = ref[1] if ref is not None else None
        if t is None:
            v = b.expr(args[0])
            t = None if isinstance(v, Weak) else v.type
        return Weak(ir.line_size(t) if t is not None else 1)
    if obj is lt.line:
        n = b.expr(args[1])
        if not isinstance(n, (Weak, ir.Const)) or isinstance(n.value, bool) \
                or n.value not in (1, *ir.LINE_SIZES):
            raise b.fail(args[1], f"the size of line() must be a constant 1, "
                                  f"{', '.join(map(str, ir.LINE_SIZES))} (a literal, "
                                  f"comptime value or line_size(a)), not "
                                  f"`{b.seg(args[1])}`")
        v = b.expr(args[0])
        try:
            x = concrete(v)
        except TypeRuleError as err:
            b.rule_error(node, err, args[0])
        if isinstance(x.type, ir.Line):
            raise b.fail(args[0], f"line() fills a line with one scalar, not a "
                                  f"{x.type.value}")
        return x if n.value == 1 else ir.LineFill(x, ir.Line(x.type, int(n.value)))
    values = [b.expr(a) for a in args]
    if obj is lt.dot:
        v: Value = apply(b, ir.BinOp.MUL, values[0], values[1], node, args[0], args[1])
    else:
        v = values[0]
    if isinstance(v, Weak) or not isinstance(v.type, ir.Line):
        kind = v.kind if isinstance(v, Weak) else kind_of(v.type)
        if kind == "bool":
            raise b.fail(node, f"{name}() needs numbers, got bool in `{b.seg(node)}`")
        return v  # a scalar is a line of one: its own sum, min and max
    if v.type.elem is ir.Elem.BOOL:
        raise b.fail(node, f"{name}() needs numbers, got {v.type.value} in "
                           f"`{b.seg(node)}`")
    fn = {"line_sum": ir.ReduceFn.SUM, "dot": ir.ReduceFn.SUM, "line_min": ir.ReduceFn.MIN,
          "line_max": ir.ReduceFn.MAX}[name]
    return ir.LineReduce(fn, v, v.type.elem)


def uniform_load(b: Builder, fn: object, node: ast.Call) -> Value:
    """``workgroup_uniform_load(tile[i])``: the element read by every unit between two
    barriers, into a local the uniformity analysis knows to be uniform."""
    arg = node.args[0] if len(node.args) == 1 and not node.keywords else None
    if not isinstance(arg, ast.Subscript):
        raise b.fail(node, "workgroup_uniform_load() takes one element of a shared "
                           "array: workgroup_uniform_load(tile[i])")
    array, elem, index = subscript(b, arg)
    if not any(sh.name == array for sh in b.unit.shared):
        raise b.fail(arg, f"workgroup_uniform_load() reads shared memory, and "
                          f"`{b.seg(arg.value)}` is not a shared array or a slice "
                          "of one")
    value = b.temp("uniform", ir.elem_of(elem))
    b.unit.pending.append(UniformLoad(  # type: ignore[arg-type]
     value.name, ir.Load(array, index, elem)))
    return value


# ---------------------------------------------------------------- planes


def call_plane(b: Builder, fn: lt.PlaneIntrinsic, node: ast.Call) -> Value:
    """``plane_<fn>(x)``, and ``plane_broadcast(x, lane)``,
    ``plane_shuffle_xor(x, mask)``, the shuffles; ``all``, ``any``, ``ballot`` of a
    bool; ``plane_elect()``, the unit of lowest position of the ballot of all."""
    if len(node.args) != fn.arity or node.keywords:
        spelled = "(x, lane)" if fn.arity == 2 else "(x)" if fn.arity else "()"
        raise b.fail(node, f"{fn.name}() takes {fn.arity} argument"
                           f"{'s' if fn.arity != 1 else ''}: {fn.name}{spelled}")
    if fn is lt.plane_elect:
        ballot = ir.PlaneOp(ir.PlaneFn.BALLOT, ir.Const(True, ir.Elem.BOOL), None,
                            ir.Elem.U32)
        first = ir.Math(ir.MathFn.TRAILING_ZEROS, (ballot,), ir.Elem.U32)
        return ir.Binary(ir.BinOp.EQ, first, ir.Builtin(ir.BuiltinName.UNIT_POS_PLANE),
                         ir.Elem.BOOL)
    v = b.expr(node.args[0])
    try:
        x = concrete(v)
    except TypeRuleError as err:
        b.rule_error(node, err, node.args[0])
    elem = ir.elem_of(x.type)
    if isinstance(x.type, ir.Line) and fn.fn is ir.PlaneFn.BALLOT:
        raise b.fail(node, f"{fn.name}() takes a bool, not a {x.type.value}: ballot "
                           f"each lane, e.g. {fn.name}({b.seg(node.args[0])}[0])")
    takes_bool = fn.fn in (ir.PlaneFn.ALL, ir.PlaneFn.ANY, ir.PlaneFn.BALLOT)
    with_lane = fn.fn in (ir.PlaneFn.BROADCAST, ir.PlaneFn.SHUFFLE_XOR, ir.PlaneFn.SHUFFLE)
    if takes_bool and elem is not ir.Elem.BOOL:
        raise b.fail(node, f"{fn.name}() needs a bool, got {x.type.value} in "
                           f"`{b.seg(node)}`; compare it, e.g. "
                           f"{fn.name}({b.seg(node.args[0])} > 0)")
    if not takes_bool and not with_lane and elem is ir.Elem.BOOL:
        raise b.fail(node, f"{fn.name}() needs a number, got {x.type.value} in "
                           f"`{b.seg(node)}`")
    if elem.is_narrow:
        raise b.fail(node, f"{fn.name}() takes no 8- or 16-bit integer, got "
                           f"{x.type.value} in `{b.seg(node)}`; cast it, e.g. "
                           f"{fn.name}(i32({b.seg(node.args[0])}))")
    lane: ir.Expr | None = None
    if with_lane:
        lv = b.expr(node.args[1])
        if isinstance(lv, Weak):
            if lv.kind != "int" or int(lv.value) < 0:
                raise b.fail(node.args[1], f"the lane of {fn.name}() must be a "
                                           "non-negative integer")
            try:
                lane = const_of(lv, ir.Elem.U32)
            except TypeRuleError as err:
                b.rule_error(node, err, node.args[1])
        elif not lv.type.is_int:
            raise b.fail(node.args[1], f"the lane of {fn.name}() must be an "
                                       f"integer, got {lv.type.value}")
        else:
            lane = lv
    if fn in (lt.plane_shuffle_up, lt.plane_shuffle_down):
        assert lane is not None
        lane = shift_lane(b, lane, fn is lt.plane_shuffle_up)
    if isinstance(x.type, ir.Line):
        # Each lane across the plane on its own, every lane reading the one lane index.
        if lane is not None and not isinstance(lane, ir.Const | ir.Var | ir.Builtin):
            held = b.temp("lane", ir.elem_of(lane.type))
            b.unit.pending.append(ir.Assign(held.name, lane))
            lane = held
        return per_lane(b, x, lambda e: ir.PlaneOp(fn.fn, e, lane, elem), elem, node,
                        node.args[0])
    return ir.PlaneOp(fn.fn, x, lane,
                      ir.Elem.U32 if fn.fn is ir.PlaneFn.BALLOT else x.type)


def shift_lane(b: Builder, delta: ir.Expr, up: bool) -> ir.Expr:
    """The lane ``plane_shuffle_up``/``down`` by ``delta`` reads: ``delta`` below
    (above) this unit's, or this unit's own where that is outside the plane, so a
    unit with no source keeps its own value (as CUDA's ``__shfl_up_sync``)."""
    u32 = ir.Elem.U32
    if delta.type is not u32:
        delta = ir.Cast(delta, u32)
    if not isinstance(delta, ir.Const | ir.Var | ir.Builtin):
        held = b.temp("delta", u32)
        b.unit.pending.append(ir.Assign(held.name, delta))
        delta = held
    me = ir.Builtin(ir.BuiltinName.UNIT_POS_PLANE)
    if up:
        inside = ir.Binary(ir.BinOp.LE, delta, me, ir.Elem.BOOL)
        source = ir.Binary(ir.BinOp.SUB, me, delta, u32)
    else:
        # `me + delta < PLANE_DIM` without the sum, which could wrap.
        room = ir.Binary(ir.BinOp.SUB, ir.Builtin(ir.BuiltinName.PLANE_DIM), me, u32)
        inside = ir.Binary(ir.BinOp.LT, delta, room, ir.Elem.BOOL)
        source = ir.Binary(ir.BinOp.ADD, me, delta, u32)
    return ir.Select(inside, source, me, u32)


# ---------------------------------------------------------------- effects


def atomic(b: Builder, fn: lt.AtomicIntrinsic, node: ast.Call, result: str | None
           ) -> ir.AtomicStmt:
    """``atomic_<op>(a, i, v)`` (``(a, i, expected, new)`` for compare_exchange,
    ``(a, i)`` for ``atomic_load``)."""
    cas = fn.op is ir.AtomicOp.COMPARE_EXCHANGE
    want = 2 + fn.operands
    if node.keywords or len(node.args) != want:
        spelled = ("(a, i, expected, new)" if cas else "(a, i)" if want == 2
                   else "(a, i, v)")
        raise b.fail(node, f"{fn.name}() takes {want} positional arguments: "
                           f"{fn.name}{spelled}")

    first = node.args[0]
    view = slice_of(b, first)
    ref = array_ref(b, first) if view is None else (view.array, view.elem)
    if ref is None or (view is not None and view.local) or (isinstance(
            first, ast.Name) and isinstance(b.shared_arrays.get(first.id),
                                             ir.LocalArray)):
        raise b.fail(node, f"the first argument of {fn.name}() must be an array "
                           f"parameter or a shared array, not `{b.seg(first)}`")
    array, elem = ref
    float_op = (not cas and fn.op not in (ir.AtomicOp.AND, ir.AtomicOp.OR,
                                          ir.AtomicOp.XOR)) or fn is lt.atomic_load
    ok = elem in _ATOMIC_INTS or (elem is ir.Elem.F32 and float_op)
    if not ok:
        allowed = "i32, u32, i64, u64" + (" or f32" if float_op else "")
        raise b.fail(node, f"{fn.name}() needs an array of {allowed}, but `{array}` "
                           f"holds {elem.value}")
    index = index_into(b, node.args[1], array)
    if view is not None:
        index = window_index(view, index)
    vals = [coerce(b, b.expr(a), elem, node, a, f"`{array}`'s element")
            for a in node.args[2:]] or [ir.Const(0, elem)]  # a load: an OR of 0
    compare = vals[0] if cas else None
    op, value = fn.op, vals[-1]
    if elem is ir.Elem.F32 and fn is lt.atomic_load:
        # x + -0.0 is x for every x (+0.0 included): an f32 load changes nothing.
        op, value = ir.AtomicOp.ADD, ir.Const(-0.0, elem)
    elif elem is ir.Elem.F32 and op is ir.AtomicOp.SUB:
        # IEEE subtraction is the addition of the negation, exactly.
        op, value = ir.AtomicOp.ADD, ir.Unary(ir.UnOp.NEG, value, elem)
    return ir.AtomicStmt(op, array, index, value, compare, result)


def atomic_value(b: Builder, fn: lt.AtomicIntrinsic, node: ast.Call) -> None:
    """Refuse an atomic without a value where its value is used."""
    if not fn.has_value:
        raise b.fail(node, f"{fn.name}() has no value: call it as a statement, "
                           f"`{b.seg(node)}`")


def tma_load(b: Builder, node: ast.Call) -> ir.TensorMapLoad:
    """``tma_load(m, tile, x, ...)``: a tensor-map parameter, a shared array of its
    element type, and one ``i32`` coordinate per dimension."""
    if node.keywords or len(node.args) < 3:
        raise b.fail(node, "tma_load() takes a tensor map, a shared array and one "
                           "coordinate per dimension: tma_load(m, tile, x, y)")
    first, second = node.args[0], node.args[1]
    p = b.params.get(first.id) if isinstance(first, ast.Name) else None
    if p is None or not p.tensor_map:
        raise b.fail(first, f"the first argument of tma_load() must be a TensorMap "
                            f"parameter, not `{b.seg(first)}`")
    sh = (b.shared_arrays.get(second.id) if isinstance(second, ast.Name)
          and second.id not in b.locals else None)
    if not isinstance(sh, ir.SharedArray):
        raise b.fail(second, f"the second argument of tma_load() must be a shared "
                             f"array (`tile = shared({p.elem.value}, n)`), not "
                             f"`{b.seg(second)}`")
    if sh.elem is not p.elem:
        raise b.fail(second, f"tma_load() of `{p.name}` (TensorMap[{p.elem.value}]) "
                             f"into `{second.id}`, which holds {sh.elem.value}")
    coords = tuple(coerce(b, b.expr(a), ir.Elem.I32, node, a,
                             "a tensor map coordinate") for a in node.args[2:])
    return ir.TensorMapLoad(p.name, sh.name, coords)


# ---------------------------------------------------------------- the table


def intrinsic(fn: object) -> Intrinsic | None:
    """What builds a call of ``fn`` in an expression, or None when ``fn`` is no
    kernel-language function (or one with no value: see :func:`~.calls.expr_Call`)."""
    entry = _BY_OBJECT.get(id(fn))
    if entry is not None and entry[0] is fn:
        return entry[1]
    for kind, build in _BY_KIND:
        if isinstance(fn, kind):
            return build
    return None


def _atomic_value(b: Builder, fn: lt.AtomicIntrinsic, node: ast.Call) -> Value:
    """An atomic inside a larger expression: it runs first, into a fresh local."""
    atomic_value(b, fn, node)
    st = atomic(b, fn, node, None)
    tmp = b.temp(f"{fn.name}_old", shared_or_param_elem(b, st.array))
    b.unit.pending.append(ir.AtomicStmt(st.op, st.array, st.index, st.value, st.compare,
                                        tmp.name))
    return tmp


def _select(b: Builder, fn: lt.Intrinsic, node: ast.Call) -> Value:
    """``select(cond, a, b)``: ``a if cond else b``, per element on lines."""
    if len(node.args) != 3:
        raise b.fail(node, "select() takes 3 arguments: select(cond, a, b)")
    return choose(b, node, *node.args)


def _python_math(b: Builder, fn: object, node: ast.Call) -> Value:
    """``abs``, ``min`` and ``max`` of Python: the language's."""
    return call_math(b, _PY_BUILTIN_MATH[fn], node)


# The refusals: functions with no value, and Python's that mean something else here.


def _statement(b: Builder, fn: lt.Intrinsic, node: ast.Call) -> Value:
    raise b.fail(node, f"{fn.name}() is a statement: it has no value")


def _declaration(b: Builder, fn: lt.Intrinsic, node: ast.Call) -> Value:
    raise b.fail(node, f"{fn.name}() must be the whole right-hand side of an "
                       f"assignment: `{EXAMPLE_DECL[fn.name]}`")


def _range(b: Builder, fn: object, node: ast.Call) -> Value:
    raise b.fail(node, "range() can only be used as the iterable of a `for` loop")


def _python_cast(b: Builder, fn: object, node: ast.Call) -> Value:
    raise b.fail(node, f"`{b.seg(node.func)}()` is not a kernel cast: use i32(x), "
                       "f32(x), bool_(x) or another kernel type")


_PY_BUILTIN_MATH: dict[object, lt.MathIntrinsic] = {
    builtins.abs: lt.abs, builtins.min: lt.min, builtins.max: lt.max,
}
_BY_FUNCTION: tuple[tuple[tuple[object, ...], Intrinsic], ...] = (
    ((lt.select,), _select),
    ((lt.bitcast,), call_bitcast),
    ((builtins.len,), call_len),
    ((lt.buffer_len, lt.rank), call_buffer_meta),
    ((lt.line, lt.line_size, lt.line_sum, lt.line_min, lt.line_max, lt.dot), call_line),
    ((lt.workgroup_uniform_load,), uniform_load),
    (tuple(_PY_BUILTIN_MATH), _python_math),
    (COMPOSED, composed),
    ((lt.sync_cube, lt.sync_plane), _statement),
    ((lt.shared, lt.local_array), _declaration),
    ((builtins.range,), _range),
    ((builtins.int, builtins.float, builtins.bool), _python_cast),
)
# By identity: a callee may be any object, and some compare to anything (NumPy arrays).
_BY_OBJECT: dict[int, tuple[object, Intrinsic]] = {
    id(fn): (fn, build) for fns, build in _BY_FUNCTION for fn in fns}
_BY_KIND: tuple[tuple[type, Intrinsic], ...] = (
    (lt.AtomicIntrinsic, _atomic_value),
    (lt.PlaneIntrinsic, call_plane),
    (lt.ScalarType, call_cast),
    (lt.MathIntrinsic, call_math),
)
