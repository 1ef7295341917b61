"""Assignments: ``x = v``, ``x: T = v``, ``x += v``, stores into elements
(``a[i] = v``), and the assignments that declare memory (``tile = shared(f32, 256)``,
``s = a[lo:hi]``) or keep an atomic's old value (``old = atomic_add(a, i, 1)``).

A name's first assignment declares the local, of the value's type; a weak value (a
constant, or one built from weak locals) makes a weak local, typed later by what it
meets (:mod:`.weak`). Unpacking assignments (``a, b = b, a``) are :mod:`.tuples`'.
"""

from __future__ import annotations

import ast

from .. import ir
from ..errors import KernelSyntaxError
from . import types as lt
from .builder import Builder, LocalInfo
from .expressions import read_name
from .intrinsics import atomic, atomic_value
from .lanes import lane_choice, with_lane
from .memory import (
    EXAMPLE_DECL,
    array_kind,
    array_ref,
    declare_array,
    declare_slice,
    shared_or_param_elem,
    slice_of,
    subscript,
)
from .operations import binary, coerce, lift
from .typerules import Mismatch, TypeRuleError, Value, Weak, concrete, const_of, type_name

__all__ = ["assign_to", "check_assignable", "stmt_AnnAssign", "stmt_Assign",
           "stmt_AugAssign"]


def stmt_Assign(b: Builder, node: ast.Assign) -> list[ir.Stmt]:
    if isinstance(node.value, ast.Tuple) or any(
            isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
        return b.unpack_assign(node)
    special = special_assign(b, node)
    if special is not None:
        return special
    value = b.expr(node.value)
    out: list[ir.Stmt] = []
    for t in node.targets:
        out.append(assign_to(b, t, value, node, node.value))
    return out


def special_assign(b: Builder, node: ast.Assign) -> list[ir.Stmt] | None:
    """``tile = shared(T, n)``, ``acc = local_array(T, n)`` and
    ``old = atomic_op(...)``, or None for the rest."""
    v = node.value
    if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Slice):
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            raise b.fail(node, "a slice must be assigned to one plain name, e.g. "
                               "`s = a[lo:hi]`")
        return declare_slice(b, node.targets[0].id, v, node)
    if not isinstance(v, ast.Call):
        return None
    try:
        obj = b.static(v.func)
    except KernelSyntaxError:
        return None
    declares = obj is lt.shared or obj is lt.local_array
    if not declares and not isinstance(obj, lt.AtomicIntrinsic):
        return None
    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        if declares:
            raise b.fail(node, f"{obj.name}() must be assigned to one plain name, "
                               f"e.g. `{EXAMPLE_DECL[obj.name]}`")
        return None
    name = node.targets[0].id
    if declares:
        return declare_array(b, obj is lt.shared, name, v, node)
    assert isinstance(obj, lt.AtomicIntrinsic)
    check_assignable(b, name, node)
    atomic_value(b, obj, v)
    stmt = atomic(b, obj, v, None)
    elem = shared_or_param_elem(b, stmt.array)
    info = b.locals.get(name)
    if info is None:
        info = b.declare(name, b.ir_name(name), elem, b.src.line(node))
    elif info.elem is not elem:
        raise b.fail(node, f"`{name}` is {info.elem.value} (from its first assignment "
                           f"on line {info.line}) but {obj.name}() returns "
                           f"{elem.value}")
    b.flow.assign(name, b.src.line(node))
    return [ir.AtomicStmt(stmt.op, stmt.array, stmt.index, stmt.value, stmt.compare,
                          info.ir_name)]


def stmt_AnnAssign(b: Builder, node: ast.AnnAssign) -> list[ir.Stmt]:
    if not isinstance(node.target, ast.Name):
        raise b.fail(node, "an annotated assignment must target a plain variable")
    name = node.target.id
    ann = b.static(node.annotation)
    if not isinstance(ann, lt.ScalarType):
        raise b.fail(node.annotation, f"a local's annotation must be a scalar type "
                                      f"such as f32, not `{b.seg(node.annotation)}`")
    if node.value is None:
        raise b.fail(node, f"`{name}` must be given a value where it is declared, "
                           f"e.g. `{name}: {ann.name} = 0`")
    check_assignable(b, name, node)
    info = b.locals.get(name)
    if info is not None and info.elem is not ann.elem:
        raise b.fail(node, f"`{name}` is {info.elem.value} (from its first assignment "
                           f"on line {info.line}), it cannot be redeclared as "
                           f"{ann.elem.value}")
    value = b.expr(node.value)
    if info is None:
        expr = coerce(b, value, ann.elem, node, node.value, f"`{name}`")
        info = b.declare(name, b.ir_name(name), ann.elem, b.src.line(node))
        b.flow.assign(name, b.src.line(node))
        return [ir.Assign(info.ir_name, expr)]
    return [assign_name(b, name, value, node, node.value)]


def stmt_AugAssign(b: Builder, node: ast.AugAssign) -> list[ir.Stmt]:
    target = node.target
    if isinstance(target, ast.Name):
        current = read_name(b, target.id, target)
    elif isinstance(target, ast.Subscript) and lane_target(b, target) is not None:
        current = b.expr(target)
    elif isinstance(target, ast.Subscript):
        array, elem, index = subscript(b, target)
        current = ir.Load(array, index, elem)
    else:
        raise b.fail(target, f"cannot assign to `{b.seg(target)}` in a kernel")
    value = b.expr(node.value)
    result = binary(b, node.op, current, value, node, target, node.value)
    return [assign_to(b, target, result, node, node)]


def assign_to(b: Builder, target: ast.expr, value: Value, node: ast.stmt,
              value_node: ast.expr | ast.stmt) -> ir.Stmt:
    """The IR for storing ``value`` into ``target`` (a variable or ``a[i]``)."""
    if isinstance(target, ast.Name):
        return assign_name(b, target.id, value, node, value_node)
    if isinstance(target, ast.Subscript) and lane_target(b, target) is not None:
        return assign_lane(b, target, value, node, value_node)
    if isinstance(target, ast.Subscript):
        array, elem, index = subscript(b, target)
        if isinstance(elem, ir.Line):
            return ir.Store(array, index, lift(b, value, elem, node, (value_node,)))
        if elem.is_minifloat and isinstance(value, Weak) and value.kind != "bool":
            # A number stored into minifloats is rounded as e4m3(0.5) would round it.
            return ir.Store(array, index, ir.Cast(ir.Const(float(value.value), ir.Elem.F32),
                                                  elem))
        b.meet(value, elem, node)
        if isinstance(value, Weak):
            try:
                return ir.Store(array, index, const_of(value, elem))
            except Mismatch:
                pass
            except TypeRuleError as err:
                b.rule_error(node, err, value_node)
        elif value.type is elem:
            return ir.Store(array, index, value)
        raise b.fail(node, f"type mismatch in store `{b.seg(node)}`: `{array}` "
                           f"holds {elem.value} but the value is {type_name(value)}"
                           f"{b.describe_vars(value_node)}; cast it, e.g. "
                           f"{elem.value}({b.seg(value_node)})")
    if isinstance(target, ast.Attribute):
        raise b.fail(target, f"assignment to attributes (`{b.seg(target)}`) is not "
                             "supported in kernels")
    raise b.fail(target, f"cannot assign to `{b.seg(target)}` in a kernel")


def lane_target(b: Builder, target: ast.Subscript) -> LocalInfo | None:
    """The local ``v`` of a target ``v[k]`` that sets a lane of a line (a scalar in a
    kernel with line arrays is a line of one), or None for an element of memory."""
    base = target.value
    if not isinstance(base, ast.Name) or array_ref(b, base) is not None \
            or slice_of(b, base) is not None:
        return None
    info = b.locals.get(base.id)
    if info is None or not (isinstance(info.elem, ir.Line) or b.unit.has_lines):
        return None
    return info


def assign_lane(b: Builder, target: ast.Subscript, value: Value, node: ast.stmt,
                value_node: ast.expr | ast.stmt) -> ir.Stmt:
    """``v[k] = x``: the local line ``v`` becomes ``v`` with lane ``k`` holding ``x``."""
    assert isinstance(target.value, ast.Name)
    name = target.value.id
    line = concrete(read_name(b, name, target.value))
    elem = ir.elem_of(line.type)
    x = coerce(b, value, elem, node, value_node, f"a lane of `{name}` ({elem.value})")
    size = line.type.size if isinstance(line.type, ir.Line) else 1
    k = lane_choice(b, b.expr(target.slice), size, target)
    if not isinstance(k, int) and not isinstance(x, ir.Const | ir.Var):
        # Each lane's select reads the value: compute it once.
        held = b.temp("lane", elem)
        b.unit.pending.append(ir.Assign(held.name, x))
        x = held
    return assign_name(b, name, with_lane(line, k, x), node, value_node)


def check_assignable(b: Builder, name: str, node: ast.AST) -> None:
    """Raise if ``name`` is something a kernel may not assign."""
    p = b.params.get(name)
    if p is not None and p.array:
        raise b.fail(node, f"cannot assign to array parameter `{name}`: store into "
                           f"its elements instead (`{name}[i] = ...`)")
    if name in b.comptime or name in b.comptime_types:
        raise b.fail(node, f"cannot assign to comptime parameter `{name}`")
    if name in b.shared_arrays:
        raise b.fail(node, f"cannot assign to {array_kind(b.shared_arrays[name])} "
                           f"`{name}`: store into its elements instead "
                           f"(`{name}[i] = ...`)")
    if name in b.slices:
        raise b.fail(node, f"`{name}` is a slice: assign it only another slice of "
                           f"the same array (`{name} = a[lo:hi]`)")
    if name in b.loop_vars:
        raise b.fail(node, f"cannot assign to `{name}` inside the loop it counts")


def assign_name(b: Builder, name: str, value: Value, node: ast.AST,
                value_node: ast.AST) -> ir.Assign:
    """``name = value``: declares the local on its first assignment."""
    check_assignable(b, name, node)
    info = b.locals.get(name)
    weak = b.unit.weak
    if info is None:
        info, expr = new_local(b, name, value, node, value_node)
    elif info.ir_name in weak and isinstance(value, Weak) \
            and value.kind == weak.kind(info.ir_name):
        expr = weak_constant(b, value, info, node, value_node)
    else:
        if info.ir_name in weak:
            # Assigning to a weak local is a meeting too: a typed value gives it its
            # type, a weak one joins the two classes.
            root = b.weak_of(value)
            if root is not None:
                b.unit.typing.join(info.ir_name, root)
            if root is None and not isinstance(value, Weak):
                b.fix(info.ir_name, value.type, node)
        fixed = weak.fixed(info.ir_name) if info.ir_name in weak else None
        first = (f"`{name}` (from its first assignment on line {info.line})"
                 if fixed is None else
                 f"`{name}` (typed by `{fixed.text}` on line {fixed.line})")
        expr = coerce(b, value, info.elem, node, value_node, first)
    b.flow.assign(name, b.src.line(node))
    return ir.Assign(info.ir_name, expr)


def new_local(b: Builder, name: str, value: Value, node: ast.AST, value_node: ast.AST
              ) -> tuple[LocalInfo, ir.Expr]:
    """Declare ``name`` on its first assignment, of ``value``; the local is weak
    when the value is (a weak number, or built from weak locals)."""
    line = b.src.line(node)
    ir_name = b.ir_name(name)
    weak = b.unit.weak
    root = b.weak_of(value)
    if root is not None:
        assert not isinstance(value, Weak)
        weak.add(ir_name, weak.kind(root), like=root)
        return b.declare(name, ir_name, value.type, line), value
    if isinstance(value, Weak) and value.kind != "bool":
        weak.add(ir_name, value.kind)
        info = b.declare(name, ir_name, weak.elem(ir_name), line)
        return info, weak_constant(b, value, info, node, value_node)
    expr = concrete(value)  # a bool constant, or a value of a fixed type
    return b.declare(name, ir_name, expr.type, line), expr


def weak_constant(b: Builder, value: Weak, info: LocalInfo, node: ast.AST,
                  value_node: ast.AST) -> ir.Expr:
    """``value``, of the weak local ``info``'s kind, as a constant of its type. One
    that does not fit a type not yet fixed is an error only if no type is met
    later that holds it (it is deferred)."""
    try:
        return const_of(value, info.elem)
    except TypeRuleError as err:
        if b.unit.weak.fixed(info.ir_name) is not None:
            b.rule_error(node, err, node)
        b.unit.typing.deferred.append(b.fail(
         node, f"{err.message} in `{b.seg(node)}`; cast it to pick a wider type, "
               f"e.g. i64({b.seg(value_node)})"))
        # Never compiled: this build ends in the error, or a type is met and the
        # kernel is built again.
        return ir.Const(0, info.elem)
