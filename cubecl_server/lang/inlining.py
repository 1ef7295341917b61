"""Helpers (``@cube_fn``) are inlined: a call becomes the helper's statements, built
by a builder of its own (its names, source and scope) that shares the kernel's unit,
placed before the statement holding the call; its value is what the helper returns.

:func:`inline` binds the arguments (arrays and slices by reference, types and constants
at compile time, other scalars by value) and builds the body; the helper's ``return``
statements are :func:`~.statements.helper_return`'s.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import replace

from .. import ir
from ..errors import KernelSyntaxError
from . import types as lt
from .builder import Builder, LocalInfo, dotted
from .memory import array_ref, make_slice, slice_of
from .operations import coerce
from .signature import resolve_annotation
from .source import body_of, load_source
from .structs import flat_name, read_fields, struct_type
from .tuples import Unpacked
from .typerules import TypeRuleError, Value, Weak, concrete, const_of, type_name

__all__ = ["inline"]


def inline(b: Builder, cf: lt.CubeFn, node: ast.Call, want_value: bool) -> Unpacked | None:
    """Inline a call to a helper: its statements go before the current statement
    (``unit.pending``); returns the call's value (None when it returns nothing)."""
    unit = b.unit
    if any(f is cf for f in unit.inlining):
        chain = " -> ".join(f.name for f in [*unit.inlining, cf])
        raise b.fail(node, f"recursive call to cube_fn `{cf.name}` ({chain}): helpers "
                           "are inlined, so they cannot call themselves")
    fn = cf.fn
    source = load_source(fn)
    sig = inspect.signature(fn)
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise KernelSyntaxError(f"cube_fn `{cf.name}` cannot take `*{p.name}` or "
                                    f"`**{p.name}`", source.file, source.line(source.tree),
                                    function=cf.name)
    kwargs: dict[str, ast.expr] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise b.fail(node, "`**` unpacking is not supported in kernels")
        kwargs[kw.arg] = kw.value
    try:
        bound = sig.bind(*node.args, **kwargs)
    except TypeError as exc:
        raise b.fail(node, f"bad call to cube_fn `{cf.name}`: {exc}") from None
    bound.apply_defaults()
    child = b.child(fn, source, cf.name, (*b.scope, *dotted(node.func)))
    reads = unit.reads
    prologue: list[ir.Stmt] = []
    for pname, arg in bound.arguments.items():
        ann = sig.parameters[pname].annotation
        if ann is not inspect.Parameter.empty:
            try:
                ann = resolve_annotation(fn, ann, record=None if reads is None else (
                    lambda name, obj: reads.note((*child.scope, name), obj)))
            except Exception as exc:
                raise KernelSyntaxError(
                    f"cannot evaluate the annotation of `{pname}` of cube_fn "
                    f"`{cf.name}`: {exc}", source.file, source.line(source.tree),
                    function=cf.name) from None
        else:
            ann = None
        if not bind_struct(b, child, pname, arg, ann, node, prologue):
            bind_argument(b, child, pname, arg, ann, node, prologue)
    if child.structs:
        members = {n: f for n, (_, f) in child.structs.items()}
        source = child.src = replace(source, tree=read_fields(
            source.tree, members, lambda at, message: KernelSyntaxError(
                message, source.file, source.line(at), function=cf.name)))
    tree_body = body_of(source.tree)
    # A final `return expr` is the call's value; returns elsewhere assign a result.
    child.branch_returns = not (tree_body and isinstance(tree_body[-1], ast.Return))
    unit.inlining.append(cf)
    try:
        body = child.block(tree_body, tail=True)
    finally:
        unit.inlining.pop()
    value: Unpacked | None
    if child.branch_returns:
        if child.result is not None and not child.always_returns:
            raise KernelSyntaxError(
                f"cube_fn `{cf.name}` returns a value on some paths only: end every "
                "branch of its final if/else with a `return`", source.file,
                source.line(source.tree), function=cf.name)
        value = ir.Var(child.result.ir_name, child.result.elem) if child.result else None
    else:
        value = child.returned_value
    unit.pending.extend(prologue)
    unit.pending.extend(body)
    if value is not None:
        value = b.read_now(value, cf.name)
    if want_value and value is None:
        raise b.fail(node, f"cube_fn `{cf.name}` returns no value, so `{b.seg(node)}`"
                           " cannot be used in an expression")
    return value


def bind_struct(b: Builder, child: Builder, pname: str, arg: object, ann: object,
                node: ast.Call, prologue: list[ir.Stmt]) -> bool:
    """Bind a helper's struct parameter (``ann`` a :func:`~.structs.struct` class) to the
    caller's struct of that class, field by field; False where ``ann`` is no struct."""
    try:
        st = struct_type(ann)
    except Exception as exc:
        raise b.fail(node, f"cannot evaluate the fields of struct {ann!r}: {exc}") from None
    if st is None:
        return False
    what = f"argument `{pname}` of cube_fn `{child.helper}`"
    held = b.structs.get(arg.id) if isinstance(arg, ast.Name) else None
    if held is None or held[0] is not ann:
        got = f"struct {held[0].__name__}" if held else f"`{b.seg(arg)}`" if isinstance(
            arg, ast.expr) else repr(arg)
        raise b.fail(node, f"{what} is a struct {st.name}, got {got}")
    assert isinstance(arg, ast.Name) and isinstance(ann, type)
    for field, fann in st.fields:
        value = ast.copy_location(ast.Name(flat_name(arg.id, field), ast.Load()), arg)
        bind_argument(b, child, flat_name(pname, field), value, fann, node, prologue)
    child.structs[pname] = (ann, tuple(f for f, _ in st.fields))
    return True


def bind_argument(b: Builder, child: Builder, pname: str, arg: object, ann: object,
                  node: ast.Call, prologue: list[ir.Stmt]) -> None:
    """Bind a helper's parameter: arrays by reference, types and constants at compile
    time, other scalars by value (a local of the helper, or the caller's variable)."""
    what = f"argument `{pname}` of cube_fn `{child.helper}`"
    if not isinstance(arg, ast.expr):
        # A default value: a Python object, like a global.
        if isinstance(arg, lt.ScalarType):
            child.comptime_types[pname] = arg
            return
        if isinstance(arg, (bool, int, float)) and pname not in child.assigned:
            child.comptime[pname] = arg
            return
        if isinstance(arg, (bool, int, float)):
            v: Value = Weak(arg)
        else:
            raise b.fail(node, f"{what}: default {arg!r} is not a kernel value")
        arg_node: ast.expr = node
    else:
        arg_node = arg
        view = slice_of(b, arg)
        if view is None and isinstance(arg, ast.Subscript) \
                and isinstance(arg.slice, ast.Slice):
            view, stmts = make_slice(b, arg, pname)
            prologue.extend(stmts)
        if view is not None:
            if pname in child.assigned:
                raise child.fail(child.src.tree, f"cube_fn `{child.helper}` assigns its "
                                                 f"slice parameter `{pname}`")
            if isinstance(ann, lt.ArrayType) and ann.elem is not None \
                    and ann.elem is not view.elem:
                raise b.fail(arg, f"{what} is {ann!r}, got a slice of "
                                  f"{view.elem.value}")
            if isinstance(ann, lt.ScalarType):
                raise b.fail(arg, f"{what} is a scalar {ann!r}, got a slice")
            child.slices[pname] = view
            return
        ref = array_ref(b, arg)
        if ref is not None:
            if pname in child.assigned:
                raise child.fail(child.src.tree, f"cube_fn `{child.helper}` assigns its "
                                                 f"array parameter `{pname}`")
            array, t = ref
            elem = ir.elem_of(t)
            if isinstance(ann, lt.ArrayType) and ann.elem is not None \
                    and ann.elem is not elem:
                raise b.fail(arg, f"{what} is {ann!r}, got an array of {t.value}")
            if isinstance(ann, lt.ScalarType):
                raise b.fail(arg, f"{what} is a scalar {ann!r}, got an array")
            if isinstance(arg, ast.Name) and arg.id in b.shared_arrays:
                child.shared_arrays[pname] = b.shared_arrays[arg.id]
            else:
                child.params[pname] = ir.Param(array, elem, True, ir.line_size(t))
            return
        t = b.static_type(arg)
        if t is not None:
            child.comptime_types[pname] = t
            return
        v = b.expr(arg)
    if isinstance(ann, lt.ArrayType):
        raise b.fail(arg_node, f"{what} is {ann!r}, got `{b.seg(arg_node)}`")
    if isinstance(ann, lt.ScalarType):
        v = coerce(b, v, ann.elem, arg_node, arg_node, what)
    if isinstance(ann, lt.LineType) and ann.elem is not None and (
            isinstance(v, Weak) or ir.elem_of(v.type) is not ann.elem):
        raise b.fail(arg_node, f"{what} is {ann!r}, got {type_name(v)}")
    if isinstance(v, Weak) and pname not in child.assigned:
        child.comptime[pname] = v.value
        return
    line = child.src.line(child.src.tree)
    if isinstance(v, ir.Var) and pname not in child.assigned:
        # The helper cannot assign it, and nothing else runs in between: share it
        # (a weak local stays weak: its IR name is in the unit's weak locals).
        child.locals[pname] = LocalInfo(v.name, v.type, line)
        return
    # Otherwise a local of the helper, weak when the argument is.
    ir_name = child.ir_name(pname)
    weak = b.unit.weak
    root = b.weak_of(v)
    if root is not None:
        weak.add(ir_name, weak.kind(root), like=root)
    elif isinstance(v, Weak) and v.kind != "bool":
        weak.add(ir_name, v.kind)
    try:
        e = const_of(v, weak.elem(ir_name)) if isinstance(v, Weak) and ir_name in weak \
            else concrete(v)
    except TypeRuleError as err:
        b.rule_error(arg_node, err, arg_node)
    info = child.declare(pname, ir_name, e.type, line)
    child.flow.assign(pname, line)
    prologue.append(ir.Assign(info.ir_name, e))
