"""Calls of the kernel language's math functions (``exp(x)``, ``min(a, b, c)``,
``powi(x, n)``, the bit functions...), each an :class:`ir.MathFn`, typed by its kind:
numeric (any number), integral (integers) or float; per element on lines.
"""

from __future__ import annotations

import ast
import builtins

from .. import ir
from . import types as lt
from .builder import Builder
from .operations import coerce, lift, line_type
from .typerules import Mismatch, TypeRuleError, Value, Weak, const_of, kind_of, type_name

__all__ = ["call_math"]

_NUMERIC_MATH = (ir.MathFn.ABS, ir.MathFn.MIN, ir.MathFn.MAX, ir.MathFn.CLAMP, ir.MathFn.SIGN)
_INT_MATH = (ir.MathFn.COUNT_ONES, ir.MathFn.REVERSE_BITS, ir.MathFn.LEADING_ZEROS,
             ir.MathFn.TRAILING_ZEROS, ir.MathFn.FIND_FIRST_SET, ir.MathFn.MUL_HI,
             ir.MathFn.SATURATING_ADD, ir.MathFn.SATURATING_SUB)
_COUNTING_MATH = (ir.MathFn.COUNT_ONES, ir.MathFn.LEADING_ZEROS, ir.MathFn.TRAILING_ZEROS,
                  ir.MathFn.FIND_FIRST_SET)


def call_math(b: Builder, fn: lt.MathIntrinsic, node: ast.Call) -> Value:
    """A math function call, typed by the rules of its :class:`ir.MathFn`."""
    n = len(node.args)
    if (fn.variadic and n < fn.arity) or (not fn.variadic and n != fn.arity):
        count = f"at least {fn.arity}" if fn.variadic else str(fn.arity)
        raise b.fail(node, f"{fn.name}() takes {count} argument"
                           f"{'s' if fn.arity != 1 else ''}, got {n}")
    if fn.fn is ir.MathFn.POWI:
        return call_powi(b, fn, node)
    values = [b.expr(a) for a in node.args]
    line = line_type(b, values, node)
    if line is not None:
        return math_on_lines(b, fn, values, line, node)
    # The arguments meet one another: a typed one, if any, gives weak ones its type.
    typed = [v for v in values if not isinstance(v, Weak)]
    if typed:
        pivot = next((v for v in typed if b.weak_of(v) is None), typed[0])
        for v in typed:
            b.meet_pair(pivot, v, node)
    elem: ir.Elem | None = None
    for v in values:
        if not isinstance(v, Weak):
            if elem is not None and v.type is not elem:
                m = Mismatch(elem.value, v.type.value, elem)
                b.mismatch(node, m, *node.args)
            elem = v.type
    numeric, integral = fn.fn in _NUMERIC_MATH, fn.fn in _INT_MATH
    if elem is None:
        kinds = {v.kind for v in values if isinstance(v, Weak)}
        if "bool" in kinds:
            raise b.fail(node, f"{fn.name}() needs numbers, got a bool in "
                               f"`{b.seg(node)}`")
        if numeric and kinds == {"int"}:
            return Weak(_fold_int_math(fn.fn, [int(v.value) for v in values
                                               if isinstance(v, Weak)]))
        if integral and "float" in kinds:
            raise b.fail(node, f"{fn.name}() needs integers, got a float literal in "
                               f"`{b.seg(node)}`")
        if not numeric and not integral and "int" in kinds:
            raise b.fail(node, f"{fn.name}() needs float arguments, got an int literal "
                               f"in `{b.seg(node)}`; write a float literal such as "
                               "2.0")
        # Bits depend on the width: a literal's are an i32's, as everywhere else.
        elem = ir.Elem.I32 if integral else ir.Elem.F32
    args: list[ir.Expr] = []
    for v, a in zip(values, node.args, strict=True):
        if isinstance(v, Weak):
            try:
                args.append(const_of(v, elem))
            except TypeRuleError as err:
                if isinstance(err, Mismatch):
                    raise b.fail(node, f"type mismatch in `{b.seg(node)}`: "
                                       f"{type_name(v)} `{b.seg(a)}` vs {elem.value}"
                                       f"{b.describe_vars(*node.args)}") from None
                b.rule_error(node, err, a)
        else:
            args.append(v)
    if elem is ir.Elem.BOOL:
        raise b.fail(node, f"{fn.name}() needs numbers, got bool in "
                           f"`{b.seg(node)}`{b.describe_vars(*node.args)}")
    if integral and not elem.is_int:
        raise b.fail(node, f"{fn.name}() needs integers, got {elem.value} in "
                           f"`{b.seg(node)}`{b.describe_vars(*node.args)}")
    if integral and elem.is_narrow:
        raise b.fail(node, f"{fn.name}() takes i32, u32, i64 or u64, not {elem.value}, "
                           f"in `{b.seg(node)}`{b.describe_vars(*node.args)}; "
                           f"cast it, e.g. {fn.name}(u32({b.seg(node.args[0])}))")
    if not numeric and not integral and not elem.is_float:
        raise b.fail(node, f"{fn.name}() needs floats, got {elem.value} in "
                           f"`{b.seg(node)}`{b.describe_vars(*node.args)}; cast "
                           f"the argument, e.g. {fn.name}(f32({b.seg(node.args[0])}))")
    result = (ir.Elem.BOOL if fn.fn in (ir.MathFn.ISNAN, ir.MathFn.ISINF)
              else ir.Elem.U32 if fn.fn in _COUNTING_MATH else elem)
    root = next((r for r in map(b.weak_of, typed) if r is not None), None)
    if fn.variadic and len(args) > 2:
        acc: ir.Expr = args[0]
        for nxt in args[1:]:
            acc = ir.Math(fn.fn, (acc, nxt), result)
        return b.derived(acc, root)
    return b.derived(ir.Math(fn.fn, tuple(args), result), root)


def math_on_lines(b: Builder, fn: lt.MathIntrinsic, values: list[Value], line: ir.Line,
                  node: ast.Call) -> Value:
    """A math function of lines, per element (scalars filled to the line)."""
    args = [lift(b, v, line, node, tuple(node.args)) for v in values]
    elem, kind = line.elem, kind_of(line.elem)
    if kind == "bool":
        raise b.fail(node, f"{fn.name}() needs numbers, got {line.value} in "
                           f"`{b.seg(node)}`")
    if fn.fn in _INT_MATH and kind != "int":
        raise b.fail(node, f"{fn.name}() needs integers, got {line.value} in "
                           f"`{b.seg(node)}`")
    if fn.fn not in _INT_MATH and fn.fn not in _NUMERIC_MATH and kind != "float":
        raise b.fail(node, f"{fn.name}() needs floats, got {line.value} in "
                           f"`{b.seg(node)}`; cast the argument, e.g. "
                           f"{fn.name}(f32({b.seg(node.args[0])}))")
    result_elem = (ir.Elem.BOOL if fn.fn in (ir.MathFn.ISNAN, ir.MathFn.ISINF)
                   else ir.Elem.U32 if fn.fn in _COUNTING_MATH else elem)
    result = ir.Line(result_elem, line.size)
    acc: ir.Expr = args[0]
    if fn.variadic and len(args) > 2:
        for nxt in args[1:]:
            acc = ir.Math(fn.fn, (acc, nxt), result)
        return acc
    return ir.Math(fn.fn, tuple(args), result)


def call_powi(b: Builder, fn: lt.MathIntrinsic, node: ast.Call) -> Value:
    """``powi(x, n)``: a float ``x`` (a literal one is f32) to an integer power
    ``n``, taken as ``i32``."""
    if len(node.args) != 2:
        raise b.fail(node, f"powi() takes 2 arguments, got {len(node.args)}")
    x_node, n_node = node.args
    x = b.expr(x_node)
    n_value = b.expr(n_node)
    line = line_type(b, (x, n_value), node)
    if line is not None:
        xt = ir.Line(ir.Elem.F32 if isinstance(x, Weak) else ir.elem_of(x.type), line.size)
        if not xt.elem.is_float:
            raise b.fail(x_node, f"powi() needs a float base, got {type_name(x)}")
        xl = lift(b, x, xt, node, (x_node,))
        nl = lift(b, n_value, ir.Line(ir.Elem.I32, line.size), node, (n_node,))
        return ir.Math(fn.fn, (xl, nl), xt)
    if isinstance(x, Weak):
        if x.kind != "float":
            raise b.fail(x_node, f"powi() needs a float base, got `{b.seg(x_node)}`; "
                                 "write a float literal such as 2.0")
        x = const_of(x, ir.Elem.F32)
    if not x.type.is_float:
        raise b.fail(x_node, f"powi() needs a float base, got {x.type.value} "
                             f"`{b.seg(x_node)}`{b.describe_vars(x_node)}")
    n = coerce(b, n_value, ir.Elem.I32, node, n_node, "powi()'s exponent")
    return b.derived(ir.Math(fn.fn, (x, n), x.type), b.weak_of(x))


def _fold_int_math(fn: ir.MathFn, xs: list[int]) -> int:
    if fn is ir.MathFn.ABS:
        return builtins.abs(xs[0])
    if fn is ir.MathFn.SIGN:
        return (xs[0] > 0) - (xs[0] < 0)
    if fn is ir.MathFn.MIN:
        return builtins.min(xs)
    if fn is ir.MathFn.MAX:
        return builtins.max(xs)
    x, lo, hi = xs
    return builtins.min(builtins.max(x, lo), hi)
