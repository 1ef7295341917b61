"""The device checks made before a word is written: a kernel that needs a feature or a
limit the device lacks is refused with a ``CompilationError`` naming it."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NoReturn

from cubecl_server import ir
from cubecl_vulkan.native import ShaderFeatures

__all__ = ["check_device"]

Elem = ir.Elem
Fail = Callable[[str], NoReturn]


def check_device(kernel: ir.Kernel, dim: tuple[int, int, int], f: ShaderFeatures,
                 fail: Fail) -> None:
    """Refuse (``fail``) what a device with features ``f`` cannot run of ``kernel`` (in
    the core IR) in work groups of ``dim``: its limits, then each type it computes with
    or keeps in memory."""
    total = math.prod(dim)
    if total > f.max_invocations:
        fail(f"cube dim {dim} has {total} units; the device allows "
             f"{f.max_invocations} (maxComputeWorkGroupInvocations)")
    for axis, (d, m) in enumerate(zip(dim, f.max_workgroup_size, strict=False)):
        if d > m:
            fail(f"cube dim {dim}: axis {'xyz'[axis]} exceeds the device's "
                 f"maxComputeWorkGroupSize {tuple(f.max_workgroup_size)}")
    shared = sum(sh.size * (sh.elem.bits // 8) for sh in kernel.shared)
    if shared > f.max_shared_bytes:
        fail(f"shared arrays take {shared} bytes; the device allows "
             f"{f.max_shared_bytes} (maxComputeSharedMemorySize)")
    seen: set[tuple[Elem, bool]] = set()

    def use(t: ir.Type, memory: bool, what: str | ir.Expr) -> None:
        elem = ir.elem_of(t)
        if (elem, memory) not in seen:  # an expression is formatted only then
            seen.add((elem, memory))
            text = what if isinstance(what, str) else f"`{ir.format_expr(what)}`"
            _use(f, elem, text, memory, fail)

    for p in kernel.params:
        use(p.elem, p.array, f"parameter {p.name!r}")
    for loc in kernel.locals:
        use(loc.elem, False, f"local {loc.name!r}")
    for sh in kernel.shared:
        use(sh.elem, True, f"shared array {sh.name!r}")
    for la in kernel.local_arrays:
        use(la.elem, True, f"local array {la.name!r}")
    for n in ir.walk(kernel.body):
        t = getattr(n, "type", None)
        if t is not None:
            use(t, False, n)


def _use(f: ShaderFeatures, elem: Elem, what: str, memory: bool, fail: Fail) -> None:
    if elem is Elem.F64 and not f.float64:
        fail(f"{what} is f64, but the device lacks shaderFloat64")
    if elem in (Elem.I64, Elem.U64) and not f.int64:
        fail(f"{what} is {elem.value}, but the device lacks shaderInt64")
    if elem is Elem.F16 and not f.float16:
        fail(f"{what} is f16, but the device lacks shaderFloat16 with 16-bit storage")
    if elem.is_narrow and elem.bits == 8 and not f.bool_storage:
        fail(f"{what} is {elem.value}, but the device lacks shaderInt8 with "
             "storageBuffer8BitAccess")
    if elem.is_narrow and elem.bits == 16 and not f.int16:
        fail(f"{what} is {elem.value}, but the device lacks shaderInt16 with "
             "storageBuffer16BitAccess")
    if elem is Elem.BOOL and memory and not f.bool_storage:
        fail(f"{what} holds bool, which needs storageBuffer8BitAccess")
