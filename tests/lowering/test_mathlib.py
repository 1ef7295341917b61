"""The core's math library alone: each polyfill, lowered for a target with no native
float function and run on the cpu backend, against NumPy at the conformance suite's
edge values and fresh random ones, within ``docs/ir.md``'s budget (the rules of
:func:`cubecl_server.conformance.mathspec.wrong`); f16 through f32, lines
element by element, and what the pass leaves and refuses."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers.passkit import POS, UNCHECKED, Seeded, kern, ld, nodes, run

from cubecl_server import ir
from cubecl_server.conformance import mathspec as spec
from cubecl_server.errors import CompilationError
from cubecl_server.lowering.passes.mathlib import POLYFILLS, polyfill_math
from cubecl_server.lowering.passes.native import Native

E = ir.Elem
M = ir.MathFn
BARE = Native()
FLOAT_FNS = [f for f in (*spec.ONE_ARG, *spec.TWO_ARGS) if f in POLYFILLS]


@pytest.fixture
def rng() -> Seeded:
    """A fresh generator (its seed in failure messages)."""
    return Seeded()


def _lowered(fn: Any, t: ir.Type, arity: int, native: Native = BARE) -> ir.Kernel:
    args = tuple(ld(n, POS, t) for n in "ab"[:arity])
    value = ir.Binary(fn, *args, t) if isinstance(fn, ir.BinOp) else ir.Math(fn, args, t)
    spec_ = [(n, f"{ir.elem_of(t).value}[{t.size}]" if isinstance(t, ir.Line)
              else f"{t.value}[]") for n in (*"ab"[:arity], "out")]
    return polyfill_math(kern([ir.Store("out", POS, value)], spec_), native, "bare")


def _run(fn: Any, t: ir.Type, *args: np.ndarray) -> np.ndarray:
    out = np.zeros_like(args[0])
    run(_lowered(fn, t, len(args)), [*args, out], mode=UNCHECKED)
    return out


def test_every_float_function_has_a_polyfill() -> None:
    needed = {M.EXP, M.EXP2, M.EXPM1, M.LOG, M.LOG2, M.LOG1P, M.SIN, M.COS, M.TAN, M.ASIN,
              M.ACOS, M.ATAN, M.ATAN2, M.SINH, M.COSH, M.TANH, M.ERF, M.POW, M.HYPOT,
              ir.BinOp.REM}
    assert needed <= set(POLYFILLS)


@pytest.mark.parametrize("elem", [E.F32, E.F64], ids=lambda e: e.value)
@pytest.mark.parametrize("fn", FLOAT_FNS, ids=lambda f: getattr(f, "value", "fmod")
                         if isinstance(f, M) else "fmod")
def test_polyfill_within_budget(rng: Seeded, fn: Any, elem: ir.Elem) -> None:
    gen = rng.gen
    if fn in spec.ONE_ARG:
        args: tuple[np.ndarray, ...] = (np.concatenate([spec.edges(elem),
                                                        spec.random_values(gen, elem, fn)]),)
    else:
        args = spec.arg_pairs(gen, elem, fn)
    got = _run(fn, elem, *args)
    want = spec.reference(fn, elem, *args)
    bad = np.flatnonzero(spec.wrong(got, want, spec.BUDGET.get(fn, spec.DEFAULT_BUDGET)))
    assert bad.size == 0, [(tuple(a[i] for a in args), got[i], want[i]) for i in bad[:5]] \
        + [str(rng)]


def test_issue_36_values() -> None:
    x = np.array([-0.0, -100.0, 1e-45, 3.4e38, 88.7, 0.99356], np.float32)
    got = {f: _run(f, E.F32, x) for f in (M.TANH, M.EXP, M.LOG, M.SIN)}
    assert np.signbit(got[M.TANH][0]) and got[M.TANH][0] == 0
    assert got[M.EXP][1] == np.float32(np.exp(-100.0)) and got[M.EXP][1] > 0
    np.testing.assert_allclose(got[M.LOG][2], -103.27893, rtol=1e-6)
    np.testing.assert_allclose(got[M.SIN][3], np.sin(np.float64(x[3])), rtol=1e-6)


def test_f16_is_computed_in_f32() -> None:
    x = np.linspace(-8, 8, 333).astype(np.float16)
    k = _lowered(M.EXP, E.F16, 1)
    assert any(isinstance(n, ir.Cast) and n.type is E.F32 for n in nodes(k, ir.Cast))
    out = np.zeros_like(x)
    run(k, [x, out], mode=UNCHECKED)
    want = np.exp(x.astype(np.float64)).astype(np.float16)
    assert (spec.ulp_distance(out.astype(np.float32), want.astype(np.float32))
            <= 2 ** 13).all()  # one f16 ulp is 2^13 f32 ones


def test_a_line_is_computed_element_by_element(rng: Seeded) -> None:
    x = rng.gen.uniform(-20, 20, 4 * 17).astype(np.float32)
    line = ir.Line(E.F32, 4)
    k = _lowered(M.TANH, line, 1)
    assert nodes(k, ir.LineMake), "a line's function is its elements' ones"
    out = np.zeros_like(x)
    run(k, [x, out], count=2, dim=16, mode=UNCHECKED)
    assert not spec.wrong(out, np.tanh(x.astype(np.float64)).astype(np.float32), 4).any()


def test_native_functions_stay_and_the_rest_goes() -> None:
    native = Native(functions={E.F32: frozenset({M.EXP})})
    kept = _lowered(M.EXP, E.F32, 1, native)
    assert [n.fn for n in nodes(kept, ir.Math)] == [M.EXP]
    gone = _lowered(M.SINH, E.F32, 1, native)
    fns = {n.fn for n in nodes(gone, ir.Math)}
    assert M.SINH not in fns and M.EXPM1 not in fns, "expm1 is polyfilled in turn"
    rem = _lowered(ir.BinOp.REM, E.F32, 2)
    assert not [n for n in nodes(rem, ir.Binary) if n.op is ir.BinOp.REM], "fmod as IR"
    assert nodes(rem, ir.While), "one exact subtraction per binade, in a loop"


def test_a_function_without_a_polyfill_is_a_compilation_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(POLYFILLS, M.ERF)
    with pytest.raises(CompilationError, match="erf of f32 is neither native"):
        _lowered(M.ERF, E.F32, 1)
