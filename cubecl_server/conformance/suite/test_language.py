"""Every IR operation and type against NumPy, on fresh random inputs with edge values
(0, negative, NaN, inf, integer extremes), sizes that are not a multiple of the cube."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.config import reload_config
from cubecl_server.conformance import kernels
from cubecl_server.conformance.plugin import Subject
from cubecl_server.conformance.support import FLOATS, INTS, check, cubes_for, random_size, values
from cubecl_server.execution import ExecutionMode
from cubecl_server.lang import (
    ABSOLUTE_POS,
    ABSOLUTE_POS_X,
    ABSOLUTE_POS_Y,
    Array,
    Comptime,
    CubeCount,
    CubeDim,
    KernelFunction,
    atomic_max,
    atomic_min,
    f32,
    i32,
    kernel,
    local_array,
    u32,
)

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

E = ir.Elem
COMPUTED = tuple(e for e in E if not e.is_minifloat)
"""Every type values are computed in (the minifloats are stored and converted only:
``test_minifloats.py``)."""
DIM = 64
NUMERIC = (*FLOATS, *INTS)


def params(elems: Sequence[ir.Elem]) -> list[Any]:
    """One pytest parameter per element type, named by it; the suite's plugin skips each
    where the device lacks the type (``param_needs``)."""
    return [pytest.param(e, id=e.value) for e in elems]


def launch(c: ComputeClient, k: KernelFunction, inputs: Sequence[np.ndarray],
           out_dtype: Any, *scalars: Any, n: int | None = None, dim: int = DIM) -> np.ndarray:
    """Launch an elementwise kernel over ``inputs`` and return its one output."""
    size = len(inputs[0]) if n is None else n
    bufs = [c.create(a) for a in inputs]
    out = c.empty(size, out_dtype)
    k.launch(c, cubes_for(size, dim), CubeDim(dim), *bufs, out, *scalars)
    return c.read(out)


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        q = a // b
        fix = ((a % b) != 0) & ((a < 0) != (b < 0))
    return (q + fix.astype(a.dtype)).astype(a.dtype)


def _divisors(rng: np.random.Generator, elem: ir.Elem, n: int) -> np.ndarray:
    b = values(rng, elem, n)
    b[b == 0] = 1
    if elem.is_signed:
        b[b == -1] = 3  # INT_MIN / -1 is undefined behaviour in C
    return b


def _shift_amounts(rng: np.random.Generator, elem: ir.Elem, n: int) -> np.ndarray:
    # The IR shifts by rhs mod bits: amounts past the width are part of the contract.
    return rng.integers(0, 2 * elem.bits, n).astype(elem.numpy_name)


ARITH: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply,
}
BITWISE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "bitand": np.bitwise_and, "bitor": np.bitwise_or, "bitxor": np.bitwise_xor,
}
COMPARE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
}


class TestBinary:
    """Arithmetic, bitwise and comparison operators on every type."""

    @pytest.mark.parametrize("elem", params(NUMERIC))
    @pytest.mark.parametrize("op", list(ARITH))
    def test_arith(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                   cubecl_seed: int, op: str, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a, b = values(cubecl_rng, elem, n), values(cubecl_rng, elem, n)
        got = launch(cubecl_client, kernels.binary(op, elem), [a, b], a.dtype)
        with np.errstate(all="ignore"):
            want = ARITH[op](a, b)  # integers wrap, as the IR says
        check(got, want, f"{op} on {elem.value}", cubecl_seed, inputs={"a": a, "b": b})

    @pytest.mark.parametrize("elem", params(FLOATS))
    def test_div(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                 cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a, b = values(cubecl_rng, elem, n), values(cubecl_rng, elem, n)
        got = launch(cubecl_client, kernels.binary("div", elem), [a, b], a.dtype)
        with np.errstate(all="ignore"):
            want = a / b
        check(got, want, f"div on {elem.value}", cubecl_seed, elem=elem, exact=False,
              inputs={"a": a, "b": b})

    @pytest.mark.parametrize("elem", params(INTS))
    @pytest.mark.parametrize("op", ["idiv", "rem"])
    def test_int_division(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                          cubecl_seed: int, op: str, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a, b = values(cubecl_rng, elem, n), _divisors(cubecl_rng, elem, n)
        if elem.is_signed:
            a[:4], b[:4] = [-7, 7, -7, 7], [2, -2, -2, 2]  # truncation toward zero
        got = launch(cubecl_client, kernels.binary(op, elem), [a, b], a.dtype)
        want = _trunc_div(a, b) if op == "idiv" else np.fmod(a, b)
        check(got, want, f"{op} on {elem.value} (C truncation)", cubecl_seed,
              inputs={"a": a, "b": b})

    @pytest.mark.parametrize("elem", params(INTS))
    @pytest.mark.parametrize("op", ["idiv", "rem"])
    def test_int_division_by_zero_gives_zero(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int, op: str, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, elem, n)
        b = _divisors(cubecl_rng, elem, n)
        b[::3] = 0
        got = launch(cubecl_client, kernels.binary(op, elem), [a, b], a.dtype)
        with np.errstate(all="ignore"):
            nonzero = np.where(b == 0, 1, b).astype(b.dtype)
            want = _trunc_div(a, nonzero) if op == "idiv" else np.fmod(a, nonzero)
        want = np.where(b == 0, 0, want).astype(a.dtype)
        check(got, want, f"{op} by zero on {elem.value} gives 0", cubecl_seed,
              inputs={"a": a, "b": b})

    @pytest.mark.parametrize("elem", params(FLOATS))
    def test_float_rem_is_fmod(self, cubecl_client: ComputeClient,
                               cubecl_rng: np.random.Generator, cubecl_seed: int,
                               elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, elem, n, edges=False)
        b = values(cubecl_rng, elem, n, edges=False, low=0.5, high=20.0)
        b *= np.where(cubecl_rng.random(n) < 0.5, -1, 1).astype(b.dtype)
        got = launch(cubecl_client, kernels.binary("rem", elem), [a, b], a.dtype)
        check(got, np.fmod(a, b), f"rem (fmod) on {elem.value}", cubecl_seed, elem=elem,
              exact=False, inputs={"a": a, "b": b})

    @pytest.mark.parametrize("elem", params(INTS))
    @pytest.mark.parametrize("op", [*BITWISE, "shl", "shr"])
    def test_bitwise(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                     cubecl_seed: int, op: str, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, elem, n)
        if op in BITWISE:
            b = values(cubecl_rng, elem, n)
            want = BITWISE[op](a, b)
        else:
            b = _shift_amounts(cubecl_rng, elem, n)
            amount = (b % elem.bits).astype(a.dtype)
            want = np.left_shift(a, amount) if op == "shl" else np.right_shift(a, amount)
        got = launch(cubecl_client, kernels.binary(op, elem), [a, b], a.dtype)
        check(got, want, f"{op} on {elem.value}", cubecl_seed, inputs={"a": a, "b": b})

    @pytest.mark.parametrize("elem", params(NUMERIC))
    @pytest.mark.parametrize("op", list(COMPARE))
    def test_compare(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                     cubecl_seed: int, op: str, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, elem, n)
        b = np.where(cubecl_rng.random(n) < 0.3, a, values(cubecl_rng, elem, n))
        got = launch(cubecl_client, kernels.compare(op, elem), [a, b], np.bool_)
        check(got, COMPARE[op](a, b), f"{op} on {elem.value} (NaN compares unequal)",
              cubecl_seed, inputs={"a": a, "b": b})

    @pytest.mark.parametrize("op", ["and", "or", "not"])
    def test_logical(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                     cubecl_seed: int, op: str) -> None:
        n = random_size(cubecl_rng, DIM)
        a, b = values(cubecl_rng, E.BOOL, n), values(cubecl_rng, E.BOOL, n)
        got = launch(cubecl_client, kernels.logical(op), [a, b], np.bool_)
        want = {"and": a & b, "or": a | b, "not": ~a}[op]
        check(got, want, op, cubecl_seed, inputs={"a": a, "b": b})


class TestUnary:
    """Negation (wrapping on integers) and bitwise not."""

    @pytest.mark.parametrize("elem", params(NUMERIC))
    def test_neg(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                 cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, elem, n)
        got = launch(cubecl_client, kernels.unary("neg", elem), [a], a.dtype)
        with np.errstate(all="ignore"):
            want = np.negative(a)
        check(got, want, f"neg on {elem.value}", cubecl_seed, inputs={"a": a})

    @pytest.mark.parametrize("elem", params(INTS))
    def test_bitnot(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                    cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, elem, n)
        got = launch(cubecl_client, kernels.unary("bitnot", elem), [a], a.dtype)
        check(got, np.invert(a), f"bitnot on {elem.value}", cubecl_seed, inputs={"a": a})


def _erf(x: np.ndarray) -> np.ndarray:
    return np.array([math.erf(float(v)) if not math.isnan(v) else math.nan
                     for v in x.astype(np.float64)])


def _rsqrt(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return 1.0 / np.sqrt(x.astype(np.float64))


# fn -> (reference, low, high, edge values allowed)
MATH1: dict[str, tuple[Callable[[np.ndarray], np.ndarray], float, float, bool]] = {
    "exp": (np.exp, -20.0, 20.0, True),
    "log": (np.log, 1e-3, 100.0, True),
    "sqrt": (np.sqrt, 0.0, 100.0, True),
    "rsqrt": (_rsqrt, 1e-2, 100.0, False),
    "sin": (np.sin, -10.0, 10.0, False),
    "cos": (np.cos, -10.0, 10.0, False),
    "tanh": (np.tanh, -10.0, 10.0, False),
    "erf": (_erf, -4.0, 4.0, False),
    "abs": (np.abs, -100.0, 100.0, True),
    "floor": (np.floor, -100.0, 100.0, True),
    "ceil": (np.ceil, -100.0, 100.0, True),
    "isnan": (np.isnan, -100.0, 100.0, True),
    "isinf": (np.isinf, -100.0, 100.0, True),
    "tan": (np.tan, -1.4, 1.4, True),
    "asin": (np.arcsin, -1.0, 1.0, True),
    "acos": (np.arccos, -1.0, 1.0, True),
    "atan": (np.arctan, -50.0, 50.0, True),
    "sinh": (np.sinh, -10.0, 10.0, True),
    "cosh": (np.cosh, -10.0, 10.0, True),
    "asinh": (np.arcsinh, -100.0, 100.0, True),
    "acosh": (np.arccosh, 1.0, 100.0, True),
    "atanh": (np.arctanh, -0.999, 0.999, True),
    "log2": (np.log2, 1e-3, 100.0, True),
    "exp2": (np.exp2, -20.0, 20.0, True),
    "log1p": (np.log1p, -0.9, 10.0, True),
    "expm1": (np.expm1, -20.0, 10.0, True),
    "round": (np.rint, -100.0, 100.0, True),
    "trunc": (np.trunc, -100.0, 100.0, True),
}
# Inputs where a careless implementation goes wrong: log(1 + x) and exp(x) - 1 lose
# every digit of a small x; round of a half goes to the even neighbour.
MATH1_EXTRA: dict[str, list[float]] = {
    "log1p": [1e-7, -1e-7, 3e-5, -2e-4, 1e-20],
    "expm1": [1e-7, -1e-7, 3e-5, -2e-4, 1e-20],
    "round": [0.5, 1.5, 2.5, -0.5, -2.5, 3.5, 0.49999997],
    "asin": [1.0, -1.0, 0.999, -0.9999],
    "acos": [1.0, -1.0, 0.999, -0.9999],
}
_EXACT = ("abs", "floor", "ceil", "isnan", "isinf", "round", "trunc")


class TestMath:
    """The math functions, with C's ``<math.h>`` semantics at the edges."""

    @pytest.mark.parametrize("elem", params(FLOATS))
    @pytest.mark.parametrize("fn", list(MATH1))
    def test_unary_fn(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                      cubecl_seed: int, fn: str, elem: ir.Elem) -> None:
        ref, low, high, edges = MATH1[fn]
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, elem, n, edges=False, low=low, high=high)
        if edges:
            a[:6] = np.array([0.0, -0.0, -1.0, np.nan, np.inf, -np.inf]).astype(a.dtype)
        extra = MATH1_EXTRA.get(fn, [])
        a[6:6 + len(extra)] = np.array(extra).astype(a.dtype)
        cubecl_rng.shuffle(a)
        predicate = fn in ("isnan", "isinf")
        got = launch(cubecl_client, kernels.math1(fn, elem), [a],
                     np.bool_ if predicate else a.dtype)
        with np.errstate(all="ignore"):
            want = ref(a.astype(np.float64))
            want = want if predicate else want.astype(a.dtype)
        check(got, want, f"{fn} on {elem.value}", cubecl_seed, elem=elem,
              exact=fn in _EXACT, inputs={"a": a})

    @pytest.mark.parametrize("elem", params(NUMERIC))
    @pytest.mark.parametrize("fn", ["min", "max"])
    def test_min_max(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                     cubecl_seed: int, fn: str, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a, b = values(cubecl_rng, elem, n), values(cubecl_rng, elem, n)
        got = launch(cubecl_client, kernels.math2(fn, elem), [a, b], a.dtype)
        want = (np.fmin if fn == "min" else np.fmax)(a, b)  # a NaN operand yields the other
        check(got, want, f"{fn} on {elem.value}", cubecl_seed, inputs={"a": a, "b": b})

    @pytest.mark.parametrize("elem", params(FLOATS))
    def test_atan2(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                   cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        y, x = (values(cubecl_rng, elem, n, edges=False, low=-10, high=10) for _ in "yx")
        # C's quadrants and zeros: atan2(+-0, -1) is +-pi, atan2(1, 0) is pi/2...
        edge = [(0.0, 1.0), (0.0, -1.0), (-0.0, -1.0), (1.0, 0.0), (-1.0, 0.0), (0.0, 0.0),
                (-0.0, 0.0), (np.inf, 1.0), (1.0, np.inf), (1.0, -np.inf), (-1.0, -np.inf)]
        y[:len(edge)], x[:len(edge)] = np.array(edge).T.astype(y.dtype)
        got = launch(cubecl_client, kernels.math2("atan2", elem), [y, x], y.dtype)
        want = np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(y.dtype)
        check(got, want, f"atan2 on {elem.value}", cubecl_seed, elem=elem, exact=False,
              inputs={"y": y, "x": x})
        check(np.signbit(got[:len(edge)]), np.signbit(want[:len(edge)]),
              f"the sign of atan2 on {elem.value} at (+-0, x), (y, +-0)", cubecl_seed)

    @pytest.mark.parametrize("elem", params(FLOATS))
    def test_copysign(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                      cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        x, y = values(cubecl_rng, elem, n), values(cubecl_rng, elem, n, edges=False)
        y[:4] = np.array([0.0, -0.0, -np.inf, np.inf]).astype(y.dtype)
        got = launch(cubecl_client, kernels.math2("copysign", elem), [x, y], x.dtype)
        want = np.copysign(x, y)
        check(got, want, f"copysign on {elem.value}", cubecl_seed, inputs={"x": x, "y": y})
        check(np.signbit(got), np.signbit(want), f"the sign bit of copysign on {elem.value}",
              cubecl_seed, inputs={"x": x, "y": y})

    @pytest.mark.parametrize("elem", params(FLOATS))
    def test_hypot(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                   cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        x, y = (values(cubecl_rng, elem, n, edges=False, low=-1e3, high=1e3) for _ in "xy")
        # Where x*x + y*y overflows or underflows although the result does not.
        big = {E.F16: 3e2, E.F32: 3e30, E.F64: 3e300}[elem]
        tiny = {E.F16: 3e-3, E.F32: 3e-30, E.F64: 3e-300}[elem]
        edge = [(big, big * 4 / 3), (-tiny, tiny * 4 / 3), (np.inf, np.nan), (0.0, -0.0),
                (-np.inf, 1.0)]
        x[:len(edge)], y[:len(edge)] = np.array(edge).T.astype(x.dtype)
        got = launch(cubecl_client, kernels.math2("hypot", elem), [x, y], x.dtype)
        with np.errstate(all="ignore"):
            want = np.hypot(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)
        check(got, want, f"hypot on {elem.value}", cubecl_seed, elem=elem, exact=False,
              inputs={"x": x, "y": y})

    @pytest.mark.parametrize("elem", params(NUMERIC))
    def test_sign(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                  cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, elem, n)
        got = launch(cubecl_client, kernels.math1("sign", elem), [a], a.dtype)
        check(got, np.sign(a), f"sign on {elem.value} (NaN stays NaN)", cubecl_seed,
              inputs={"a": a})

    @pytest.mark.parametrize("elem", params((E.I32, E.I64)))
    def test_abs_int(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                     cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, elem, n)
        got = launch(cubecl_client, kernels.math1("abs", elem), [a], a.dtype)
        check(got, np.abs(a), f"abs on {elem.value} (abs(MIN) wraps to MIN)", cubecl_seed,
              inputs={"a": a})

    @pytest.mark.parametrize("elem", params(FLOATS))
    def test_pow(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                 cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, elem, n, edges=False, low=0.1, high=4.0)
        b = values(cubecl_rng, elem, n, edges=False, low=-3.0, high=3.0)
        got = launch(cubecl_client, kernels.math2("pow", elem), [a, b], a.dtype)
        want = np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
        check(got, want, f"pow on {elem.value}", cubecl_seed, elem=elem, exact=False,
              inputs={"a": a, "b": b})

    @pytest.mark.parametrize("elem", params(NUMERIC))
    def test_clamp(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                   cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        x = values(cubecl_rng, elem, n, edges=False)
        lo, hi = np.sort(np.stack([values(cubecl_rng, elem, n, edges=False)
                                   for _ in range(2)]), axis=0)
        got = launch(cubecl_client, kernels.math3("clamp", elem), [x, lo, hi], x.dtype)
        check(got, np.minimum(np.maximum(x, lo), hi), f"clamp on {elem.value}", cubecl_seed,
              inputs={"x": x, "lo": lo, "hi": hi})

    @pytest.mark.parametrize("elem", params(FLOATS))
    def test_fma(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                 cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a, b, c = (values(cubecl_rng, elem, n, edges=False, low=-10, high=10) for _ in "abc")
        got = launch(cubecl_client, kernels.math3("fma", elem), [a, b, c], a.dtype)
        want = (a.astype(np.float64) * b + c).astype(a.dtype)
        # A fused and an unfused a*b+c are both allowed: allow for one more rounding.
        check(got, want, f"fma on {elem.value}", cubecl_seed, elem=elem, exact=False,
              inputs={"a": a, "b": b, "c": c}, scale=np.abs(a * b) + np.abs(c))


def _cast_pairs() -> list[Any]:
    out = []
    for s in NUMERIC:
        for d in NUMERIC:
            if s is not d:
                out.append(pytest.param(s, d, id=f"{s.value}-{d.value}"))
    return out


class TestCast:
    """Conversions between every pair of numeric types (C rules; float to int truncates)."""

    @pytest.mark.parametrize(("src", "dst"), _cast_pairs())
    def test_cast(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                  cubecl_seed: int, src: ir.Elem, dst: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        if src.is_float:
            # Only values the target can hold: anything else is undefined in C.
            low = 0.0 if not (dst.is_float or dst.is_signed) else -100.0
            a = values(cubecl_rng, src, n, edges=False, low=low, high=100.0)
        elif dst is E.F16:
            a = values(cubecl_rng, src, n, edges=False, low=0 if not src.is_signed else -1000,
                       high=1000)
        else:
            a = values(cubecl_rng, src, n)  # integers wrap; large ones round to nearest
        got = launch(cubecl_client, kernels.cast(src, dst), [a], np.dtype(dst.numpy_name))
        with np.errstate(all="ignore"):
            want = (np.trunc(a) if src.is_float and not dst.is_float else a).astype(
                dst.numpy_name)
        check(got, want, f"cast {src.value} -> {dst.value}", cubecl_seed, inputs={"a": a})


def _bit_reference(fn: str, a: np.ndarray) -> np.ndarray:
    """What a bit function gives, one Python integer at a time."""
    width = a.dtype.itemsize * 8
    mask = (1 << width) - 1
    out = []
    for v in a.tolist():
        u = v & mask
        low = (u & -u).bit_length() - 1 if u else width
        out.append({"count_ones": bin(u).count("1"), "leading_zeros": width - u.bit_length(),
                    "trailing_zeros": low, "find_first_set": 0 if u == 0 else low + 1,
                    "reverse_bits": int(f"{u:0{width}b}"[::-1], 2)}[fn])
    if fn == "reverse_bits":
        return np.array(out, np.uint64 if width == 64 else np.uint32).view(a.dtype)
    return np.array(out, np.uint32)


def _wide_reference(fn: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``mul_hi`` and the saturating operations, on Python's unbounded integers."""
    info = np.iinfo(a.dtype)
    width = a.dtype.itemsize * 8
    out = []
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        if fn == "mul_hi":
            out.append((x * y) >> width)
        else:
            r = x + y if fn == "saturating_add" else x - y
            out.append(min(max(r, int(info.min)), int(info.max)))
    return np.array(out, a.dtype)


class TestBits:
    """The integer functions: bit counts, reversal, the high half of a product,
    saturating arithmetic; and ``powi``, ``rhypot`` on floats."""

    @pytest.mark.parametrize("elem", params(INTS))
    @pytest.mark.parametrize("fn", ["count_ones", "reverse_bits", "leading_zeros",
                                    "trailing_zeros", "find_first_set"])
    def test_bit_function(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                          cubecl_seed: int, fn: str, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, elem, n)
        # Single bits at both ends and runs of zeros: where a loop bound or a shift is
        # most easily off by one.
        width = a.dtype.itemsize * 8
        special = [0, 1, 1 << (width - 1), (1 << width) - 1, 1 << (width // 2), 6]
        a[:len(special)] = np.array(special, np.uint64 if width == 64 else np.uint32).view(
            a.dtype)
        cubecl_rng.shuffle(a)
        want = _bit_reference(fn, a)
        got = launch(cubecl_client, kernels.bits1(fn, elem), [a], want.dtype)
        check(got, want, f"{fn} on {elem.value}", cubecl_seed, inputs={"a": a})

    @pytest.mark.parametrize("elem", params(INTS))
    @pytest.mark.parametrize("fn", ["mul_hi", "saturating_add", "saturating_sub"])
    def test_wide_integer_function(self, cubecl_client: ComputeClient,
                                   cubecl_rng: np.random.Generator, cubecl_seed: int,
                                   fn: str, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a, b = values(cubecl_rng, elem, n), values(cubecl_rng, elem, n)
        got = launch(cubecl_client, kernels.math2(fn, elem), [a, b], a.dtype)
        check(got, _wide_reference(fn, a, b), f"{fn} on {elem.value}", cubecl_seed,
              inputs={"a": a, "b": b})

    @pytest.mark.parametrize("elem", params(FLOATS))
    def test_powi(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                  cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, elem, n, edges=False, low=-3.0, high=3.0)
        k = cubecl_rng.integers(-6, 7, n).astype(np.int32)
        a[:3], k[:3] = a.dtype.type(0.0), [0, 3, 2]  # 0**0 is 1
        got = launch(cubecl_client, kernels.powi_kernel(elem), [a, k], a.dtype)
        with np.errstate(all="ignore"):
            want = np.power(a.astype(np.float64), k.astype(np.float64)).astype(a.dtype)
        check(got, want, f"powi on {elem.value} (negative bases included)", cubecl_seed,
              elem=elem, exact=False, inputs={"a": a, "n": k})

    @pytest.mark.parametrize("elem", params(FLOATS))
    def test_rhypot(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                    cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        x, y = (values(cubecl_rng, elem, n, edges=False, low=-100, high=100) for _ in "xy")
        got = launch(cubecl_client, kernels.math2("rhypot", elem), [x, y], x.dtype)
        want = (1.0 / np.hypot(x.astype(np.float64), y.astype(np.float64))).astype(x.dtype)
        check(got, want, f"rhypot on {elem.value}", cubecl_seed, elem=elem, exact=False,
              inputs={"x": x, "y": y})


def _bitcast_pairs() -> list[Any]:
    groups = ((E.F32, E.I32, E.U32), (E.F64, E.I64, E.U64))
    return [pytest.param(s, d, id=f"{s.value}-{d.value}")
            for g in groups for s in g for d in g if s is not d]


class TestBitcast:
    """A bit cast between the numeric types of one width: NumPy's ``view``."""

    @pytest.mark.parametrize(("src", "dst"), _bitcast_pairs())
    def test_bitcast(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                     cubecl_seed: int, src: ir.Elem, dst: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        uint = np.uint32 if src.bits == 32 else np.uint64
        bits = cubecl_rng.integers(0, np.iinfo(uint).max, n, dtype=uint, endpoint=True)
        if dst.is_float:
            # No NaN patterns: a device may quieten a signalling NaN it moves as a float.
            exponent = np.iinfo(uint).max >> 1 & ~(np.iinfo(uint).max >> (
                9 if src.bits == 32 else 12))
            bits[(bits & exponent) == exponent] &= ~uint(1 << (src.bits - 2))
        a = bits.view(src.numpy_name)
        if src.is_float:
            a[:4] = np.array([0.0, -0.0, np.inf, -np.inf]).astype(a.dtype)
        got = launch(cubecl_client, kernels.bitcast_kernel(src, dst), [a],
                     np.dtype(dst.numpy_name))
        check(got.view(uint), a.view(dst.numpy_name).view(uint),
              f"bitcast {src.value} -> {dst.value} (compared bit for bit)", cubecl_seed,
              inputs={"a": a})


@kernel
def local_arrays(a: Array[f32], codes: Array[u32], out: Array[f32], hist: Array[i32],
                 *, S: Comptime[int]) -> None:
    """Per unit: ``a``'s S values reversed into a local array and weighted; a histogram
    of 8 bins of S codes; a read before any write, and one outside, give 0."""
    i = ABSOLUTE_POS
    if i < len(out):
        acc = local_array(f32, S)
        counts = local_array(i32, 8)
        s = acc[S - 1] + acc[S]  # nothing written yet; then outside the array
        acc[S] = 100.0  # outside: dropped
        for j in range(S):
            acc[S - 1 - j] = a[i * S + j]
            counts[codes[i * S + j] & 7] += 1
        for j in range(S):
            s += acc[j] * f32(j + 1)
        out[i] = s
        for b in range(8):
            hist[i * 8 + b] = counts[b]


@kernel
def grid_2d(a: Array[f32], b: Array[f32], out: Array[f32]) -> None:
    """``out[y, x] = 2 a[y, x] + b[x, y] + a[y - 1, x]``, the row above the first read
    as 0 (checked mode: the flattened index is negative)."""
    x = ABSOLUTE_POS_X
    y = ABSOLUTE_POS_Y
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = a[y, x] * 2.0 + b[x, y] + a[i32(y) - 1, x]


@kernel
def atomic_f32_max_min(v: Array[f32], hi: Array[f32], lo: Array[f32], old: Array[f32]) -> None:
    """Every unit folds ``v[i]`` into ``hi[i % len(hi)]`` with max and into ``lo`` with
    min; the old value of the max goes to ``old[i]``."""
    i = ABSOLUTE_POS
    if i < len(v):
        old[i] = atomic_max(hi, i % len(hi), v[i])
        atomic_min(lo, i % len(lo), v[i])


class TestLocalArraysAndIndexing:
    """Per-unit local arrays, ``a[i, j]`` over strides, and f32 atomic max and min."""

    def test_local_arrays(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                          cubecl_seed: int) -> None:
        c, S = cubecl_client, 5
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, E.F32, n * S, edges=False, low=-10, high=10)
        codes = cubecl_rng.integers(0, 1 << 31, n * S).astype(np.uint32)
        out, hist = c.empty(n, np.float32), c.empty(n * 8, np.int32)
        local_arrays.launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(a), c.create(codes),
                            out, hist, S=S)
        weights = np.arange(S, 0, -1, dtype=np.float64)
        want = (a.reshape(n, S).astype(np.float64) * weights).sum(axis=1)
        check(c.read(out), want.astype(np.float32), "local arrays: reversed and weighted "
              "(a read before any write, and one outside, give 0)", cubecl_seed, elem=E.F32,
              exact=False, scale=np.abs(a.reshape(n, S)).sum(axis=1) * S)
        want_hist = np.stack([np.bincount(r & 7, minlength=8) for r in codes.reshape(n, S)])
        check(c.read(hist), want_hist.astype(np.int32).ravel(),
              "local arrays: a histogram indexed by data", cubecl_seed)

    def test_multi_dimensional_indexing(self, cubecl_client: ComputeClient,
                                        cubecl_rng: np.random.Generator,
                                        cubecl_seed: int) -> None:
        c = cubecl_client
        rows, cols = (int(cubecl_rng.integers(9, 40)) for _ in "rc")
        a = values(cubecl_rng, E.F32, rows * cols, edges=False).reshape(rows, cols)
        b = values(cubecl_rng, E.F32, rows * cols, edges=False).reshape(cols, rows)
        out = c.empty((rows, cols), np.float32)
        grid_2d.launch(c, CubeCount(-(-cols // 8), -(-rows // 8)), CubeDim(8, 8),
                       c.create(a), c.create(b), out)
        above = np.vstack([np.zeros((1, cols), np.float32), a[:-1]])
        want = a.astype(np.float64) * 2 + b.T + above
        check(c.read(out).reshape(rows, cols), want.astype(np.float32),
              "a[y, x] over the strides (the row above row 0 reads 0)", cubecl_seed,
              elem=E.F32, exact=False, scale=np.abs(a) * 2 + np.abs(b.T) + np.abs(above))

    @pytest.mark.requires("atomics:u32")
    def test_atomic_max_min_f32(self, cubecl_client: ComputeClient,
                                cubecl_rng: np.random.Generator, cubecl_seed: int) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM)
        v = values(cubecl_rng, E.F32, n, edges=False, low=-1e3, high=1e3)
        v[cubecl_rng.choice(n, 3, replace=False)] = np.nan  # leaves the element as it is
        for slots in (n, 7):
            init = values(cubecl_rng, E.F32, slots, edges=False, low=-1e3, high=1e3)
            init[0] = np.nan  # takes the first value that meets it
            hi, lo, old = c.create(init), c.create(init), c.empty(n, np.float32)
            atomic_f32_max_min.launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(v), hi,
                                      lo, old)
            per_slot = [np.concatenate([[init[k]], v[k::slots]]) for k in range(slots)]
            check(c.read(hi), np.array([np.fmax.reduce(p) for p in per_slot], np.float32),
                  f"atomic_max on f32 over {slots} slots (NaN operands ignored)", cubecl_seed)
            check(c.read(lo), np.array([np.fmin.reduce(p) for p in per_slot], np.float32),
                  f"atomic_min on f32 over {slots} slots (NaN operands ignored)", cubecl_seed)
            if slots == n:
                check(c.read(old), init, "atomic_max on f32 returns the old value",
                      cubecl_seed)


def _atomic_params() -> list[Any]:
    return [pytest.param(e, id=e.value, marks=pytest.mark.requires(
        f"atomics:{e.value}")) for e in INTS]


class TestAtomicBits:
    """Atomic and, or, xor, load and store, folded over slots many units share."""

    @pytest.mark.parametrize("elem", _atomic_params())
    def test_and_or_xor_load_store(self, cubecl_client: ComputeClient,
                                   cubecl_rng: np.random.Generator, cubecl_seed: int,
                                   elem: ir.Elem) -> None:
        c = cubecl_client
        n = random_size(cubecl_rng, DIM)
        v = values(cubecl_rng, elem, n)
        for slots in (n, 5):
            init = values(cubecl_rng, elem, slots)
            bufs = {name: c.create(init) for name in ("ands", "ors", "xors")}
            old, stored, loaded = (c.empty(n, v.dtype) for _ in range(3))
            kernels.atomic_bits(elem).launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(v),
                                             bufs["ands"], bufs["ors"], bufs["xors"], old,
                                             stored, loaded)
            for name, f in (("ands", np.bitwise_and), ("ors", np.bitwise_or),
                            ("xors", np.bitwise_xor)):
                want = np.array([f.reduce(np.concatenate([[init[k]], v[k::slots]]))
                                 for k in range(slots)], v.dtype)
                check(c.read(bufs[name]), want, f"atomic_{name[:-1]} on {elem.value} over "
                      f"{slots} slots", cubecl_seed, inputs={"v": v} if slots == n else None)
            check(c.read(stored), v, f"atomic_store of {elem.value}", cubecl_seed)
            check(c.read(loaded), v, f"atomic_load of {elem.value} after a store by the "
                  "same unit", cubecl_seed)
            if slots == n:
                check(c.read(old), init, f"atomic_and on {elem.value} returns the old value",
                      cubecl_seed)


class TestPlaneMore:
    """Plane min, product, all, any, scans, ballot and shuffle, over the active units."""

    @pytest.mark.requires("plane")
    def test_plane_operations_over_the_active_units(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        size = c.capabilities.plane_size
        assert size is not None, "the plane marker let a backend without planes through"
        n = random_size(cubecl_rng, DIM)  # the last cube's last units are out of range
        v = cubecl_rng.integers(-3, 6, n).astype(np.int32)
        cond = cubecl_rng.random(n) < 0.7
        names = ("lo", "prod", "every", "some", "inc", "exc", "ballot", "xor1")
        dtypes = (np.int32, np.int32, np.bool_, np.bool_, np.int32, np.int32, np.uint32,
                  np.int32)
        outs = [c.empty(n, d) for d in dtypes]
        kernels.plane_more.launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(v), c.create(cond),
                          *outs)
        got = dict(zip(names, (c.read(o) for o in outs), strict=True))
        # Planes are runs of `size` units of one cube, the cube's last one maybe short.
        starts = [p for cube in range(0, n, DIM) for p in range(cube, min(cube + DIM, n), size)]
        for start in starts:
            lanes = np.arange(start, min(start + size, (start // DIM + 1) * DIM, n))
            act = lanes[cond[lanes]]
            if act.size == 0:
                continue
            x = v[act]
            cum = np.cumsum(x, dtype=np.int32)
            want = {"lo": np.full(act.size, x.min()),
                    "prod": np.full(act.size, np.multiply.reduce(x, dtype=np.int32)),
                    "every": np.full(act.size, bool((x > 0).all())),
                    "some": np.full(act.size, bool((x > 2).any())),
                    "inc": cum, "exc": cum - x,
                    "ballot": np.full(act.size, sum(1 << int(k - start) for k in act
                                                    if v[k] > 0 and k - start < 32),
                                      np.uint32)}
            for name, w in want.items():
                check(got[name][act], np.asarray(w).astype(got[name].dtype),
                      f"plane_{name} over the active units of the plane at unit {start} "
                      f"(plane size {size})", cubecl_seed, inputs=None)
        unit = np.arange(n) % DIM
        partner = np.arange(n) - unit + ((unit % size) ^ 1) + unit // size * size
        same = (partner < n) & (partner // DIM == np.arange(n) // DIM) & (
            (partner % DIM) // size == unit // size)
        check(got["xor1"][same], v[partner[same]], "plane_shuffle_xor(x, 1)", cubecl_seed)


class TestOptionalTypesInExpressions:
    """A type a device may lack, used only inside one expression (never in a parameter,
    a local or shared memory), still reaches the target with what it needs enabled."""

    @pytest.mark.parametrize("elem", params((E.I64, E.U64, E.F16, E.F64)))
    def test_type_used_only_inside_an_expression(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        high = (1 << 32) if elem.is_int else 1000  # f16 holds integers up to 2048 exactly
        a = cubecl_rng.integers(0, high, n, dtype=np.uint64).astype(np.uint32)
        got = launch(cubecl_client, kernels.typed_inside(elem), [a], np.uint32)
        if elem.is_int:
            wide = a.astype(elem.numpy_name)
            want = ((wide * wide) >> 32).astype(np.uint32)
        else:
            want = (a.astype(elem.numpy_name) * np.dtype(elem.numpy_name).type(0.5)).astype(
                np.uint32)
        check(got, want, f"{elem.value} used only inside an expression", cubecl_seed,
              inputs={"a": a})


class TestSelectAndScalars:
    """``select``, conditional expressions and scalar parameters of every type."""

    @pytest.mark.parametrize("conditional", [False, True], ids=["select", "if-else"])
    @pytest.mark.parametrize("elem", params(COMPUTED))
    def test_select(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                    cubecl_seed: int, elem: ir.Elem, conditional: bool) -> None:
        n = random_size(cubecl_rng, DIM)
        c = values(cubecl_rng, E.BOOL, n)
        a, b = values(cubecl_rng, elem, n), values(cubecl_rng, elem, n)
        got = launch(cubecl_client, kernels.select_kernel(elem, conditional), [c, a, b],
                     a.dtype)
        check(got, np.where(c, a, b), f"select on {elem.value}", cubecl_seed,
              inputs={"c": c, "a": a, "b": b})

    @pytest.mark.parametrize("elem", params(COMPUTED))
    def test_scalar_parameter(self, cubecl_client: ComputeClient,
                              cubecl_rng: np.random.Generator, cubecl_seed: int,
                              elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a = values(cubecl_rng, elem, n)
        s = values(cubecl_rng, elem, 1, edges=False)[0]
        got = launch(cubecl_client, kernels.with_scalar(elem), [a], a.dtype, s)
        with np.errstate(all="ignore"):
            want = a & s if elem is E.BOOL else a * s
        check(got, want, f"scalar {elem.value} parameter ({s!r})", cubecl_seed,
              inputs={"a": a})


class TestControlFlowAndBuiltins:
    """Builtins of a 3-D launch, structured control flow, checked memory access."""

    def test_builtins_3d(self, cubecl_client: ComputeClient) -> None:
        count, dim = CubeCount(3, 2, 2), CubeDim(4, 2, 2)
        units = count.total * dim.total
        out = cubecl_client.empty(units * 20, np.uint32)
        kernels.builtins.launch(cubecl_client, count, dim, out)
        got = cubecl_client.read(out).reshape(units, 20)
        rows = []
        for cz in range(count.z):
            for cy in range(count.y):
                for cx in range(count.x):
                    for uz in range(dim.z):
                        for uy in range(dim.y):
                            for ux in range(dim.x):
                                cube = cx + cy * count.x + cz * count.x * count.y
                                unit = ux + uy * dim.x + uz * dim.x * dim.y
                                rows.append([
                                    cube * dim.total + unit, cx * dim.x + ux,
                                    cy * dim.y + uy, cz * dim.z + uz, unit, ux, uy, uz,
                                    cube, cx, cy, cz, dim.total, dim.x, dim.y, dim.z,
                                    count.total, count.x, count.y, count.z])
        want = np.zeros((units, 20), np.uint32)
        for r in rows:
            want[r[0]] = r
        names = ["ABSOLUTE_POS", "ABSOLUTE_POS_X", "ABSOLUTE_POS_Y", "ABSOLUTE_POS_Z",
                 "UNIT_POS", "UNIT_POS_X", "UNIT_POS_Y", "UNIT_POS_Z", "CUBE_POS",
                 "CUBE_POS_X", "CUBE_POS_Y", "CUBE_POS_Z", "CUBE_DIM", "CUBE_DIM_X",
                 "CUBE_DIM_Y", "CUBE_DIM_Z", "CUBE_COUNT", "CUBE_COUNT_X", "CUBE_COUNT_Y",
                 "CUBE_COUNT_Z"]
        for j, name in enumerate(names):
            check(got[:, j], want[:, j], f"builtin {name} (count {count}, dim {dim})", 0)

    def test_control_flow(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                          cubecl_seed: int) -> None:
        n = random_size(cubecl_rng, DIM)
        a = cubecl_rng.integers(-5, 30, n).astype(np.int32)
        a[:3] = [0, 7, -1]
        got = launch(cubecl_client, kernels.control_flow, [a], np.int32)
        want = np.array([kernels.control_flow_reference(int(x)) for x in a], np.int32)
        check(got, want, "if/elif/else, for with step -2, while/break/continue, return",
              cubecl_seed, inputs={"a": a})

    def test_checked_mode_reads_zero_and_drops_writes_outside(
            self, cubecl_client: ComputeClient) -> None:
        assert cubecl_client.mode is ExecutionMode.CHECKED, "checked is the default mode"
        c = cubecl_client
        a = c.create(np.arange(1, 11, dtype=np.float32))
        out = c.empty(20, np.float32)
        out_of_bounds.launch(c, CubeCount(1), CubeDim(32), a, out, 5)
        got_out, got_a = c.read(out), c.read(a)
        want_out = np.zeros(20, np.float32)
        want_out[:5] = np.arange(6, 11)
        check(got_out, want_out, "checked mode: loads outside the array read 0", 0)
        want_a = np.arange(1, 11, dtype=np.float32)
        want_a[5:] = -1.0
        check(got_a, want_a, "checked mode: stores outside the array are dropped", 0)

    def test_and_or_short_circuit_in_unchecked_mode(
            self, cubecl_subject: Subject, monkeypatch: pytest.MonkeyPatch,
            cubecl_rng: np.random.Generator, cubecl_seed: int) -> None:
        """``and``/``or`` evaluate their right side only where the left side does not
        decide, as Python does: in unchecked mode, where nothing guards a load, the
        right side's loads past the end of ``a`` (every unit past ``n``) never happen."""
        c = _unchecked_client(cubecl_subject, monkeypatch)
        n = random_size(cubecl_rng, DIM)
        units = (n // DIM + 3) * DIM  # whole cubes past the end of a
        a = cubecl_rng.integers(-3, 4, n).astype(np.int32)
        both = c.create(np.zeros(units, np.int32))
        either, via = c.empty(units, np.int32), c.empty(units, np.int32)
        kernels.short_circuit.launch(c, CubeCount(units // DIM), CubeDim(DIM), c.create(a),
                                     both, either, via, n)
        right = np.zeros(units, bool)
        right[:n] = a[::-1] > 0  # a[n - 1 - i], for the units inside
        inside = np.arange(units) < n
        check(c.read(both), (inside & right).astype(np.int32),
              "`if i < n and a[n - 1 - i] > 0` with a of n elements, unchecked", cubecl_seed)
        check(c.read(either), (~inside | right).astype(np.int32),
              "`i >= n or a[n - 1 - i] > 0` with a of n elements, unchecked", cubecl_seed)
        check(c.read(via), (inside & right).astype(np.int32),
              "`i < n and helper(a, n - 1 - i)` (a cube_fn reading a[...]), unchecked",
              cubecl_seed)


def _unchecked_client(subject: Subject, monkeypatch: pytest.MonkeyPatch) -> ComputeClient:
    """A new client of the backend under test whose launches run unchecked."""
    monkeypatch.setenv("CUBECL_EXECUTION_MODE", ExecutionMode.UNCHECKED.value)
    reload_config()
    try:
        c = create_client(subject.backend, subject.device)
    finally:
        monkeypatch.delenv("CUBECL_EXECUTION_MODE")
        reload_config()
    assert c.mode is ExecutionMode.UNCHECKED, c.mode
    return c


@kernel
def out_of_bounds(a: Array[f32], out: Array[f32], off: u32) -> None:
    """out[i] = a[i + off] and a[i + off] = -1 for every unit, inside or not."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i + off]
        a[i + off] = -1.0
