"""Tuples in kernels: unpacking assignments (``row, col = ...``, ``a, b = b, a``,
elements and nested targets) and helpers returning several values
(``q, r = divmod_fn(x, y)``), against NumPy on the cpu backend, and the uses refused
with a message naming the line and the fix."""

# Kernel bodies are compiled, never run: unpacked names that look unused are the IR
# under test.
# ruff: noqa: F841, RUF059

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers.marks import marked_line

from cubecl_server import ir
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    CubeCount,
    CubeDim,
    cube_fn,
    f32,
    i32,
    kernel,
    parse_kernel,
    u32,
)


@pytest.fixture(scope="module")
def client() -> ComputeClient:
    return create_client("cpu")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


@cube_fn
def divmod_fn(x: i32, y: i32):  # type: ignore[no-untyped-def]
    """C's quotient and remainder."""
    return x // y, x % y


@cube_fn
def minmax_of(a: Array[f32], i: u32):  # type: ignore[no-untyped-def]
    """The smaller and the larger of ``a[i]`` and ``a[i + 1]``, and their sum."""
    x = a[i]
    y = a[i + 1]
    return (min(x, y), max(x, y)), x + y


@kernel
def tuples(a: Array[i32], b: Array[i32], q: Array[i32], r: Array[i32],
           swapped: Array[i32], rc: Array[u32]) -> None:
    i = ABSOLUTE_POS
    if i < len(a):
        x, y = a[i], b[i]
        x, y = y, x                       # a swap: the right side is read first
        q[i], r[i] = divmod_fn(y, x)
        row, col = UNIT_POS // 16, UNIT_POS % 16
        s, t = 1, 2                       # weak locals, swapped too
        s, t = t, s
        rc[i] = row * 100 + col + u32(s * 10 + t) * 1000
        swapped[i] = x


@kernel
def pairs(a: Array[f32], lo: Array[f32], hi: Array[f32], total: Array[f32],
          c: Array[f32]) -> None:
    i = ABSOLUTE_POS
    if i + 1 < len(a):
        (lo[i], hi[i]), total[i] = minmax_of(a, i)
    if i == 0:
        c[0], c[1] = c[1], c[0]           # a swap of elements: both loaded first


def test_unpacking_and_helpers_returning_several_values(client: ComputeClient,
                                                        rng: np.random.Generator) -> None:
    n = 201
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(1, 50, n).astype(np.int32) * rng.choice([-1, 1], n).astype(np.int32)
    outs = [client.empty(n, np.int32) for _ in range(3)] + [client.empty(n, np.uint32)]
    tuples.launch(client, CubeCount(4), CubeDim(64), client.create(a), client.create(b),
                  *outs)
    q, r, swapped, rc = (client.read(o) for o in outs)
    want_q = np.trunc(a / b).astype(np.int32)
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_array_equal(r, a - want_q * b)
    np.testing.assert_array_equal(swapped, b)
    u = np.arange(n) % 64
    np.testing.assert_array_equal(rc, (u // 16) * 100 + u % 16 + 21000)


def test_nested_targets_and_a_swap_of_elements(client: ComputeClient,
                                               rng: np.random.Generator) -> None:
    n = 77
    a = rng.standard_normal(n).astype(np.float32)
    lo, hi, total = (client.create(np.zeros(n, np.float32)) for _ in range(3))
    c = client.create(np.array([1.5, -2.5], np.float32))
    pairs.launch(client, CubeCount(2), CubeDim(64), client.create(a), lo, hi, total, c)
    np.testing.assert_array_equal(client.read(lo)[:-1], np.minimum(a[:-1], a[1:]))
    np.testing.assert_array_equal(client.read(hi)[:-1], np.maximum(a[:-1], a[1:]))
    np.testing.assert_array_equal(client.read(total)[:-1], a[:-1] + a[1:])
    np.testing.assert_array_equal(client.read(c), [-2.5, 1.5])


def test_targets_that_read_nothing_assigned_are_assigned_directly() -> None:
    def k(out: Array[u32]) -> None:
        row, col = UNIT_POS // 16, UNIT_POS % 16
        out[UNIT_POS] = row + col

    body = parse_kernel(k, {}).body
    assert [s.name for s in body if isinstance(s, ir.Assign)] == ["row", "col"]


def wrong_count(a: Array[i32]) -> None:
    x, y, z = divmod_fn(a[0], 3)  # <wrong-count>


def one_into_two(a: Array[i32]) -> None:
    x, y = a[0]  # <one-into-two>


def two_into_one(a: Array[i32]) -> None:
    x = divmod_fn(a[0], 3)  # <two-into-one>


def tuple_in_expression(a: Array[i32]) -> None:
    a[0] = divmod_fn(a[0], 3) + 1  # <in-expression>


def starred_value(a: Array[i32]) -> None:
    x, y = *a, 1  # <starred-value>


@cube_fn
def branchy(x: i32):  # type: ignore[no-untyped-def]
    if x > 0:
        return x, 1  # <branch-tuple>
    else:
        return x, 2


def tuple_from_branches(a: Array[i32]) -> None:
    x, y = branchy(a[0])


@pytest.mark.parametrize(("fn", "tag", "fragment"), [
    (wrong_count, "wrong-count", "`x, y, z` takes 3 values, but `divmod_fn(a[0], 3)` is 2"),
    (one_into_two, "one-into-two", "cannot unpack `a[0]` into `x, y`: it is one value"),
    (two_into_one, "two-into-one", "cube_fn `divmod_fn` returns 2 values, so "
                                   "`divmod_fn(a[0], 3)` is not one value: unpack them, "
                                   "e.g. `a, b = divmod_fn(a[0], 3)`"),
    (tuple_in_expression, "in-expression", "returns 2 values"),
    (starred_value, "starred-value", "`*` unpacking is not supported"),
    (tuple_from_branches, "branch-tuple", "end the helper with one `return a, b`"),
])
def test_refused_uses_name_the_line_and_the_fix(fn: Callable[..., Any], tag: str,
                                                fragment: str) -> None:
    with pytest.raises(KernelSyntaxError) as info:
        parse_kernel(fn, {})
    assert fragment in info.value.message
    assert info.value.line == marked_line(__file__, tag)
