"""What a call in a kernel means, by its callee: a ``@cube_fn`` helper, inlined
(:mod:`.inlining`); a kernel-language function (:mod:`.intrinsics`); or an error
naming what the kernel meant to call (a method, a NumPy or ``math`` function, a
``@kernel``). :func:`expr_Call` is a call in an expression, :func:`call_statement`
one whose effect is the statement (a barrier, an atomic, a helper).
"""

from __future__ import annotations

import ast
import types as pytypes

from .. import ir
from ..errors import KernelSyntaxError
from . import types as lt
from .builder import LANGUAGE_NAMES, Builder
from .inlining import inline
from .intrinsics import atomic, intrinsic, tma_load
from .memory import EXAMPLE_DECL
from .prints import debug_print
from .tuples import TupleValue
from .typerules import Value

__all__ = ["call_statement", "expr_Call"]

# NumPy and math spell some of the language's functions otherwise.
_HOST_SPELLINGS = {"absolute": "abs", "fabs": "abs", "minimum": "min", "fmin": "min",
                   "maximum": "max", "fmax": "max", "power": "pow", "clip": "clamp",
                   "where": "select", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
                   "arctan2": "atan2", "rint": "round", "around": "round",
                   "fix": "trunc"}


def expr_Call(b: Builder, node: ast.Call) -> Value:
    """A call in an expression: its value."""
    func = node.func
    if isinstance(func, ast.Attribute):
        try:
            base_is_module = isinstance(b.static(func.value), pytypes.ModuleType)
        except KernelSyntaxError:
            base_is_module = False
        if not base_is_module:
            raise b.fail(node, f"method calls (`{b.seg(node)}`) are not supported "
                               "in kernels")
    obj = b.static(func)
    if any(isinstance(a, ast.Starred) for a in node.args):
        raise b.fail(node, "`*` unpacking is not supported in kernels")
    if isinstance(obj, lt.CubeFn):
        value = inline(b, obj, node, want_value=True)
        assert value is not None
        if isinstance(value, TupleValue):
            names = ", ".join("abcdefgh"[:len(value.items)])
            raise b.fail(node, f"cube_fn `{obj.name}` returns {len(value.items)} "
                               f"values, so `{b.seg(node)}` is not one value: unpack "
                               f"them, e.g. `{names} = {b.seg(node)}`")
        return value
    if node.keywords:
        raise b.fail(node, f"keyword arguments are not supported in kernel calls "
                           f"(`{b.seg(node)}`)")
    build = intrinsic(obj)
    if build is not None:
        return build(b, obj, node)
    if isinstance(obj, lt.Intrinsic):
        raise b.fail(node, f"`{obj.name}` cannot be used in an expression")
    counterpart = _kernel_counterpart(obj)
    if counterpart is not None:
        owner = "NumPy" if getattr(obj, "__module__", "").startswith("numpy") else "math"
        if isinstance(obj, type):
            raise b.fail(node, f"`{b.seg(func)}` is a {owner} type, not a kernel "
                               f"cast: use `{counterpart}` from cubecl_server.lang, "
                               f"e.g. {counterpart}(x)")
        raise b.fail(node, f"`{b.seg(func)}` is a {owner} function, which runs in "
                           f"Python, not in kernels: use `{counterpart}` from "
                           "cubecl_server.lang")
    if type(obj).__name__ == "KernelFunction":
        raise b.fail(node, f"`{b.seg(func)}` is a @kernel: kernels cannot call "
                           "kernels; make the shared code a @cube_fn")
    raise b.fail(node, f"call to unknown function `{b.seg(func)}`: a kernel can "
                       "only call kernel-language functions (casts, math functions, "
                       "len, select, atomics, plane ops) and @cube_fn helpers")


def call_statement(b: Builder, node: ast.Call) -> list[ir.Stmt] | None:
    """A call with effects used as a statement (barriers, atomics, helpers), or None."""
    try:
        obj = b.static(node.func)
    except KernelSyntaxError:
        return None
    if obj is lt.sync_cube:
        if node.args or node.keywords:
            raise b.fail(node, "sync_cube() takes no arguments")
        return [ir.Barrier()]
    if obj is lt.sync_plane:
        if node.args or node.keywords:
            raise b.fail(node, "sync_plane() takes no arguments")
        return [ir.SyncPlane()]
    if obj is lt.tma_load:
        return [tma_load(b, node)]
    if obj is lt.debug_print:
        return [debug_print(b, node)]
    if isinstance(obj, lt.AtomicIntrinsic):
        return [atomic(b, obj, node, None)]
    if isinstance(obj, lt.CubeFn):
        inline(b, obj, node, want_value=False)
        return []
    if obj is lt.shared or obj is lt.local_array:
        raise b.fail(node, f"{obj.name}() declares memory: assign it to a name, e.g. "
                           f"`{EXAMPLE_DECL[obj.name]}`")
    return None


def _kernel_counterpart(obj: object) -> str | None:
    """The kernel-language name for a NumPy or ``math`` function or a NumPy scalar type
    (``np.exp`` and ``math.exp``: ``exp``; ``np.minimum``: ``min``; ``np.float32``:
    ``f32``), or None when the language has none."""
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str) or module.split(".")[0] not in ("numpy", "math"):
        return None
    name = getattr(obj, "__name__", "")
    if isinstance(obj, type):
        elem = next((e for e in ir.Elem if e.numpy_name == name), None)
        return None if elem is None else lt.scalar_type(elem).name
    name = _HOST_SPELLINGS.get(name, name)
    ours = getattr(lt, name, None) if name in LANGUAGE_NAMES else None
    return name if isinstance(ours, lt.MathIntrinsic) or ours is lt.select else None
