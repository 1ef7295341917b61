"""Operations on values, with the typing rules: binary and unary operators, a value
converted to the type a place needs (:func:`coerce`), scalars filled to lines
(:func:`lift`), ``a if c else b`` and ``select`` (:func:`choose`), and conditions.

The rules themselves, free of any AST, are :mod:`.typerules`'; these functions apply
them to the values of a function being built, make weak values meet typed ones, and
phrase the errors with the code's own text.
"""

from __future__ import annotations

import ast

from .. import ir
from .builder import Builder
from .typerules import (
    Mismatch,
    TypeRuleError,
    Value,
    Weak,
    check_binary,
    check_pow,
    concrete,
    const_of,
    fold_binary,
    kind_of,
    type_name,
    unify,
)

__all__ = ["apply", "as_bool_condition", "binary", "choose", "coerce", "constant_bool",
           "lift", "lift_pair", "line_type", "power"]

_BINOPS: dict[type[ast.AST], ir.BinOp] = {
    ast.Add: ir.BinOp.ADD, ast.Sub: ir.BinOp.SUB, ast.Mult: ir.BinOp.MUL,
    ast.Div: ir.BinOp.DIV, ast.FloorDiv: ir.BinOp.IDIV, ast.Mod: ir.BinOp.REM,
    ast.BitAnd: ir.BinOp.BITAND, ast.BitOr: ir.BinOp.BITOR, ast.BitXor: ir.BinOp.BITXOR,
    ast.LShift: ir.BinOp.SHL, ast.RShift: ir.BinOp.SHR,
}


def binary(b: Builder, op_node: ast.operator, lhs: Value, rhs: Value, node: ast.AST,
           lnode: ast.AST, rnode: ast.AST) -> Value:
    """``lhs op rhs`` for an arithmetic/bitwise operator of the AST."""
    if isinstance(op_node, ast.Pow):
        return power(b, lhs, rhs, node, lnode, rnode)
    op = _BINOPS.get(type(op_node))
    if op is None:
        raise b.fail(node, f"the operator in `{b.seg(node)}` is not supported in "
                           "kernels")
    return apply(b, op, lhs, rhs, node, lnode, rnode)


def apply(b: Builder, op: ir.BinOp, lhs: Value, rhs: Value, node: ast.AST, lnode: ast.AST,
          rnode: ast.AST) -> Value:
    """``lhs op rhs`` with the typing rules, folding constants."""
    for v, n in ((lhs, lnode), (rhs, rnode)):
        if not isinstance(v, Weak) and ir.elem_of(v.type).is_minifloat:
            raise b.fail(node, f"`{op.value}` does not take {v.type.value} "
                               f"`{b.seg(n)}`: a minifloat is only loaded, stored and "
                               f"converted; convert it first, e.g. f32({b.seg(n)})")
    line = line_type(b, (lhs, rhs), node)
    if line is not None:
        if op in (ir.BinOp.AND, ir.BinOp.OR):
            raise b.fail(node, f"`{op.value}` takes bools, not lines, in "
                               f"`{b.seg(node)}`: use select() per element")
        x, y = lift_pair(b, lhs, rhs, line, node, lnode, rnode)
        try:
            check_binary(op, kind_of(line.elem), line.value)
        except TypeRuleError as err:
            b.rule_error(node, err, lnode, rnode)
        result = ir.Line(ir.Elem.BOOL, line.size) if op.is_comparison else line
        return ir.Binary(op, x, y, result)
    b.meet_pair(lhs, rhs, node)
    try:
        if isinstance(lhs, Weak) and isinstance(rhs, Weak):
            unify(lhs, rhs)
            return fold_binary(op, lhs, rhs)
        x, y = unify(lhs, rhs)
        assert not isinstance(x, Weak) and not isinstance(y, Weak)
        check_binary(op, kind_of(x.type), x.type.value)
    except TypeRuleError as err:
        b.rule_error(node, err, lnode, rnode)
    if op in (ir.BinOp.AND, ir.BinOp.OR):
        # Expressions have no effects, so a constant side decides or vanishes.
        for const, other in ((x, y), (y, x)):
            if isinstance(const, ir.Const):
                if bool(const.value) == (op is ir.BinOp.AND):
                    return other
                return ir.Const(op is ir.BinOp.OR, ir.Elem.BOOL)
    result = ir.Elem.BOOL if op.is_comparison else x.type
    return b.derived(ir.Binary(op, x, y, result), b.weak_of(lhs) or b.weak_of(rhs))


def power(b: Builder, lhs: Value, rhs: Value, node: ast.AST, lnode: ast.AST,
          rnode: ast.AST) -> Value:
    """``lhs ** rhs``: folds on constants, MathFn.POW on floats."""
    line = line_type(b, (lhs, rhs), node)
    if line is not None:
        x, y = lift_pair(b, lhs, rhs, line, node, lnode, rnode)
        try:
            check_pow(kind_of(line.elem), line.value)
        except TypeRuleError as err:
            b.rule_error(node, err, lnode, rnode)
        return ir.Math(ir.MathFn.POW, (x, y), line)
    if not isinstance(rhs, Weak) and rhs.type.is_int and (
            isinstance(lhs.value, float) if isinstance(lhs, Weak) else lhs.type.is_float):
        # A float to a typed integer power: pow() takes two floats, powi() this.
        raise b.fail(node, f"`**` of a float by an integer ({rhs.type.value}) in "
                           f"`{b.seg(node)}`{b.describe_vars(node)}: use "
                           f"powi({b.seg(lnode)}, {b.seg(rnode)}), or cast the "
                           f"exponent to the base's type for pow()")
    b.meet_pair(lhs, rhs, node)
    try:
        if isinstance(lhs, Weak) and isinstance(rhs, Weak):
            unify(lhs, rhs)
            return fold_binary(None, lhs, rhs)
        x, y = unify(lhs, rhs)
        assert not isinstance(x, Weak) and not isinstance(y, Weak)
        check_pow(kind_of(x.type), x.type.value)
    except TypeRuleError as err:
        b.rule_error(node, err, lnode, rnode)
    return b.derived(ir.Math(ir.MathFn.POW, (x, y), x.type),
                     b.weak_of(lhs) or b.weak_of(rhs))


def coerce(b: Builder, value: Value, elem: ir.Type, node: ast.AST, value_node: ast.AST,
           what: str) -> ir.Expr:
    """``value`` as an expression of ``elem``: a weak one adopts it, others must match
    (a line is filled from a scalar of its element type)."""
    if isinstance(elem, ir.Line):
        return lift(b, value, elem, node, (value_node,))
    b.meet(value, elem, node)
    if isinstance(value, Weak):
        try:
            return const_of(value, elem)
        except TypeRuleError as err:
            if isinstance(err, Mismatch):
                raise b.fail(node, f"{what} is {elem.value} but this assigns "
                                   f"{type_name(value)} `{b.seg(value_node)}`"
                             ) from None
            b.rule_error(node, err, value_node)
    if value.type is not elem:
        raise b.fail(node, f"{what} is {elem.value} but this assigns "
                           f"{value.type.value}{b.describe_vars(value_node)}; cast "
                           f"the value, e.g. {elem.value}({b.seg(value_node)})")
    return value


def as_bool_condition(b: Builder, node: ast.expr, what: str, line_ok: bool = False) -> Value:
    """Evaluate a condition: bool (weak or concrete), never a number's truthiness; a
    line of bools where ``line_ok`` (``select``)."""
    v = b.expr(node)
    if not line_ok and not isinstance(v, Weak) and isinstance(v.type, ir.Line):
        raise b.fail(node, f"the condition of {what} is a {v.type.value}, one bool "
                           f"per element: reduce it first, or use "
                           f"select({b.seg(node)}, a, b) per element")
    kind = v.kind if isinstance(v, Weak) else kind_of(v.type)
    if kind != "bool":
        raise b.fail(node, f"the condition of {what} must be bool, got "
                           f"{type_name(v)} in `{b.seg(node)}`"
                           f"{b.describe_vars(node)}; compare explicitly, "
                           f"e.g. `{b.seg(node)} != 0`")
    return v


def constant_bool(v: Value) -> bool | None:
    """The value of a constant condition, None when it is known only at run time."""
    if isinstance(v, Weak):
        return bool(v.value)
    if isinstance(v, ir.Const):
        return bool(v.value)
    return None


def choose(b: Builder, node: ast.AST, cond_node: ast.expr, a_node: ast.expr,
           b_node: ast.expr) -> Value:
    """``a if cond else b`` as a Select, or the taken side for a constant cond."""
    cond = as_bool_condition(b, cond_node, f"`{b.seg(node)}`", line_ok=True)
    x, y = b.expr(a_node), b.expr(b_node)
    cond_line = None if isinstance(cond, Weak) or not isinstance(cond.type, ir.Line) \
        else cond.type
    line = line_type(b, (x, y), node)
    if line is not None or cond_line is not None:
        return choose_lines(b, node, cond, cond_line, line, (x, y), (a_node, b_node))
    b.meet_pair(x, y, node)
    root = b.weak_of(x) or b.weak_of(y)
    try:
        x, y = unify(x, y)
    except Mismatch as m:
        b.mismatch(node, m, a_node, b_node)
    known = constant_bool(cond)
    if known is not None:
        return x if known else y
    if isinstance(x, Weak) and isinstance(y, Weak):
        # Both weak: promote int to float like arithmetic does, then default types.
        if "float" in (x.kind, y.kind):
            x, y = Weak(float(x.value)), Weak(float(y.value))
        try:
            x, y = concrete(x), concrete(y)
        except TypeRuleError as err:
            b.rule_error(node, err, a_node, b_node)
    assert not isinstance(x, Weak) and not isinstance(y, Weak)
    assert not isinstance(cond, Weak)
    return b.derived(ir.Select(cond, x, y, x.type), root)


def choose_lines(b: Builder, node: ast.AST, cond: Value, cond_line: ir.Line | None,
                 line: ir.Line | None, sides: tuple[Value, Value],
                 nodes: tuple[ast.expr, ast.expr]) -> Value:
    """``select`` where the condition or a side is a line: per element where the
    condition is a line of bools (the sides filled to its size), else the whole
    line."""
    x, y = sides
    if line is None:
        assert cond_line is not None
        b.meet_pair(x, y, node)
        try:
            sa, sb = unify(x, y)
            if isinstance(sa, Weak) and isinstance(sb, Weak) and "float" in (sa.kind,
                                                                             sb.kind):
                sa, sb = Weak(float(sa.value)), Weak(float(sb.value))
            elem = concrete(sa).type
        except Mismatch as m:
            b.mismatch(node, m, *nodes)
        except TypeRuleError as err:
            b.rule_error(node, err, *nodes)
        line = ir.Line(ir.elem_of(elem), cond_line.size)
    if cond_line is not None and cond_line.size != line.size:
        raise b.fail(node, f"the condition of `{b.seg(node)}` is a "
                           f"{cond_line.value}, but the sides are lines of {line.size}")
    x, y = lift_pair(b, x, y, line, node, *nodes)
    known = constant_bool(cond)
    if known is not None:
        return x if known else y
    assert not isinstance(cond, Weak)
    return ir.Select(cond, x, y, line)


# ---------------------------------------------------------------- lines


def line_type(b: Builder, values: tuple[Value, ...] | list[Value], node: ast.AST
              ) -> ir.Line | None:
    """The line type of the first of ``values`` that is a line (all lines among
    them must have one size), or None when none is."""
    lines = [v.type for v in values
             if not isinstance(v, Weak) and isinstance(v.type, ir.Line)]
    if not lines:
        return None
    if len({t.size for t in lines}) > 1:
        raise b.fail(node, f"lines of different sizes in `{b.seg(node)}` ("
                           f"{', '.join(t.value for t in lines)}); an operation "
                           "takes lines of one size")
    return lines[0]


def lift(b: Builder, v: Value, line: ir.Line, node: ast.AST, nodes: tuple[ast.AST, ...],
         other: Value | None = None, second: bool = False) -> ir.Expr:
    """``v`` as a value of ``line``: a line must be one already; a scalar of its
    element type (a literal taking it) fills one. ``other`` is the operand ``v``
    meets (``v`` is the ``second`` one), for a mismatch's message."""
    if not isinstance(v, Weak) and isinstance(v.type, ir.Line):
        if v.type is line:
            return v
    elif isinstance(v, Weak):
        try:
            return ir.LineFill(const_of(v, line.elem), line)
        except Mismatch:
            pass
        except TypeRuleError as err:
            b.rule_error(node, err, *nodes)
    else:
        b.meet(v, line.elem, node)
        if v.type is line.elem:
            return ir.LineFill(v, line)
    names = [type_name(v), line.value if other is None else type_name(other)]
    if second:
        names.reverse()
    b.mismatch(node, Mismatch(names[0], names[1], line.elem), *nodes)


def lift_pair(b: Builder, lhs: Value, rhs: Value, line: ir.Line, node: ast.AST,
              lnode: ast.AST, rnode: ast.AST) -> tuple[ir.Expr, ir.Expr]:
    """Both operands of ``node`` as values of ``line``."""
    return (lift(b, lhs, line, node, (lnode, rnode), rhs),
            lift(b, rhs, line, node, (lnode, rnode), lhs, second=True))
