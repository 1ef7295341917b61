"""The kernel set by name: every kernel the compile-only tests lower and finalize
(``test_compile_only.py``), from every topic of the package.
"""

# No `from __future__ import annotations` here, as in every module of the package: the
# package's docstring says why.

from collections.abc import Callable
from typing import Any

from cubecl_server import ir
from cubecl_server.lang import CubeDim, KernelFunction

from .language_more import (
    for_in,
    plane_rest,
    printing,
    slices,
    uniform_load,
    weak_tiled_matmul,
    weak_tree_sum,
)
from .lines import line_floats, line_gather, line_ints, line_lanes, plane_lines
from .minifloats import minifloat_ops
from .narrow import narrow_casts, narrow_ops
from .operations import (
    atomic_bits,
    bits_more,
    builtins,
    control_flow,
    math_more,
    plane_more,
    short_circuit,
)
from .programs import (
    comptime_poly,
    cube_fn_kernel,
    histogram,
    matmul,
    reduce_sum,
    saxpy,
    scan,
    softmax,
    transpose,
    unrolled_sum,
)
from .structs import struct_kernel
from .views import plane_sync, strided, view_edges

__all__ = ["KERNEL_SET"]

KERNEL_SET: dict[str, tuple[Callable[[], KernelFunction], dict[str, Any], CubeDim]] = {
    "saxpy": (lambda: saxpy, {}, CubeDim(64)),
    "transpose": (lambda: transpose, {}, CubeDim(16, 16)),
    "reduce_sum": (lambda: reduce_sum, {"BLOCK": 128}, CubeDim(128)),
    "matmul": (lambda: matmul, {"TILE": 16}, CubeDim(16, 16)),
    "histogram": (lambda: histogram, {}, CubeDim(64)),
    "softmax": (lambda: softmax, {"BLOCK": 64}, CubeDim(64)),
    "scan": (lambda: scan, {"BLOCK": 128}, CubeDim(128)),
    "comptime_poly": (lambda: comptime_poly, {"POWER": 3, "NEGATE": True, "SCALE": 2.0},
                      CubeDim(64)),
    "unrolled_sum": (lambda: unrolled_sum, {"N": 4}, CubeDim(64)),
    "cube_fn": (cube_fn_kernel, {}, CubeDim(64)),
    "control_flow": (lambda: control_flow, {}, CubeDim(64)),
    "builtins": (lambda: builtins, {}, CubeDim(4, 2, 2)),
    "short_circuit": (lambda: short_circuit, {}, CubeDim(64)),
    "weak_tree_sum": (lambda: weak_tree_sum, {"BLOCK": 64}, CubeDim(64)),
    "weak_tiled_matmul": (lambda: weak_tiled_matmul, {"TILE": 8}, CubeDim(8, 8)),
    "math_more_f32": (lambda: math_more(ir.Elem.F32), {}, CubeDim(64)),
    "math_more_f64": (lambda: math_more(ir.Elem.F64), {}, CubeDim(64)),
    "bits_more_i32": (lambda: bits_more(ir.Elem.I32), {}, CubeDim(64)),
    "bits_more_u64": (lambda: bits_more(ir.Elem.U64), {}, CubeDim(64)),
    "atomic_bits_i32": (lambda: atomic_bits(ir.Elem.I32), {}, CubeDim(64)),
    "atomic_bits_i64": (lambda: atomic_bits(ir.Elem.I64), {}, CubeDim(64)),
    "plane_more": (lambda: plane_more, {}, CubeDim(64)),
    "narrow_ops_i8": (lambda: narrow_ops(ir.Elem.I8), {}, CubeDim(64)),
    "narrow_ops_u16": (lambda: narrow_ops(ir.Elem.U16), {}, CubeDim(64)),
    "narrow_casts_u8": (lambda: narrow_casts(ir.Elem.U8), {}, CubeDim(64)),
    "narrow_casts_i16": (lambda: narrow_casts(ir.Elem.I16), {}, CubeDim(64)),
    **{f"line_floats_f32_x{n}": (lambda: line_floats(ir.Elem.F32), {"line_size": n},
                                 CubeDim(64)) for n in (2, 4, 8, 16)},
    "line_floats_f64_x4": (lambda: line_floats(ir.Elem.F64), {"line_size": 4}, CubeDim(64)),
    "line_ints_i32_x4": (lambda: line_ints(ir.Elem.I32), {"line_size": 4}, CubeDim(64)),
    "line_ints_u64_x8": (lambda: line_ints(ir.Elem.U64), {"line_size": 8}, CubeDim(64)),
    "line_gather_x4": (lambda: line_gather, {"line_size": 4}, CubeDim(64)),
    "line_lanes_x4": (lambda: line_lanes, {"line_size": 4}, CubeDim(64)),
    "plane_lines_x4": (lambda: plane_lines, {"line_size": 4}, CubeDim(64)),
    "minifloats_e4m3": (lambda: minifloat_ops(ir.Elem.E4M3), {}, CubeDim(64)),
    "minifloats_e5m2": (lambda: minifloat_ops(ir.Elem.E5M2), {}, CubeDim(64)),
    "struct_kernel": (lambda: struct_kernel, {}, CubeDim(64)),
    "printing": (lambda: printing, {}, CubeDim(64)),
    "for_in": (lambda: for_in, {"W": 3}, CubeDim(64)),
    "slices": (lambda: slices, {}, CubeDim(64)),
    "uniform_load": (lambda: uniform_load, {}, CubeDim(64)),
    "plane_rest": (lambda: plane_rest, {}, CubeDim(64)),
    "strided": (lambda: strided, {}, CubeDim(64)),
    "view_edges": (lambda: view_edges, {}, CubeDim(64)),
    "plane_sync": (lambda: plane_sync, {}, CubeDim(64)),
}
"""Every kernel of the set by name: how to get it, its comptime values, its cube dim
(what the compile-only tests lower and finalize)."""
