"""The f64 math functions GLSL.std.450 lacks (exp log sin cos tanh erf pow), the core's
polyfills in double precision: a few ulp over the whole double range, against the
host's libm, including the hard cases of the argument reductions."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
import vk_kernels as K

from cubecl_server.client import ComputeClient
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.lowering.passes.mathlib.trig import TWO_OVER_PI_WORDS as _TWO_OVER_PI

RTOL = 2e-15  # about 10 ulp; the suite asks for 1e-12

FNS = ("exp", "log", "sin", "cos", "tanh", "erf", "pow")
REF = {"exp": math.exp, "log": math.log, "sin": math.sin, "cos": math.cos,
       "tanh": math.tanh, "erf": math.erf}


def _pi(digits: int) -> Decimal:
    """pi by Machin's formula, to ``digits`` digits."""
    with localcontext() as ctx:
        ctx.prec = digits + 10

        def arctan_inv(x: int) -> Decimal:
            total, power, n, sign = Decimal(0), Decimal(1) / x, 1, 1
            while power > Decimal(10) ** -(digits + 5):
                total += sign * power / n
                power /= x * x
                n, sign = n + 2, -sign
            return total

        return +(16 * arctan_inv(5) - 4 * arctan_inv(239))


def test_two_over_pi_table_is_the_bits_of_2_over_pi() -> None:
    bits = 32 * (len(_TWO_OVER_PI) - 2)
    with localcontext() as ctx:
        ctx.prec = 500
        want = int(2 / _pi(480) * (Decimal(2) ** bits))
    got = 0
    for w in _TWO_OVER_PI:
        got = (got << 32) | w
    assert _TWO_OVER_PI[:2] == (0, 0)
    assert got == want


def _run(c: ComputeClient, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    n = len(x)
    out = c.empty(len(FNS) * n, np.float64)
    K.math_f64.launch(c, CubeCount(-(-n // 64)), CubeDim(64), c.create(x), c.create(y), out)
    got = c.read(out).reshape(len(FNS), n)
    return dict(zip(FNS, got, strict=True))


def _ref(fn: str, v: float) -> float:
    try:
        return REF[fn](v)
    except ValueError:  # log of a negative number or of 0
        return -math.inf if v == 0 else math.nan
    except OverflowError:
        return math.inf


def _check(fn: str, x: np.ndarray, got: np.ndarray, want: np.ndarray) -> None:
    ok = np.isclose(got, want, rtol=RTOL, atol=0, equal_nan=True) | (got == want)
    # Results that are subnormal keep fewer bits: an absolute tolerance there.
    with np.errstate(invalid="ignore"):
        ok |= (np.abs(want) < 1e-300) & (np.abs(got - want) < 1e-320)
    bad = np.flatnonzero(~ok)
    assert bad.size == 0, (f"{fn}: {bad.size} wrong, e.g. x={x[bad[:3]]!r} got "
                           f"{got[bad[:3]]!r} want {want[bad[:3]]!r}")


@pytest.fixture
def f64_client(shared_client: ComputeClient) -> ComputeClient:
    if not shared_client.capabilities.f64:
        pytest.skip("the device has no f64")
    return shared_client


def test_over_the_whole_range(f64_client: ComputeClient) -> None:
    rng = np.random.default_rng()
    n = 6000
    special = np.array([0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 5e-324, 1e-310,
                        2.2250738585072014e-308, 1.7976931348623157e308, 709.78, -745.0,
                        -745.2, 1048576.0, -1048576.0, 1e22, 2.0 ** 1023, 5.9, 6.0, 22.0])
    # Magnitudes spread over the exponents, both signs; and a dense part near 0..100.
    x = np.concatenate([special, rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-310, 308, n),
                        rng.uniform(-100, 100, n)])
    y = rng.uniform(-3, 3, len(x))
    got = _run(f64_client, x, y)
    for fn in REF:
        want = np.array([_ref(fn, float(v)) for v in x])
        _check(fn, x, got[fn], want)
    a = np.abs(x)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    # pow: the exponent y*log|x| carries the error of log, relative to |y log x| (<= 2e3
    # here): a few ulp of the exponent, so a wider tolerance far from 1.
    scale = np.maximum(1.0, np.abs(y * np.log(np.where(a > 0, a, 1.0))))
    g = got["pow"]
    with np.errstate(invalid="ignore"):
        ok = ((np.abs(g - want) <= RTOL * scale * np.abs(want)) | (g == want)
              | (np.isnan(g) & np.isnan(want))
              | ((np.abs(want) < 1e-300) & (np.abs(g) < 1e-300)))
    assert ok.all(), (x[~ok][:3], y[~ok][:3], got["pow"][~ok][:3], want[~ok][:3])


def test_hard_cases_of_the_trigonometric_reduction(f64_client: ComputeClient) -> None:
    # Doubles closest to multiples of pi/2 (the reduction's worst cases) and neighbours
    # of its switch from Cody-Waite to Payne-Hanek.
    x = np.array([6381956970095103.0 * 2.0 ** 797, 5706116302872737.0 * 2.0 ** -1,
                  math.pi / 2, math.pi, 3 * math.pi / 2, 1e6 * math.pi, 355.0, 103993.0,
                  np.nextafter(1048576.0, 0), 1048576.0, np.nextafter(1048576.0, 2e6),
                  8.0 * 2.0 ** 52, 2.0 ** 60, -(2.0 ** 100)])
    got = _run(f64_client, x, np.ones_like(x))
    for fn in ("sin", "cos"):
        want = np.array([REF[fn](float(v)) for v in x])
        _check(fn, x, got[fn], want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pow_special_cases_are_c(shared_client: ComputeClient, dtype: type) -> None:
    if dtype is np.float64 and not shared_client.capabilities.f64:
        pytest.skip("the device has no f64")
    inf, nan = np.inf, np.nan
    pairs = [(0.0, -1.0), (-0.0, -1.0), (-0.0, -2.0), (-0.0, 3.0), (-0.0, 0.5), (0.0, 0.0),
             (-2.0, 3.0), (-2.0, 2.0), (-2.0, 0.5), (-2.0, -3.0), (2.0, inf), (0.5, inf),
             (-1.0, inf), (-1.0, -inf), (0.5, -inf), (inf, -2.0), (inf, 0.5), (-inf, 3.0),
             (-inf, 2.0), (-inf, 0.5), (-inf, -3.0), (-inf, -0.5), (nan, 0.0), (1.0, nan),
             (nan, 1.0), (3.0, 1000.0), (3.0, -1000.0), (-8.0, 1.0 / 3.0)]
    x = np.array([p[0] for p in pairs], dtype)
    y = np.array([p[1] for p in pairs], dtype)
    c = shared_client
    out = c.empty(len(x), dtype)
    K.pow_only(dtype).launch(c, CubeCount(1), CubeDim(64), c.create(x), c.create(y), out)
    got = c.read(out)
    with np.errstate(all="ignore"):
        want = np.power(x, y)  # C's pow
    # Zeros, infinities and NaNs exactly, with their signs; finite results to RTOL.
    close = np.isclose(got, want, rtol=RTOL, atol=0) & np.isfinite(want) & (want != 0)
    same = ((got == want) | close) & (np.signbit(got) == np.signbit(want)) | (
        np.isnan(got) & np.isnan(want))
    assert same.all(), [(pairs[i], got[i], want[i]) for i in np.flatnonzero(~same)]
