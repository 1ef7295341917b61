"""Minifloats in the language: what a kernel may do with ``e4m3``/``e5m2`` (load, store,
locals, shared arrays, ``select``, conversions through f32), the errors naming the line
and the fix for what it may not, and the IR after the first pass (``u8`` bits, no
minifloat left). Their values on every backend are the conformance suite's
(``test_minifloats.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers.marks import marked_line

from cubecl_server import ir
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
    Line,
    e4m3,
    e5m2,
    f32,
    f64,
    i32,
    kernel,
    parse_kernel,
    sqrt,
)
from cubecl_server.lowering.passes.minifloats import lower_minifloats


def _convert(a: Array[e4m3], b: Array[e5m2], x: Array[f64], k: Array[i32],
             out: Array[f32]) -> None:
    i = ABSOLUTE_POS
    if i < len(a):
        b[i] = e5m2(a[i])
        out[i] = f32(i32(a[i])) + f32(f64(b[i]))
        a[i] = e4m3(k[i])


def test_conversions_go_through_f32() -> None:
    k = parse_kernel(_convert)
    casts = [(c.x.type, c.type) for c in ir.walk(k.body) if isinstance(c, ir.Cast)]
    E = ir.Elem
    for src, dst in casts:
        if src.is_minifloat or dst.is_minifloat:
            assert E.F32 in (src, dst), f"a cast {src.value} -> {dst.value} skips f32"
    assert (E.E4M3, E.F32) in casts and (E.F32, E.E5M2) in casts


def test_the_first_pass_leaves_no_minifloat() -> None:
    lowered = lower_minifloats(parse_kernel(_convert))
    assert not any(e.is_minifloat for e in lowered.elems)
    assert {p.name: p.elem for p in lowered.params}["a"] is ir.Elem.U8


def _f32_only(out: Array[f32]) -> None:
    out[0] = 1.0


def test_a_kernel_without_minifloats_is_the_same_object() -> None:
    k = parse_kernel(_f32_only)
    assert lower_minifloats(k) is k


def _arith(a: Array[e4m3], out: Array[f32]) -> None:
    out[0] = a[0] * 2.0  # <arith>


def _compare(a: Array[e4m3], out: Array[f32]) -> None:
    if a[0] < a[1]:  # <compare>
        out[0] = 1.0


def _math(a: Array[e4m3], out: Array[f32]) -> None:
    out[0] = sqrt(a[0])  # <math>


def _wide(a: Array[e4m3], x: Array[f64]) -> None:
    a[0] = e4m3(x[0])  # <wide>


def _negate(a: Array[e4m3]) -> None:
    a[0] = -a[1]  # <negate>


@pytest.mark.parametrize(("fn", "tag", "fragment"), [
    (_arith, "arith", "`*` does not take e4m3 `a[0]`: a minifloat is only loaded, stored "
                      "and converted; convert it first, e.g. f32(a[0])"),
    (_compare, "compare", "`<` does not take e4m3"),
    (_math, "math", "sqrt() needs floats, got e4m3 in `sqrt(a[0])`"),
    (_wide, "wide", "write e4m3(f32(x[0])) to round it to f32 first"),
    (_negate, "negate", "does not take e4m3"),
])
def test_what_minifloats_do_not_take_names_the_line(fn: Callable[..., Any], tag: str,
                                                    fragment: str) -> None:
    with pytest.raises(KernelSyntaxError) as info:
        parse_kernel(fn)
    assert fragment in info.value.message
    assert info.value.line == marked_line(__file__, tag)


def test_scalar_and_line_parameters_are_refused_with_the_fix() -> None:
    def scalar(out: Array[e4m3], s: e4m3) -> None:
        out[0] = s

    def lines(out: Array[Line[e4m3]]) -> None:
        out[0] = out[1]

    with pytest.raises(KernelSyntaxError, match=r"take `s: f32` and convert with e4m3\(s\)"):
        kernel(scalar).ir()
    with pytest.raises(KernelSyntaxError, match="lines of minifloats are not built"):
        kernel(lines).ir(line_size=4)
