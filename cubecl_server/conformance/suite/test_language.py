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
    Array,
    CubeCount,
    CubeDim,
    KernelFunction,
    f32,
    kernel,
    u32,
)

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

E = ir.Elem
DIM = 64
NUMERIC = (*FLOATS, *INTS)


def _marks(*elems: ir.Elem) -> list[pytest.MarkDecorator]:
    needs = {e.value for e in elems if e in (E.F16, E.F64)}
    needs |= {"int64" for e in elems if e in (E.I64, E.U64)}
    return [pytest.mark.requires(need) for need in sorted(needs)]


def params(elems: Sequence[ir.Elem]) -> list[Any]:
    """One pytest parameter per element type, needing f16/f64/int64 where used."""
    return [pytest.param(e, id=e.value, marks=_marks(e)) for e in elems]


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
}


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
            cubecl_rng.shuffle(a)
        predicate = fn in ("isnan", "isinf")
        got = launch(cubecl_client, kernels.math1(fn, elem), [a],
                     np.bool_ if predicate else a.dtype)
        with np.errstate(all="ignore"):
            want = ref(a.astype(np.float64))
            want = want if predicate else want.astype(a.dtype)
        check(got, want, f"{fn} on {elem.value}", cubecl_seed, elem=elem,
              exact=fn in ("abs", "floor", "ceil", "isnan", "isinf"), inputs={"a": a})

    @pytest.mark.parametrize("elem", params(NUMERIC))
    @pytest.mark.parametrize("fn", ["min", "max"])
    def test_min_max(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                     cubecl_seed: int, fn: str, elem: ir.Elem) -> None:
        n = random_size(cubecl_rng, DIM)
        a, b = values(cubecl_rng, elem, n), values(cubecl_rng, elem, n)
        got = launch(cubecl_client, kernels.math2(fn, elem), [a, b], a.dtype)
        want = (np.fmin if fn == "min" else np.fmax)(a, b)  # a NaN operand yields the other
        check(got, want, f"{fn} on {elem.value}", cubecl_seed, inputs={"a": a, "b": b})

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
                out.append(pytest.param(s, d, id=f"{s.value}-{d.value}", marks=_marks(s, d)))
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


class TestSelectAndScalars:
    """``select``, conditional expressions and scalar parameters of every type."""

    @pytest.mark.parametrize("conditional", [False, True], ids=["select", "if-else"])
    @pytest.mark.parametrize("elem", params(tuple(E)))
    def test_select(self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                    cubecl_seed: int, elem: ir.Elem, conditional: bool) -> None:
        n = random_size(cubecl_rng, DIM)
        c = values(cubecl_rng, E.BOOL, n)
        a, b = values(cubecl_rng, elem, n), values(cubecl_rng, elem, n)
        got = launch(cubecl_client, kernels.select_kernel(elem, conditional), [c, a, b],
                     a.dtype)
        check(got, np.where(c, a, b), f"select on {elem.value}", cubecl_seed,
              inputs={"c": c, "a": a, "b": b})

    @pytest.mark.parametrize("elem", params(tuple(E)))
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


class TestWeakIntegers:
    """Locals assigned only literals and comptime integers, and loop variables over
    such bounds, take the type of the typed value they first meet: the tree
    reduction and the tiled loop compile with no cast and compute what NumPy does."""

    @pytest.mark.requires("shared_memory:256")
    def test_tree_reduction_with_a_comptime_stride(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        block = 64
        n = random_size(cubecl_rng, block)
        a = values(cubecl_rng, E.I32, n)
        cubes = cubes_for(n, block)
        out = c.empty(cubes.x, np.int32)
        kernels.weak_tree_sum.launch(c, cubes, CubeDim(block), c.create(a), out, BLOCK=block)
        padded = np.zeros(cubes.x * block, np.int32)
        padded[:n] = a
        # Integer addition wraps, so the sum in any order is NumPy's int32 sum.
        want = padded.reshape(-1, block).sum(axis=1, dtype=np.int32)
        check(c.read(out), want, f"tree reduction of {n} i32 in cubes of {block}, "
              "`stride = BLOCK // 2` met by `t < stride`", cubecl_seed, inputs={"a": a})

    @pytest.mark.requires("shared_memory:512")
    def test_tiled_loop_over_a_comptime_tile(
            self, cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
            cubecl_seed: int) -> None:
        c = cubecl_client
        tile = 8
        m, k, n = (int(v) * tile + int(r) for v, r in zip(
            cubecl_rng.integers(1, 5, 3), cubecl_rng.integers(1, tile, 3), strict=True))
        a = cubecl_rng.standard_normal((m, k)).astype(np.float32)
        b = cubecl_rng.standard_normal((k, n)).astype(np.float32)
        out = c.empty(m * n, np.float32)
        kernels.weak_tiled_matmul.launch(
            c, CubeCount(-(-n // tile), -(-m // tile)), CubeDim(tile, tile),
            c.create(a.reshape(-1)), c.create(b.reshape(-1)), out, m, n, k, TILE=tile)
        want = a.astype(np.float64) @ b.astype(np.float64)
        scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
        check(c.read(out).reshape(m, n), want.astype(np.float32),
              f"tiled loop `for e in range(TILE)`, {m}x{k} @ {k}x{n}", cubecl_seed,
              elem=E.F32, exact=False, scale=scale * 4)
