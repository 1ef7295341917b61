"""Validation of what a launch asks of a device, against what the device declares.

Checked once per kernel, cube dim and comptime values, before anything compiles, so a
launch the device cannot run fails at the caller's line with the limit named, the
same way on every backend, instead of as a backend compiler's message.
"""

from __future__ import annotations

from collections.abc import Callable

from cubecl_server import ir
from cubecl_server.device import MAX_UNITS, Capabilities
from cubecl_server.errors import LaunchError
from cubecl_server.kernel import CubeCount, CubeDim

__all__ = ["check_launch", "cube_count_error", "shared_memory_bytes",
           "uses_barrier", "Locate"]

_INT64 = frozenset({ir.Elem.I64, ir.Elem.U64})

Locate = Callable[[Callable[[object], bool]], "ir.SourceLoc | None"]
"""Where a kernel first uses what a test picks out of its IR nodes (the statement's
file and line), or None where that is not known (IR given directly)."""


def shared_memory_bytes(kernel: ir.Kernel) -> int:
    """The bytes of cube-local memory one cube of ``kernel`` declares."""
    return sum(sh.size * (sh.elem.bits // 8) for sh in kernel.shared)


def uses_barrier(kernel: ir.Kernel) -> bool:
    """Whether ``kernel`` synchronises its cube anywhere (an IR ``Barrier``)."""
    return any(isinstance(n, ir.Barrier) for n in ir.walk(kernel.body))


def check_launch(kernel: ir.Kernel, cube_dim: CubeDim, caps: Capabilities,
                 locate: Locate | None = None) -> None:
    """Raise ``LaunchError`` when the device cannot run ``kernel`` in cubes of
    ``cube_dim``: more units per cube, or more shared memory, than it has, a 64-, 8- or
    16-bit integer type on a device without that width, a line size it lacks, a tensor
    map on a device without the ``tma`` capability, a barrier on a device without
    barriers, or plane operations, ``f64``/``f16`` or an atomic on a type the device
    lacks (these name the line of the first use, found by ``locate``)."""
    if cube_dim.total > caps.max_cube_dim:
        raise LaunchError(
            f"kernel {kernel.name!r}: a cube of {cube_dim.x}x{cube_dim.y}x{cube_dim.z} = "
            f"{cube_dim.total} units exceeds the device's max_cube_dim of "
            f"{caps.max_cube_dim}; use a smaller CubeDim and more cubes")
    if not caps.int64:
        wide = sorted(e.value for e in kernel.elems if e in _INT64)
        if wide:
            raise LaunchError(
                f"kernel {kernel.name!r} uses {' and '.join(wide)}, and the device has no "
                "64-bit integers (Capabilities.int64 is False); use i32/u32")
    for bits, present in ((8, caps.int8), (16, caps.int16)):
        narrow = sorted(e.value for e in kernel.elems if e.is_narrow and e.bits == bits)
        if narrow and not present:
            raise LaunchError(
                f"kernel {kernel.name!r} uses {' and '.join(narrow)}, and the device has no "
                f"{bits}-bit integers (Capabilities.int{bits} is False); use i32/u32")
    mini = sorted(e.value for e in kernel.elems if e.is_minifloat)
    if mini and not caps.int8:
        raise LaunchError(
            f"kernel {kernel.name!r} uses {' and '.join(mini)}, kept as bytes, and the device "
            "has no 8-bit integers (Capabilities.int8 is False); keep the values in f32")
    lines = [p for p in kernel.params if p.line not in caps.line_sizes]
    if lines:
        raise LaunchError(
            f"kernel {kernel.name!r}: line size {lines[0].line} of {lines[0].name!r} is not "
            f"one the device has (Capabilities.line_sizes is {caps.line_sizes}); launch "
            "with another line_size")
    maps = [p for p in kernel.params if p.tensor_map]
    if maps and not caps.tma:
        raise LaunchError(
            f"kernel {kernel.name!r} takes tensor map {maps[0].name!r} "
            f"(TensorMap[{maps[0].elem.value}]), and the device has no tensor memory "
            "accelerator: tensor maps need the `tma` capability (Capabilities.tma is False; "
            "CUDA on sm_90 and later has it)")
    if not caps.barrier and uses_barrier(kernel):
        raise LaunchError(
            f"kernel {kernel.name!r} synchronises its cube (sync_cube), and the device has "
            "no barriers (Capabilities.barrier is False)")
    used = shared_memory_bytes(kernel)
    if used > caps.shared_memory_bytes:
        raise LaunchError(
            f"kernel {kernel.name!r}: its shared arrays need {used} bytes per cube, the "
            f"device has {caps.shared_memory_bytes} "
            f"({', '.join(f'{s.name}: {s.size} x {s.elem.value}' for s in kernel.shared)})")
    _check_features(kernel, caps, locate)


def _check_features(kernel: ir.Kernel, caps: Capabilities, locate: Locate | None) -> None:
    """Raise ``LaunchError`` for the first capability ``kernel`` uses that the device
    lacks, at the kernel's file and line of its first use."""
    for what, test, fix in _missing_features(kernel, caps):
        if not any(test(n) for n in ir.walk(kernel.body)):
            continue
        where = (locate(test) if locate is not None else None) or kernel.loc
        at = f"{where}: " if where is not None else ""
        raise LaunchError(f"{at}kernel {kernel.name!r} uses {what}; {fix}")


_Feature = tuple[str, Callable[[object], bool], str]
_CHOOSE = ("choose another path by `client.capabilities` in the caller (docs/language.md, "
           "\"Choosing a path by the device's capabilities\")")


def _missing_features(kernel: ir.Kernel, caps: Capabilities) -> list[_Feature]:
    """What the device lacks, each with a test picking the IR nodes that use it and
    the fix."""
    out: list[_Feature] = []
    if caps.plane_size is None:
        out.append(("plane operations, and the device has none (Capabilities.plane_size "
                    "is None)", lambda n: isinstance(n, ir.PlaneOp | ir.SyncPlane),
                    _CHOOSE))
    if not caps.debug_print:
        out.append(("debug_print, and the device cannot print from a kernel "
                    "(Capabilities.debug_print is False)",
                    lambda n: isinstance(n, ir.DebugPrint),
                    "remove the debug_print, or debug on the cpu backend"))
    for elem, present, field in ((ir.Elem.F64, caps.f64, "f64"),
                                 (ir.Elem.F16, caps.f16, "f16")):
        if not present:
            out.append((f"{elem.value}, and the device has no {elem.value} arithmetic "
                        f"(Capabilities.{field} is False)",
                        lambda n, e=elem: _of_type(n, e), f"use f32, or {_CHOOSE}"))
    elems = {p.name: p.elem for p in kernel.params if p.array}
    elems.update({sh.name: sh.elem for sh in kernel.shared})

    def lacking(n: object) -> bool:
        if not isinstance(n, ir.AtomicStmt):
            return False
        elem = elems.get(n.array)
        # Only an f32 add is the f32 capability: the others are loops on u32 bits.
        if elem is ir.Elem.F32 and n.op is not ir.AtomicOp.ADD:
            elem = ir.Elem.U32
        return elem not in caps.atomics

    held = ", ".join(sorted(e.value for e in caps.atomics)) or "none"
    out.append((f"an atomic on a type the device has no atomics for (Capabilities.atomics "
                f"holds {held})", lacking, _CHOOSE))
    return out


def _of_type(n: object, elem: ir.Elem) -> bool:
    """Whether IR node ``n`` computes, reads or writes a value of ``elem``."""
    t = getattr(n, "type", None)
    return isinstance(t, ir.Type) and ir.elem_of(t) is elem  # type: ignore[arg-type]


def cube_count_error(kernel: ir.Kernel, count: CubeCount, dim: CubeDim,
                     caps: Capabilities) -> str:
    """Why a launch of ``count`` cubes of ``dim`` is past what the device or the
    language allows (the caller found that it is), naming the limit."""
    grid = (count.x, count.y, count.z)
    for axis, n, most in zip("xyz", grid, caps.max_cube_count, strict=True):
        if n > most:
            return (f"kernel {kernel.name!r}: a cube count of {grid} has {n} cubes along "
                    f"{axis}, past the device's max_cube_count of {caps.max_cube_count}; "
                    "spread the cubes over more axes or launch several times")
    return (f"kernel {kernel.name!r}: {grid} cubes of {dim.total} units are "
            f"{count.total * dim.total} units, past the {MAX_UNITS} a launch may have "
            "(positions are u32); launch several times")
