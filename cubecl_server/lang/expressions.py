"""Expressions of the kernel language: :data:`EXPRESSIONS` has, for each kind of AST
expression the language has, the function that evaluates it to a typed IR expression
or a weak constant (:class:`~.typerules.Weak`); :data:`UNSUPPORTED_EXPRS` names the
others for the error message.
"""

from __future__ import annotations

import ast
import enum
import itertools
from collections.abc import Callable
from typing import Any

from .. import ir
from ..errors import KernelSyntaxError
from .builder import NOT_FOUND, Builder
from .calls import expr_Call
from .lanes import lane_choice, lane_of
from .memory import array_kind, array_ref, shape_or_stride, slice_of, subscript
from .operations import apply, binary, choose, constant_bool
from .typerules import TypeRuleError, Value, Weak, check_unary, fold_unary, kind_of

__all__ = ["EXPRESSIONS", "UNSUPPORTED_EXPRS", "read_name"]

_CMPOPS: dict[type[ast.AST], ir.BinOp] = {
    ast.Eq: ir.BinOp.EQ, ast.NotEq: ir.BinOp.NE, ast.Lt: ir.BinOp.LT,
    ast.LtE: ir.BinOp.LE, ast.Gt: ir.BinOp.GT, ast.GtE: ir.BinOp.GE,
}
_UNOPS: dict[type[ast.AST], ir.UnOp] = {
    ast.USub: ir.UnOp.NEG, ast.Not: ir.UnOp.NOT, ast.Invert: ir.UnOp.BITNOT,
}


def expr_Constant(b: Builder, node: ast.Constant) -> Value:
    v = node.value
    if isinstance(v, (bool, int, float)):
        return Weak(v)
    if v is None or v is Ellipsis:
        raise b.fail(node, f"`{b.seg(node)}` is not supported in kernels")
    what = {str: "string constants", bytes: "bytes constants",
            complex: "complex numbers"}.get(type(v), "such constants")
    raise b.fail(node, f"{what} are not supported in kernels")


def expr_Name(b: Builder, node: ast.Name) -> Value:
    return read_name(b, node.id, node)


def read_name(b: Builder, name: str, node: ast.AST) -> Value:
    """The value of the variable, parameter or global ``name``."""
    if name in b.locals:
        if name in b.assigned and not b.flow.is_assigned(name):
            raise b.fail(node, b.flow.unassigned(name))
        info = b.locals[name]
        var = ir.Var(info.ir_name, info.elem)
        if info.ir_name in b.unit.weak:
            return b.derived(var, b.unit.weak.find(info.ir_name))
        return var
    if name in b.slices:
        raise b.fail(node, f"slice `{name}` can only be indexed (`{name}[i]`), sliced, "
                           "passed to len(), to an atomic or to a cube_fn")
    if name in b.shared_arrays:
        raise b.fail(node, f"{array_kind(b.shared_arrays[name])} `{name}` can only be "
                           f"indexed (`{name}[i]`), passed to len() or to a cube_fn")
    if name in b.comptime_types:
        raise b.fail(node, f"`{name}` is a comptime dtype (a type): call it to cast, "
                           f"e.g. {name}(x)")
    p = b.params.get(name)
    if p is not None:
        if p.array:
            raise b.fail(node, f"array `{name}` can only be indexed (`{name}[i]`) or "
                               f"passed to len()")
        if p.tensor_map:
            raise b.fail(node, f"tensor map `{name}` can only be passed to "
                               "tma_load()")
        return ir.Var(name, p.elem)
    if name in b.comptime:
        v = b.comptime[name]
        if isinstance(v, int) and isinstance(v, enum.Enum):
            return Weak(int(v))  # an IntEnum's member is an int
        if isinstance(v, enum.Enum):
            raise b.fail(node, f"`{name}` is a comptime {type(v).__name__}: compare it with "
                               f"a member (`if {name} == {type(v).__name__}."
                               f"{v.name}:`), which decides at compile time")
        return Weak(v)
    if name in b.assigned:
        raise b.fail(node, f"local variable `{name}` is read before it is assigned")
    obj = b.lookup(name)
    if obj is NOT_FOUND:
        raise b.undefined(node, name)
    assert isinstance(node, ast.expr)
    return b.value_of_object(obj, node)


def expr_Attribute(b: Builder, node: ast.Attribute) -> Value:
    if node.attr in ("shape", "stride") and array_ref(b, node.value) is not None:
        raise b.fail(node, f"`{b.seg(node)}` must be indexed with a constant "
                           f"dimension, e.g. `{b.seg(node)}[0]`")
    return b.value_of_object(b.static(node), node)


def expr_Subscript(b: Builder, node: ast.Subscript) -> Value:
    base = node.value
    if isinstance(base, ast.Attribute) and base.attr in ("shape", "stride"):
        return shape_or_stride(b, base, node)
    if array_ref(b, base) is None and not isinstance(base, ast.Call) \
            and not (isinstance(base, ast.Name) and base.id in b.params) \
            and slice_of(b, base) is None:
        v = b.expr(base)
        if (not isinstance(v, Weak) and isinstance(v.type, ir.Line)) or b.unit.has_lines:
            return element(b, v, node)
    array, elem, index = subscript(b, node)
    return ir.Load(array, index, elem)


def element(b: Builder, v: Value, node: ast.Subscript) -> Value:
    """``v[k]``: lane ``k`` of a line, a constant or chosen at run time
    (:mod:`.lanes`); a scalar is a line of one."""
    if isinstance(node.slice, ast.Slice):
        raise b.fail(node, f"`{b.seg(node.value)}` is a line: take one lane, `v[k]`, not "
                           "a slice")
    size = v.type.size if not isinstance(v, Weak) and isinstance(v.type, ir.Line) else 1
    k = lane_choice(b, b.expr(node.slice), size, node)
    if not isinstance(k, int):
        return lane_of(b, v, k, node, node.value)
    if isinstance(v, Weak) or not isinstance(v.type, ir.Line):
        return v
    if isinstance(v, ir.LineFill):
        return v.x
    return ir.LineElement(v, k, v.type.elem)


def expr_BinOp(b: Builder, node: ast.BinOp) -> Value:
    lhs = b.expr(node.left)
    rhs = b.expr(node.right)
    return binary(b, node.op, lhs, rhs, node, node.left, node.right)


def expr_UnaryOp(b: Builder, node: ast.UnaryOp) -> Value:
    v = b.expr(node.operand)
    if isinstance(node.op, ast.UAdd):
        kind = v.kind if isinstance(v, Weak) else kind_of(v.type)
        if kind == "bool":
            raise b.fail(node, f"unary `+` needs a number, got bool in "
                               f"`{b.seg(node)}`")
        return v
    op = _UNOPS[type(node.op)]
    try:
        if isinstance(v, Weak):
            return fold_unary(op, v)
        check_unary(op, kind_of(v.type), v.type.value)
        if isinstance(v.type, ir.Line):
            return ir.Unary(op, v, v.type)
    except TypeRuleError as err:
        b.rule_error(node, err, node.operand)
    if op is ir.UnOp.NOT and isinstance(v, ir.Const):
        return ir.Const(not v.value, ir.Elem.BOOL)
    return b.derived(ir.Unary(op, v, v.type), b.weak_of(v))


def expr_Compare(b: Builder, node: ast.Compare) -> Value:
    operands = [node.left, *node.comparators]
    members = [static_member(b, n) for n in operands]
    if any(isinstance(m, enum.Enum) and not isinstance(m, int) for m in members):
        return compare_members(b, node, members)
    values = [b.expr(n) for n in operands]
    result: Value | None = None
    for i, op_node in enumerate(node.ops):
        op = _CMPOPS.get(type(op_node))
        if op is None:
            raise b.fail(node, f"`{type(op_node).__name__}` comparisons (`is`, `in`) "
                               "are not supported in kernels")
        # Each link is reported on its own text: `a < b` of `a < b < c`.
        link = node if len(node.ops) == 1 else _span(operands[i], operands[i + 1])
        cmp = apply(b, op, values[i], values[i + 1], link, operands[i], operands[i + 1])
        result = cmp if result is None else apply(
            b, ir.BinOp.AND, result, cmp, node, node, node)
    assert result is not None
    return result


def static_member(b: Builder, node: ast.expr) -> enum.Enum | None:
    """The enum member ``node`` is at compile time (a comptime enum parameter,
    ``Mode.FAST``), or None."""
    if isinstance(node, ast.Name) and node.id in b.comptime:
        v = b.comptime[node.id]
        return v if isinstance(v, enum.Enum) else None
    if not isinstance(node, ast.Name | ast.Attribute) or (
            isinstance(node, ast.Name) and (node.id in b.locals or node.id in b.params)):
        return None
    try:
        obj = b.static(node)
    except KernelSyntaxError:
        return None
    return obj if isinstance(obj, enum.Enum) else None


def compare_members(b: Builder, node: ast.Compare, members: list[enum.Enum | None]) -> Value:
    """``MODE == Mode.FAST`` (``!=``, ``is``, ``is not``) of enum members: decided at
    compile time, a bool constant."""
    result = True
    for i, op_node in enumerate(node.ops):
        lhs, rhs = members[i], members[i + 1]
        if lhs is None or rhs is None:
            other = [node.left, *node.comparators][i if lhs is None else i + 1]
            raise b.fail(node, f"`{b.seg(other)}` is compared with an enum member, and "
                               "is not one: a comptime enum is compared with members "
                               "(`MODE == Mode.FAST`)")
        if isinstance(op_node, ast.Eq | ast.Is):
            result = result and lhs is rhs
        elif isinstance(op_node, ast.NotEq | ast.IsNot):
            result = result and lhs is not rhs
        else:
            raise b.fail(node, f"enum members are compared with ==, !=, is or is not, "
                               f"not in `{b.seg(node)}`")
    return Weak(result)


def _span(first: ast.expr, last: ast.expr) -> ast.AST:
    """A node covering ``first`` through ``last`` (for quoting one link of a chain)."""
    node = ast.Constant(value=None)
    node.lineno, node.col_offset = first.lineno, first.col_offset
    node.end_lineno, node.end_col_offset = last.end_lineno, last.end_col_offset
    return node


def expr_BoolOp(b: Builder, node: ast.BoolOp) -> Value:
    op = ir.BinOp.AND if isinstance(node.op, ast.And) else ir.BinOp.OR
    result = b.expr(node.values[0])
    for prev, nxt in itertools.pairwise(node.values):
        outer, b.unit.pending = b.unit.pending, []
        try:
            rhs = b.expr(nxt)
            hoisted = b.unit.pending
        finally:
            b.unit.pending = outer
        outer.extend(short_circuit(b, op, result, hoisted))
        result = apply(b, op, result, rhs, node, prev, nxt)
    return result


def short_circuit(b: Builder, op: ir.BinOp, lhs: Value,
                  hoisted: list[ir.Stmt]) -> list[ir.Stmt]:
    """What the right side of ``and``/``or`` hoisted (atomics, helper bodies), run
    only where the left side does not decide, as Python would."""
    known = constant_bool(lhs)
    if not hoisted or known is not None:
        runs = known is None or known is (op is ir.BinOp.AND)
        return hoisted if runs else []
    if getattr(lhs, "type", None) is not ir.Elem.BOOL:
        return hoisted  # not a condition: apply() reports the type error
    guard = lhs if op is ir.BinOp.AND else ir.Unary(ir.UnOp.NOT, lhs, ir.Elem.BOOL)
    return [ir.If(guard, tuple(hoisted), ())]


def expr_IfExp(b: Builder, node: ast.IfExp) -> Value:
    return choose(b, node, node.test, node.body, node.orelse)


EXPRESSIONS: dict[type[ast.expr], Callable[[Builder, Any], Value]] = {
    ast.Constant: expr_Constant, ast.Name: expr_Name, ast.Attribute: expr_Attribute,
    ast.Subscript: expr_Subscript, ast.BinOp: expr_BinOp, ast.UnaryOp: expr_UnaryOp,
    ast.Compare: expr_Compare, ast.BoolOp: expr_BoolOp, ast.IfExp: expr_IfExp,
    ast.Call: expr_Call,
}
"""The function that evaluates each kind of expression of the language."""

# The constructs users reach for most, with the name the error message gives them.
UNSUPPORTED_EXPRS: dict[str, str] = {
    "Lambda": "`lambda` expressions", "List": "list literals", "Tuple": "tuples",
    "Dict": "dict literals", "Set": "set literals", "ListComp": "comprehensions",
    "SetComp": "comprehensions", "DictComp": "comprehensions",
    "GeneratorExp": "generator expressions", "JoinedStr": "f-strings",
    "FormattedValue": "f-strings", "NamedExpr": "`:=` assignment expressions",
    "Await": "`await` expressions", "Yield": "`yield` expressions",
    "YieldFrom": "`yield` expressions", "Starred": "`*` unpacking", "Slice": "slices",
}
