"""Arrays in a kernel's code: the array parameters, the shared and local arrays it
declares (``tile = shared(f32, 256)``, ``acc = local_array(f32, 8)``), the slices it
takes of them (``s = a[lo:hi]``, :mod:`.slices`), and the indices into them.
"""

from __future__ import annotations

import ast
import builtins

from .. import ir
from .builder import Builder
from .slices import SliceRef, bounds, window_index
from .typerules import TypeRuleError, Value, Weak, const_of, fold_cast, type_name
from .uniformity import Marker

__all__ = ["EXAMPLE_DECL", "array_kind", "array_of", "array_ref", "declare_array",
           "declare_slice", "index_into", "make_slice", "shape_or_stride",
           "shared_or_param_elem", "slice_of", "subscript"]

EXAMPLE_DECL = {"shared": "tile = shared(f32, 256)", "local_array": "acc = local_array(f32, 8)"}
"""What each memory declaration looks like, for the messages that show one."""


def array_ref(b: Builder, base: ast.expr) -> tuple[str, ir.Type] | None:
    """The IR name and element type (a line type, for a line array) of the array
    parameter, shared or local array ``base`` names, or None."""
    if isinstance(base, ast.Name) and base.id not in b.locals:
        sh = b.shared_arrays.get(base.id)
        if sh is not None:
            return sh.name, sh.elem
        p = b.params.get(base.id)
        if p is not None and p.array:
            return p.name, p.value_type
    return None


def shared_or_param_elem(b: Builder, ir_array: str) -> ir.Elem:
    """The element type of an array by its IR name."""
    for sh in (*b.unit.shared, *b.unit.local_arrays):
        if sh.name == ir_array:
            return sh.elem
    for p in b.params.values():
        if p.name == ir_array and p.array:
            return p.elem
    raise AssertionError(ir_array)


def array_kind(arr: ir.SharedArray | ir.LocalArray) -> str:
    """What a kernel calls a declared array, in messages."""
    return "shared array" if isinstance(arr, ir.SharedArray) else "local array"


# ---------------------------------------------------------------- declarations


def declare_array(b: Builder, shared: bool, name: str, call: ast.Call, node: ast.stmt
                  ) -> list[ir.Stmt]:
    """``name = shared(T, size)``: a SharedArray of the kernel (and a marker, so the
    uniformity analysis can check where it was declared); ``name =
    local_array(T, size)``: a LocalArray."""
    fn, kind = ("shared", "shared array") if shared else ("local_array", "local array")
    if call.keywords or len(call.args) != 2:
        raise b.fail(call, f"{fn}() takes 2 arguments: {fn}(T, size), e.g. "
                           f"{fn}(f32, 256)")
    if name in b.shared_arrays:
        raise b.fail(node, f"{kind} `{name}` is declared twice: a {kind} is declared "
                           "once (it is the same memory on every path)")
    if name in b.locals or name in b.params or name in b.comptime \
            or name in b.comptime_types:
        raise b.fail(node, f"`{name}` is already a variable or parameter; a {kind} "
                           "needs a name of its own")
    t_node, size_node = call.args
    t = b.static_type(t_node)
    if t is None:
        raise b.fail(t_node, f"the first argument of {fn}() must be a scalar type "
                             f"such as f32, not `{b.seg(t_node)}`")
    size = b.expr(size_node)
    if not isinstance(size, (Weak, ir.Const)) or isinstance(size.value, bool) \
            or not isinstance(size.value, int):
        raise b.fail(size_node, f"the size of a {kind} must be an integer "
                                f"constant (a literal, global or comptime value), not "
                                f"`{b.seg(size_node)}`{b.describe_vars(size_node)}")
    if size.value <= 0:
        raise b.fail(size_node, f"the size of a {kind} must be positive, got "
                                f"{size.value}")
    if shared:
        arr: ir.SharedArray | ir.LocalArray = ir.SharedArray(
            b.ir_name(name), t.elem, int(size.value))
        b.unit.shared.append(arr)
    else:
        arr = ir.LocalArray(b.ir_name(name), t.elem, int(size.value))
        b.unit.local_arrays.append(arr)
    b.unit.taken.add(arr.name)
    b.shared_arrays[name] = arr
    # Only shared memory is the same for every unit: the marker lets the
    # uniformity analysis check where it was declared.
    return [Marker(name)] if shared else []  # type: ignore[list-item]


def declare_slice(b: Builder, name: str, sub: ast.Subscript, node: ast.stmt) -> list[ir.Stmt]:
    """``name = a[lo:hi]``: ``name`` becomes a view of ``a`` (an array, a shared or
    local array, or a slice); assigned again, it must view the same array."""
    old = b.slices.get(name)
    if old is None and (name in b.locals or name in b.params
                        or name in b.shared_arrays or name in b.comptime
                        or name in b.comptime_types):
        raise b.fail(node, f"`{name}` is already a variable or an array; a slice "
                           "needs a name of its own")
    if name in b.loop_vars:
        raise b.fail(node, f"cannot assign to `{name}` inside the loop it counts")
    ref, stmts = make_slice(b, sub, name, old)
    b.slices[name] = ref
    b.flow.assign(name, b.src.line(node))
    return stmts


def make_slice(b: Builder, sub: ast.Subscript, name: str, old: SliceRef | None = None
               ) -> tuple[SliceRef, list[ir.Stmt]]:
    """The slice ``sub`` (``a[lo:hi]``) and the statements that set its start and
    length; into ``old``'s locals when given (a slice name assigned again)."""
    sl = sub.slice
    assert isinstance(sl, ast.Slice)
    if sl.step is not None:
        raise b.fail(sub, f"a slice takes no step: `{b.seg(sub)}` (write "
                          "`a[lo:hi]`)")
    base = sub.value
    parent = slice_of(b, base)
    ref = array_ref(b, base)
    if parent is None and ref is None:
        raise b.fail(sub, f"`{b.seg(base)}` is not an array: only array parameters, "
                          "shared and local arrays and slices can be sliced")
    if parent is not None:
        array, elem, is_param, local = parent.array, parent.elem, parent.param, parent.local
        full: ir.Expr = parent.length_var
    else:
        assert ref is not None
        array, t = ref
        if isinstance(t, ir.Line):
            raise b.fail(sub, f"`{b.seg(base)}` is read a line at a time: slices "
                              "are of arrays of elements")
        elem = t
        decl = b.shared_arrays.get(base.id) if isinstance(base, ast.Name) else None
        is_param, local = decl is None, isinstance(decl, ir.LocalArray)
        full = ir.Len(array) if decl is None else ir.Const(decl.size, ir.Elem.U32)
    lo = ir.Const(0, ir.Elem.U32) if sl.lower is None else slice_bound(b, sl.lower, array)
    hi = full if sl.upper is None else slice_bound(b, sl.upper, array)
    if old is not None and old.array != array:
        raise b.fail(sub, f"`{name}` is a slice of `{old.array}` (line {old.line}); a "
                          f"slice name views one array, not `{array}` too")
    line = b.src.line(sub)
    if old is None:
        old = SliceRef(array, elem, b.temp(f"{name}_start", ir.Elem.U32).name,
                       b.temp(f"{name}_len", ir.Elem.U32).name, is_param, local, line)
    start, length = bounds(lo, hi, parent)
    # The length goes through a temporary: `s = s[1:]` computes both from the old s.
    tmp = b.temp(f"{name}_len_new", ir.Elem.U32)
    return old, [ir.Assign(tmp.name, length), ir.Assign(old.start, start),
                 ir.Assign(old.length, tmp)]


def slice_bound(b: Builder, node: ast.expr, array: str) -> ir.Expr:
    """One bound of a slice, an integer index, as ``u32``."""
    v = index_into(b, node, array)
    if isinstance(v, ir.Const):
        return ir.Const(int(v.value), ir.Elem.U32)
    b.meet(v, ir.Elem.U32, node)
    return v if v.type is ir.Elem.U32 else ir.Cast(v, ir.Elem.U32)


def slice_of(b: Builder, base: ast.expr) -> SliceRef | None:
    """The slice ``base`` names, or None."""
    if isinstance(base, ast.Name) and base.id not in b.locals:
        ref = b.slices.get(base.id)
        if ref is not None and base.id in b.assigned \
                and not b.flow.is_assigned(base.id):
            raise b.fail(base, b.flow.unassigned(base.id))
        return ref
    return None


# ---------------------------------------------------------------- indexing


def array_of(b: Builder, node: ast.Subscript) -> tuple[str, ir.Type]:
    """The array a subscript indexes, and its element type."""
    ref = array_ref(b, node.value)
    if ref is not None:
        return ref
    if isinstance(node.value, ast.Call):
        b.expr(node.value)  # a misplaced shared() or a bad call says so first
    raise b.fail(node, f"`{b.seg(node.value)}` is not an array: only array "
                       "parameters, shared arrays and local arrays can be indexed")


def subscript(b: Builder, node: ast.Subscript) -> tuple[str, ir.Type, ir.Expr]:
    """The array ``node`` (``a[i]``, ``s[i]`` of a slice) indexes, its element type
    and the index into it."""
    ref = slice_of(b, node.value)
    if ref is None:
        array, elem = array_of(b, node)
        return array, elem, index_into(b, node.slice, array)
    if isinstance(node.slice, ast.Tuple):
        raise b.fail(node, f"slice `{b.seg(node.value)}` has one dimension: index "
                           "it with one integer")
    index = index_into(b, node.slice, ref.array)
    return ref.array, ref.elem, window_index(ref, index)


def index_into(b: Builder, node: ast.expr, array: str) -> ir.Expr:
    """An index into ``array`` (its IR name): an integer of any integer type, or for
    an array parameter a tuple of them, one per dimension (see :func:`multi_index`)."""
    if isinstance(node, ast.Tuple):
        return multi_index(b, node, array)
    if isinstance(node, ast.Slice):
        raise b.fail(node, "a slice `a[lo:hi]` is a view to assign to a name "
                           "(`s = a[lo:hi]`) or pass to a cube_fn, then index")
    v = b.expr(node)
    if isinstance(v, Weak):
        if v.kind != "int":
            raise b.fail(node, f"an index must be an integer, got {type_name(v)} "
                               f"`{b.seg(node)}`")
        if int(v.value) < 0:
            raise b.fail(node, f"negative index `{b.seg(node)}`: kernels do not "
                               "index from the end")
        try:
            return const_of(v, ir.Elem.I32)
        except TypeRuleError as err:
            b.rule_error(node, err, node)
    if not isinstance(v.type, ir.Elem) or not v.type.is_int:
        raise b.fail(node, f"an index must be an integer, got {v.type.value} in "
                           f"`{b.seg(node)}`{b.describe_vars(node)}; cast it, "
                           f"e.g. u32({b.seg(node)})")
    if v.type.is_narrow:  # indexed as C would, after promotion (the IR indexes wide)
        return ir.Cast(v, ir.Elem.I32 if v.type.is_signed else ir.Elem.U32)
    return v


def multi_index(b: Builder, node: ast.Tuple, array: str) -> ir.Expr:
    """``a[i, j, ...]`` of an array parameter: the element at ``i * a.stride[0] + j *
    a.stride[1] + ...``. The sum is computed in the widest type of the typed indices
    (signed if any is; u32 when all are literals or weak, which take that type), so a
    negative index stays negative and, in checked mode, reads 0."""
    if array not in b.params:
        raise b.fail(node, f"`{array}` has one dimension: index it with one integer")
    if any(p.name == array and p.line > 1 for p in b.params.values()):
        raise b.fail(node, f"`{array}` is read a line at a time: index it with one "
                           "integer, the line's position")
    if not node.elts:
        raise b.fail(node, "an index needs at least one integer")
    parts = [index_into(b, e, array) for e in node.elts]
    typed = [p.type for p in parts if not isinstance(p, ir.Const)
             and b.weak_of(p) is None] or [ir.Elem.U32]
    bits = builtins.max(t.bits for t in typed)
    signed = builtins.any(t.is_signed for t in typed)
    t = {(32, False): ir.Elem.U32, (32, True): ir.Elem.I32, (64, False): ir.Elem.U64,
         (64, True): ir.Elem.I64}[bits, signed]
    flat: ir.Expr | None = None
    for dim, (p, e) in enumerate(zip(parts, node.elts, strict=True)):
        if isinstance(p, ir.Const):
            try:
                p = fold_cast(p.value, t)
            except TypeRuleError as err:
                b.rule_error(e, err, e)
        else:
            b.meet(p, t, e)
            if p.type is not t:
                p = ir.Cast(p, t)
        stride: ir.Expr = ir.Stride(array, dim)
        if t is not ir.Elem.U32:
            stride = ir.Cast(stride, t)
        term = ir.Binary(ir.BinOp.MUL, p, stride, t)
        flat = term if flat is None else ir.Binary(ir.BinOp.ADD, flat, term, t)
    assert flat is not None
    return flat


def shape_or_stride(b: Builder, attr: ast.Attribute, node: ast.Subscript) -> Value:
    """``a.shape[d]`` / ``a.stride[d]`` of an array parameter (``u32``)."""
    ref = array_ref(b, attr.value)
    if ref is None or ref[0] not in {p.name for p in b.params.values()}:
        raise b.fail(node, f"`.{attr.attr}` needs an array parameter, not "
                           f"`{b.seg(attr.value)}`")
    d = b.expr(node.slice) if not isinstance(node.slice, ast.Slice) else None
    if not isinstance(d, (Weak, ir.Const)) or isinstance(d.value, bool) \
            or not isinstance(d.value, int) or d.value < 0:
        raise b.fail(node, f"the dimension in `{b.seg(node)}` must be a constant, "
                           "non-negative integer (a literal or comptime value)")
    cls = ir.Shape if attr.attr == "shape" else ir.Stride
    return cls(ref[0], int(d.value))
