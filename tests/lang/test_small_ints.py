"""The 8- and 16-bit integer types in the core: what the frontend makes of them and
refuses by name, what the IR checker refuses, the capabilities that gate a launch, and
arrays of them from NumPy. (Their arithmetic is checked on every backend by the
conformance suite's test_small_ints.py.)"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import create_client, elem_of_dtype
from cubecl_server.errors import CompilationError, KernelSyntaxError, LaunchError
from cubecl_server.ir_check import check_kernel
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
    CubeDim,
    Line,
    bitcast,
    count_ones,
    f32,
    i8,
    i16,
    kernel,
    plane_sum,
    u8,
    u16,
    u32,
)
from cubecl_server.validation import check_launch

E = ir.Elem


@kernel
def mixed(a: Array[u8], b: Array[i16], k: i8, out: Array[f32]) -> None:
    """A u8 index, an i16 element, an i8 scalar, literals of them and a u16 local."""
    i = ABSOLUTE_POS
    if i < len(out):
        j = a[i]
        acc = u16(300) + u16(j)
        out[i] = f32(b[j]) + f32(k * 2) + f32(acc)


def test_narrow_values_keep_their_types_and_indices_widen() -> None:
    k = mixed.ir()
    assert [p.elem for p in k.params] == [E.U8, E.I16, E.I8, E.F32]
    assert {loc.elem for loc in k.locals} >= {E.U8, E.U16}
    casts = [n for n in ir.walk(k.body) if isinstance(n, ir.Cast)]
    # `b[j]` with j: u8 is indexed at u32(j), as C promotes an index.
    assert any(c.type is E.U32 and c.x.type is E.U8 for c in casts)
    consts = {(n.value, n.type) for n in ir.walk(k.body) if isinstance(n, ir.Const)}
    assert (2, E.I8) in consts and (300, E.U16) in consts
    check_kernel(k, "cpu")


def big_literal(a: Array[u8], o: Array[u32]) -> None:
    a[0] = a[1] + 300


def mixed_widths(a: Array[u8], o: Array[u32]) -> None:
    o[0] = a[0] + o[1]


def narrow_loop(a: Array[u8], o: Array[u32]) -> None:
    for q in range(a[0]):
        o[0] = u32(q)


def narrow_bits(a: Array[u8], o: Array[u32]) -> None:
    o[0] = count_ones(a[0])


def narrow_plane(a: Array[u8], o: Array[u32]) -> None:
    a[0] = plane_sum(a[0])


def narrow_bitcast(a: Array[u8], o: Array[u32]) -> None:
    o[0] = bitcast(a[0], u32)


def bitcast_to_narrow(a: Array[u8], o: Array[u32]) -> None:
    a[0] = bitcast(1, u8)


@pytest.mark.parametrize(("fn", "match"), [
    (big_literal, r"the constant 300 does not fit in u8 \(0\.\.255\)"),
    (mixed_widths, r"u8 vs u32"),
    (narrow_loop, r"range\(\) counts with i32, u32, i64 or u64, but `q` would be u8"),
    (narrow_bits, r"count_ones\(\) takes i32, u32, i64 or u64, not u8"),
    (narrow_plane, r"plane_sum\(\) takes no 8- or 16-bit integer, got u8"),
    (narrow_bitcast, r"bitcast\(\) takes f32, i32, u32, f64, i64 or u64, not u8"),
    (bitcast_to_narrow, r"the second argument of bitcast\(\) must be one of"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_what_narrow_types_do_not_take_is_refused_by_name(fn: object, match: str) -> None:
    with pytest.raises(KernelSyntaxError, match=match):
        kernel(fn).ir()


def test_lines_of_narrow_types_are_refused() -> None:
    with pytest.raises(TypeError, match=r"Line\[i16\]: lines of 8- and 16-bit integers"):
        Line[i16]


def _kernel(*body: ir.Stmt, local: ir.Elem | None = None) -> ir.Kernel:
    locals_ = (ir.Local("n", local),) if local is not None else ()
    return ir.Kernel("k", (ir.Param("a", E.U8, True), ir.Param("o", E.U32, True)),
                     locals_, (), body)


def test_the_checker_refuses_narrow_indices_loops_and_bit_functions() -> None:
    x = ir.Load("a", ir.Const(0, E.U32), E.U8)
    bad = {
        "the index is u8": _kernel(ir.Store("a", x, x)),
        "the loop variable 'n' is u8": _kernel(
            ir.For("n", ir.Const(0, E.U8), ir.Const(3, E.U8), ir.Const(1, E.U8), ()),
            local=E.U8),
        "'count_ones' takes i32, u32, i64 or u64, not u8": _kernel(ir.Store(
            "o", ir.Const(0, E.U32), ir.Math(ir.MathFn.COUNT_ONES, (x,), E.U32))),
    }
    for why, k in bad.items():
        with pytest.raises(CompilationError, match=why):
            check_kernel(k, "cpu")


def test_each_width_is_a_capability_checked_at_launch() -> None:
    k = mixed.ir()
    caps = create_client("cpu").capabilities
    assert caps.int8 and caps.int16
    check_launch(k, CubeDim(32), caps)
    with pytest.raises(LaunchError, match=r"'mixed' uses i8 and u8, and the device has no "
                                          r"8-bit integers \(Capabilities.int8 is False\)"):
        check_launch(k, CubeDim(32), dataclasses.replace(caps, int8=False))
    with pytest.raises(LaunchError, match=r"uses i16 and u16, .* no 16-bit integers"):
        check_launch(k, CubeDim(32), dataclasses.replace(caps, int16=False))


def test_numpy_arrays_of_narrow_integers_make_buffers_of_them() -> None:
    assert [elem_of_dtype(d) for d in (np.int8, np.uint8, np.int16, np.uint16)] == [
        E.I8, E.U8, E.I16, E.U16]
    c = create_client("cpu")
    data = np.array([-128, 127, 0, -1, 5], np.int8)  # odd length, the extremes
    h = c.create(data)
    assert h.elem is E.I8 and h.shape == (5,)
    np.testing.assert_array_equal(c.read(h), data)
