"""Structs as kernel parameters in the language: a struct parameter is its fields, each
an IR parameter ``<param>_<field>`` in its place; a helper takes a struct whole; a
launch passes an instance. The errors name the line (or the parameter) and the fix.
Their values on every backend are the conformance suite's (``test_structs.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers.marks import marked_line

from cubecl_server import ir
from cubecl_server.client import create_client
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
    Line,
    cube_fn,
    f32,
    kernel,
    kernel_signature,
    parse_kernel,
    struct,
    u32,
)


@struct
class Pair:
    """Two arrays and a length."""

    xs: Array[f32]
    ys: Array[Line[f32]]
    n: u32


@struct
class Other:
    """A struct of the same fields as Pair's first, of another class."""

    xs: Array[f32]


def _sum(p: Pair, out: Array[f32]) -> None:
    i = ABSOLUTE_POS
    if i < p.n:
        out[i] = p.xs[i] + p.ys[i][0]


def test_a_struct_parameter_is_its_fields_in_its_place() -> None:
    sig = kernel_signature(_sum)
    assert [(p.name, p.elem, p.array) for p in sig.params] == [
        ("p_xs", ir.Elem.F32, True), ("p_ys", ir.Elem.F32, True), ("p_n", ir.Elem.U32, False),
        ("out", ir.Elem.F32, True)]
    assert sig.inputs == ("p", "out") and sig.structs == {"p": (Pair, ("xs", "ys", "n"))}
    assert sig.lines == ("p_ys",)
    k = parse_kernel(_sum, {"line_size": 4})
    assert {n.array for n in ir.walk(k.body) if isinstance(n, ir.Load)} == {"p_xs", "p_ys"}


def test_a_launch_passes_an_instance_and_refuses_anything_else() -> None:
    c = create_client("cpu")
    n = 70
    xs = np.arange(n, dtype=np.float32)
    ys = np.full(n * 4, 0.5, np.float32)
    out = c.empty(n, np.float32)
    k = kernel(_sum)
    k.launch(c, 2, 64, Pair(c.create(xs), c.create(ys), np.uint32(n)), out, line_size=4)
    np.testing.assert_array_equal(c.read(out), xs + 0.5)
    with pytest.raises(TypeError, match=r"parameter 'p' is a struct Pair, got Other; pass "
                                        r"Pair\(xs=..., ys=..., n=...\)"):
        k.launch(c, 2, 64, Other(c.create(xs)), out, line_size=4)
    with pytest.raises(TypeError, match=r"takes 2 arguments \(p, out\), got 1"):
        k.launch(c, 2, 64, out, line_size=4)


@cube_fn
def _first(p: Pair) -> f32:
    return p.xs[0]


@cube_fn
def _first_other(o: Other) -> f32:
    return o.xs[0]


def _no_field(p: Pair, out: Array[f32]) -> None:
    out[0] = p.zs[0]  # <no-field>


def _whole(p: Pair, out: Array[f32]) -> None:
    out[0] = p  # <whole>


def _wrong_struct(p: Pair, out: Array[f32]) -> None:
    out[0] = _first_other(p)  # <wrong-struct>


def _not_a_struct(p: Pair, out: Array[f32]) -> None:
    out[0] = _first(out)  # <not-a-struct>


@pytest.mark.parametrize(("fn", "tag", "fragment"), [
    (_no_field, "no-field", "struct `p` has no field `zs`; its fields are xs, ys, n"),
    (_whole, "whole", "struct `p` is used by its fields (p.xs, p.ys, p.n) or passed whole "
                      "to a cube_fn, nothing else"),
    (_wrong_struct, "wrong-struct", "argument `o` of cube_fn `_first_other` is a struct "
                                    "Other, got struct Pair"),
    (_not_a_struct, "not-a-struct", "argument `p` of cube_fn `_first` is a struct Pair, "
                                    "got `out`"),
])
def test_misuse_names_the_line(fn: Callable[..., Any], tag: str, fragment: str) -> None:
    with pytest.raises(KernelSyntaxError) as info:
        parse_kernel(fn)
    assert fragment in info.value.message
    assert info.value.line == marked_line(__file__, tag)


def test_a_field_named_like_another_parameter_is_refused() -> None:
    def clash(p: Pair, p_xs: Array[f32]) -> None:
        p_xs[0] = p.xs[0]

    with pytest.raises(KernelSyntaxError, match="field `xs` of struct `p` is parameter "
                                                "`p_xs` in the kernel"):
        kernel_signature(clash)
