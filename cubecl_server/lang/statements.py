"""Statements of the kernel language: :data:`STATEMENTS` has, for each kind of AST
statement the language has, the function that builds it into IR statements;
:data:`UNSUPPORTED_STMTS` names the others for the error message.

This module has the control flow (``if``, ``while``, ``for ... in range``, ``break``,
``continue``, ``return``, with a helper's returns) and the expression statements (a
call for its effect); assignments are :mod:`.assignments`'.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from typing import Any

from .. import ir
from ..errors import KernelSyntaxError
from .assignments import check_assignable, stmt_AnnAssign, stmt_Assign, stmt_AugAssign
from .builder import Builder
from .calls import call_statement
from .memory import array_ref, slice_of
from .operations import as_bool_condition, coerce, constant_bool
from .tuples import TupleValue
from .typerules import TypeRuleError, Weak, concrete, const_of

__all__ = ["STATEMENTS", "UNSUPPORTED_STMTS"]


def stmt_Pass(b: Builder, node: ast.Pass) -> list[ir.Stmt]:
    return []


def stmt_Break(b: Builder, node: ast.Break) -> list[ir.Stmt]:
    b.flow.jump("break", b.src.line(node))
    return [ir.Break()]


def stmt_Continue(b: Builder, node: ast.Continue) -> list[ir.Stmt]:
    b.flow.jump("continue", b.src.line(node))
    return [ir.Continue()]


def stmt_Return(b: Builder, node: ast.Return) -> list[ir.Stmt]:
    if b.helper is None:
        if node.value is not None:
            raise b.fail(node, "a kernel returns nothing: write results to an array "
                               "parameter and use a bare `return`")
        b.flow.jump("return", b.src.line(node))
        return [ir.Return()]
    out = helper_return(b, node)
    b.flow.jump("return", b.src.line(node))
    return out


def helper_return(b: Builder, node: ast.Return) -> list[ir.Stmt]:
    """``return [expr]`` in a helper: the call's value, or an assignment to its
    result local when the helper returns from the branches of a final if/else."""
    if not b.tail:
        raise b.fail(node, f"`return` in cube_fn `{b.helper}` must be its last "
                           "statement, or the last statement of a branch of its final "
                           "if/else (helpers are inlined; early returns are not "
                           "supported: restructure with if/else)")
    b.always_returns = True
    has_value = node.value is not None
    if b.saw_return and has_value != (b.result is not None
                                      or b.returned_value is not None):
        raise b.fail(node, f"cube_fn `{b.helper}` mixes `return` with and without "
                           "a value")
    b.saw_return = True
    if node.value is None:
        return []
    value = b.unpacked(node.value)
    if b.branch_returns:
        if isinstance(value, TupleValue):
            raise b.fail(node, f"cube_fn `{b.helper}` returns several values from "
                               "a branch: assign them to locals in each branch and "
                               "end the helper with one `return a, b`")
        if b.result is None:
            try:
                expr = concrete(value)
            except TypeRuleError as err:
                b.rule_error(node, err, node.value)
            name = b.unit.fresh(f"{b.helper}_result")
            b.result = b.declare(f"<{b.helper} result>", name, expr.type,
                                 b.src.line(node))
            return [ir.Assign(name, expr)]
        what = (f"the result of cube_fn `{b.helper}` (from its first return on line "
                f"{b.result.line})")
        return [ir.Assign(b.result.ir_name,
                          coerce(b, value, b.result.elem, node, node.value, what))]
    b.returned_value = value
    return []


def stmt_Expr(b: Builder, node: ast.Expr) -> list[ir.Stmt]:
    value = node.value
    if isinstance(value, ast.Constant) and value.value is Ellipsis:
        return []
    if isinstance(value, ast.Call):
        effect = call_statement(b, value)
        if effect is not None:
            return effect
        b.expr(value)  # reports unknown functions and bad arguments first
        raise b.fail(node, f"the result of `{b.seg(value)}` is unused: assign it "
                           "or remove the call")
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        raise b.fail(node, "string constants are not supported in kernels (only a "
                           "docstring as the first statement)")
    raise b.fail(node, f"the expression statement `{b.seg(value)}` has no effect")


def stmt_If(b: Builder, node: ast.If) -> list[ir.Stmt]:
    cond = as_bool_condition(b, node.test, "`if`")
    known = constant_bool(cond)
    tail = b.tail
    if known is not None:
        # Only the taken branch is compiled: comptime code may be invalid in the other.
        return list(b.block(node.body if known else node.orelse, tail))
    assert not isinstance(cond, Weak)
    fork = b.flow.fork(b.src.line(node))
    then = b.block(node.body, tail)
    then_returns = b.always_returns
    fork.otherwise()
    orelse = b.block(node.orelse, tail)
    fork.join()
    b.always_returns = then_returns and b.always_returns and bool(node.orelse)
    return [ir.If(cond, then, orelse)]


def stmt_While(b: Builder, node: ast.While) -> list[ir.Stmt]:
    if node.orelse:
        raise b.fail(node, "`while ... else` is not supported in kernels")
    cond = as_bool_condition(b, node.test, "`while`")
    if b.unit.pending:
        # The condition is evaluated before every iteration; hoisting would run it once.
        raise b.fail(node.test, "the condition of `while` cannot use atomics or call "
                                "a cube_fn with statements: compute it into a local "
                                "before the loop and again at the end of the body")
    known = constant_bool(cond)
    if known is False:
        return []
    loop = b.flow.loop("while True" if known else "while", b.src.line(node))
    body = b.block(node.body)
    loop.exit()
    return [ir.While(concrete(cond), body)]


def stmt_For(b: Builder, node: ast.For) -> list[ir.Stmt]:
    if node.orelse:
        raise b.fail(node, "`for ... else` is not supported in kernels")
    if not isinstance(node.target, ast.Name):
        raise b.fail(node.target, "tuple unpacking is not supported in kernels: a "
                                  "`for` loop counts one variable")
    it = node.iter
    if not (isinstance(it, ast.Call) and _is_range(b, it.func)):
        if isinstance(it, ast.Subscript) and isinstance(it.slice, ast.Slice):
            # A slice written in place: made once, under a name of its own, then walked.
            name = _hidden(b, "_for_slice", node)
            made = ast.copy_location(ast.Assign([ast.copy_location(
                ast.Name(name, ast.Store()), it)], it), node)
            walked = ast.copy_location(ast.For(ast.copy_location(node.target, node.target),
                                               ast.copy_location(ast.Name(name, ast.Load()),
                                                                 it), node.body, []), node)
            return [*stmt_Assign(b, made), *stmt_For(b, walked)]
        if array_ref(b, it) is not None or slice_of(b, it) is not None or (
                isinstance(it, ast.Name) and it.id in b.shared_arrays):
            return stmt_For(b, _over_elements(b, node))
        raise b.fail(it, "only `for i in range(...)` loops and `for x in a` over an array, "
                         "a slice or a shared or local array are supported in kernels")
    if not 1 <= len(it.args) <= 3 or any(isinstance(a, ast.Starred) for a in it.args):
        raise b.fail(it, "range() takes 1 to 3 positional arguments")
    unroll = False
    for kw in it.keywords:
        if kw.arg != "unroll":
            raise b.fail(it, f"range() takes only the keyword argument `unroll`, not "
                             f"`{kw.arg or '**'}`")
        uv = b.expr(kw.value)
        if not isinstance(uv, (Weak, ir.Const)) or not isinstance(uv.value, bool):
            raise b.fail(kw.value, "`unroll=` of range() must be a constant bool (a "
                                   f"literal or comptime value), not "
                                   f"`{b.seg(kw.value)}`")
        unroll = bool(uv.value)
    name = node.target.id
    check_assignable(b, name, node.target)
    arg_nodes = list(it.args)
    start_node: ast.expr | None = arg_nodes[0] if len(arg_nodes) >= 2 else None
    stop_node = arg_nodes[1] if len(arg_nodes) >= 2 else arg_nodes[0]
    start = b.expr(start_node) if start_node is not None else Weak(0)
    stop = b.expr(stop_node)
    step = 1
    bounds = [(start, start_node), (stop, stop_node)]
    if len(arg_nodes) == 3:
        sv = b.expr(arg_nodes[2])
        if not isinstance(sv, (Weak, ir.Const)):
            # Known at run time only: typed with the bounds, its sign taken at run time.
            bounds.append((sv, arg_nodes[2]))
        elif isinstance(sv.value, bool) or not isinstance(sv.value, int):
            raise b.fail(arg_nodes[2], "the step of range() must be an integer, not "
                                       f"`{b.seg(arg_nodes[2])}`")
        elif sv.value == 0:
            raise b.fail(arg_nodes[2], "the step of range() must not be zero")
        else:
            step = sv.value
    info = b.locals.get(name)
    weak = b.unit.weak
    for v, _ in bounds:
        if not isinstance(v, Weak) and not v.type.is_int:
            raise b.fail(it, f"range() needs integer bounds, got {v.type.value} in "
                             f"`{b.seg(it)}`{b.describe_vars(it)}")
    var = info.ir_name if info is not None else b.ir_name(name)
    typed = [v for v, _ in bounds if not isinstance(v, Weak) and b.weak_of(v) is None]
    if info is None and not typed:
        # Bounds of constants and weak locals only: the variable is weak too, in one
        # class with the weak bounds.
        weak.add(var, "int")
    if var in weak:
        if step < 0:
            weak.require_signed(var)
        for v, _ in bounds:
            root = b.weak_of(v)
            if root is not None:
                b.unit.typing.join(var, root)
            if root is None and not isinstance(v, Weak):
                b.fix(var, v.type, it)
        elem = weak.elem(var)
    else:
        elem = info.elem if info is not None else typed[0].type
        for v, _ in bounds:
            b.meet(v, elem, it)
    if not elem.is_int:
        raise b.fail(it, f"range() counts with integers, but `{name}` is "
                         f"{elem.value}{b.describe_vars(it)}")
    if elem.is_narrow:
        raise b.fail(it, f"range() counts with i32, u32, i64 or u64, but `{name}` "
                         f"would be {elem.value}{b.describe_vars(it)}; cast the "
                         f"bounds, e.g. u32({b.seg(stop_node)})")
    for v, bnode in bounds:
        if not isinstance(v, Weak) and v.type is not elem:
            why = (f"; `{name}` is already {elem.value}{b.weak_origin(var)}"
                   if info is not None else "")
            raise b.fail(it, f"type mismatch in `{b.seg(it)}`: the bounds and "
                             f"step of range() must share one type, {elem.value} vs "
                             f"{v.type.value}{b.describe_vars(it)}{why}; cast, "
                             f"e.g. {elem.value}({b.seg(bnode or it)})")
    if step < 0 and not elem.is_signed:
        raise b.fail(it, f"a negative step needs a signed loop variable, but `{name}` "
                         f"would be {elem.value}{b.weak_origin(var)}; cast the "
                         f"bounds, e.g. i32({b.seg(stop_node)})")
    exprs: list[ir.Expr] = []
    for v, bnode in bounds:
        if isinstance(v, Weak):
            try:
                exprs.append(const_of(v, elem))
            except TypeRuleError as err:
                b.rule_error(it, err, bnode or it)
        else:
            exprs.append(v)
    if len(exprs) == 3:
        step_c = exprs.pop()
    else:
        try:
            step_c = const_of(Weak(step), elem)
        except TypeRuleError as err:
            b.rule_error(it, err, it)
    if unroll and not all(isinstance(e, ir.Const) for e in (*exprs, step_c)):
        raise b.fail(it, f"range(..., unroll=True) needs constant bounds and step "
                         f"(literals or comptime values), not `{b.seg(it)}`"
                         f"{b.describe_vars(it)}")
    if info is None:
        info = b.declare(name, var, elem, b.src.line(node))
    loop = b.flow.loop("for", b.src.line(node))
    b.flow.assign(name, b.src.line(node))
    b.loop_vars.append(name)
    try:
        body = b.block(node.body)
    finally:
        b.loop_vars.pop()
    loop.exit()
    return [ir.For(info.ir_name, exprs[0], exprs[1], step_c, body, unroll)]


def _hidden(b: Builder, base: str, node: ast.stmt) -> str:
    """A name for the frontend's own use at ``node``, which the function's code does
    not use."""
    name = f"{base}_{node.lineno}_{node.col_offset}"
    while name in b.assigned or name in b.locals or name in b.params or name in b.slices:
        name += "_"
    return name


def _over_elements(b: Builder, node: ast.For) -> ast.For:
    """``for x in a: body`` as ``for k in range(len(a)): x = a[k]; body``, ``k`` a name
    of its own: each element in order, ``a`` read where the loop reads it."""
    k = _hidden(b, "_for_index", node)
    it = node.iter
    count = ast.Call(ast.Name("range", ast.Load()),
                     [ast.Call(ast.Name("len", ast.Load()), [it], [])], [])
    element = ast.Assign([node.target], ast.Subscript(it, ast.Name(k, ast.Load()),
                                                      ast.Load()))
    loop = ast.For(ast.Name(k, ast.Store()), count, [element, *node.body], [])
    for n in (count, *ast.walk(count), element, *ast.walk(element), loop, loop.target):
        ast.copy_location(n, node)
        n.end_lineno, n.end_col_offset = node.end_lineno, node.end_col_offset
    for n in (it, node.target):  # their own places, for messages quoting them
        ast.fix_missing_locations(n)
    return loop


def _is_range(b: Builder, func: ast.expr) -> bool:
    try:
        return b.static(func) is builtins.range
    except KernelSyntaxError:
        return False


STATEMENTS: dict[type[ast.stmt], Callable[[Builder, Any], list[ir.Stmt]]] = {
    ast.Pass: stmt_Pass, ast.Break: stmt_Break, ast.Continue: stmt_Continue,
    ast.Return: stmt_Return, ast.Expr: stmt_Expr, ast.If: stmt_If, ast.While: stmt_While,
    ast.For: stmt_For, ast.Assign: stmt_Assign, ast.AnnAssign: stmt_AnnAssign,
    ast.AugAssign: stmt_AugAssign,
}
"""The function that builds each kind of statement of the language."""

# The constructs users reach for most, with the name the error message gives them.
UNSUPPORTED_STMTS: dict[str, str] = {
    "With": "`with` statements", "AsyncWith": "`async with` statements",
    "Try": "`try` statements", "TryStar": "`try` statements",
    "Raise": "`raise` statements", "Assert": "`assert` statements",
    "Global": "`global` declarations", "Nonlocal": "`nonlocal` declarations",
    "FunctionDef": "nested function definitions",
    "AsyncFunctionDef": "nested function definitions", "ClassDef": "class definitions",
    "Import": "imports", "ImportFrom": "imports", "Delete": "`del` statements",
    "Match": "`match` statements", "AsyncFor": "`async for` loops",
}
