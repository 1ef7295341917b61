"""Tests of the kernel language frontend: Python source -> ir.Kernel (signatures, exact IR,
comptime, weak typing, locals, loops, operators; calls and what the language refuses
are in test_calls_and_unsupported.py)."""

# Kernel bodies are compiled, never run: locals that look unused to a linter are the
# IR under test.
# ruff: noqa: F841, B007

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers.frontend import only_assign, stmts, syntax_error
from helpers.marks import marked_line

from cubecl_server import ir
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
    Comptime,
    KernelSignature,
    bool_,
    exp,
    f32,
    f64,
    i32,
    i64,
    kernel_signature,
    parse_kernel,
    u32,
)
from cubecl_server.lang import max as k_max

E = ir.Elem
C = ir.Const
V = ir.Var
B = ir.Binary
OP = ir.BinOp



def marked(tag: str) -> int:
    """The line of this file that ends with the comment ``# <tag>``."""
    return marked_line(__file__, tag)


# ---------------------------------------------------------------- kernels

GLOBAL_SCALE = 3
GLOBAL_HALF = 0.5
GLOBAL_FLAG = True
GLOBAL_NP = np.float64(2.5)
GLOBAL_OBJ = object()


def saxpy(x: Array[f32], y: Array[f32], a: f32, n: u32) -> None:
    """y = a*x + y where in range."""
    i = ABSOLUTE_POS
    if i < n:
        y[i] = a * x[i] + y[i]


def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn


@decorate
def decorated(out: Array[i32]):  # <decorated-def>
    out[0] = 1


def reduce_like(a: Array[f32], out: Array[f32], *, N: Comptime[int],
                USE_EXP: Comptime[bool] = False, SCALE: Comptime[float] = 1.0):
    acc = 0.0
    for j in range(N * 2):
        acc += a[j]
    if USE_EXP:
        acc = exp(acc)
    else:
        acc = acc * SCALE
    out[0] = acc


def comptime_guarded(a: Array[f32], *, WIDE: Comptime[bool]):
    if WIDE:
        a[0] = f32(len(a))
    else:
        # Invalid when compiled: i32 local into an f32 array. The branch is dropped.
        x = i32(1)
        a[0] = x


def every_statement(a: Array[f32], b: Array[i32], n: i32):
    total = 0
    for k in range(n):
        if k == 3:
            continue
        total += k
    for k in range(10, 0, -2):
        total -= k
    while total > 100:
        total //= 2
        if total < 7:
            break
    b[0] = total
    b[1] *= 2
    pass
    return


# ---------------------------------------------------------------- signature


def test_kernel_signature_reads_runtime_and_comptime_params() -> None:
    sig = kernel_signature(reduce_like)
    assert isinstance(sig, KernelSignature)
    assert sig.params == (ir.Param("a", E.F32, True), ir.Param("out", E.F32, True))
    assert sig.comptime == {"N": int, "USE_EXP": bool, "SCALE": float}
    assert list(sig.comptime) == ["N", "USE_EXP", "SCALE"]
    assert sig.comptime_defaults == {"USE_EXP": False, "SCALE": 1.0}
    assert kernel_signature(saxpy).params == (
        ir.Param("x", E.F32, True), ir.Param("y", E.F32, True),
        ir.Param("a", E.F32, False), ir.Param("n", E.U32, False))


def test_bind_comptime_checks_values() -> None:
    sig = kernel_signature(reduce_like)
    assert sig.bind_comptime({"N": 4}) == (("N", 4), ("USE_EXP", False), ("SCALE", 1.0))
    bound = sig.bind_comptime({"N": 4, "SCALE": 2})
    assert bound[2] == ("SCALE", 2.0) and isinstance(bound[2][1], float)
    with pytest.raises(TypeError, match="needs a value for its comptime parameter `N`"):
        sig.bind_comptime({})
    with pytest.raises(TypeError, match="no comptime parameter `M`"):
        sig.bind_comptime({"N": 1, "M": 2})
    with pytest.raises(TypeError, match=r"`N`.*Comptime\[int\]"):
        sig.bind_comptime({"N": True})
    with pytest.raises(TypeError, match="`USE_EXP`"):
        sig.bind_comptime({"N": 1, "USE_EXP": 1})
    with pytest.raises(TypeError, match="`N`"):
        sig.bind_comptime({"N": 1.5})


def sig_missing_annotation(a: Array[f32], n):  # <sig-missing>
    pass


def sig_default(a: Array[f32], n: i32 = 3):  # <sig-default>
    pass


def sig_varargs(a: Array[f32], *rest: f32):  # <sig-varargs>
    pass


def sig_kwargs(a: Array[f32], **more: f32):  # <sig-kwargs>
    pass


def sig_positional_comptime(a: Array[f32], N: Comptime[int]):  # <sig-poscomptime>
    pass


def sig_kwonly_runtime(a: Array[f32], *, n: i32):  # <sig-kwruntime>
    pass


def sig_python_type(a: Array[f32], n: int):  # <sig-pytype>
    pass


def sig_returns(a: Array[f32]) -> int:  # <sig-returns>
    pass


@pytest.mark.parametrize(("fn", "tag", "fragment"), [
    (sig_missing_annotation, "sig-missing", "parameter `n` needs an annotation"),
    (sig_default, "sig-default", "runtime parameter `n` cannot have a default"),
    (sig_varargs, "sig-varargs", "`*rest` is not supported"),
    (sig_kwargs, "sig-kwargs", "`**more` is not supported"),
    (sig_positional_comptime, "sig-poscomptime", "must be keyword-only"),
    (sig_kwonly_runtime, "sig-kwruntime", "keyword-only parameter `n` must be Comptime"),
    (sig_python_type, "sig-pytype", "write `n: i32`"),
    (sig_returns, "sig-returns", "returns nothing"),
])
def test_signature_errors(fn: Callable[..., Any], tag: str, fragment: str) -> None:
    with pytest.raises(KernelSyntaxError) as info:
        kernel_signature(fn)
    assert fragment in info.value.message
    assert info.value.line == marked(tag)
    assert info.value.file == __file__
    with pytest.raises(KernelSyntaxError):
        parse_kernel(fn, {})


def test_string_annotations_are_evaluated() -> None:
    ns: dict[str, Any] = {}
    src = "def k(a: 'Array[f32]', n: 'i32', *, N: 'Comptime[int]'): pass\n"
    exec(compile(src, "<string>", "exec"), {"Array": Array, "f32": f32, "i32": i32,
                                            "Comptime": Comptime}, ns)
    sig = kernel_signature(ns["k"])
    assert sig.params == (ir.Param("a", E.F32, True), ir.Param("n", E.I32, False))
    assert sig.comptime == {"N": int}


# ---------------------------------------------------------------- exact IR


def test_saxpy_exact_ir() -> None:
    k = parse_kernel(saxpy, {})
    assert k == ir.Kernel(
        name="saxpy",
        params=(ir.Param("x", E.F32, True), ir.Param("y", E.F32, True),
                ir.Param("a", E.F32, False), ir.Param("n", E.U32, False)),
        locals=(ir.Local("i", E.U32),),
        shared=(),
        body=(
            ir.Assign("i", ir.Builtin(ir.BuiltinName.ABSOLUTE_POS)),
            ir.If(B(OP.LT, V("i", E.U32), V("n", E.U32), E.BOOL), (
                ir.Store("y", V("i", E.U32), B(
                    OP.ADD,
                    B(OP.MUL, V("a", E.F32), ir.Load("x", V("i", E.U32), E.F32), E.F32),
                    ir.Load("y", V("i", E.U32), E.F32), E.F32)),
            ), ()),
        ),
        comptime=(),
    )
    assert k.loc == ir.SourceLoc(__file__, inspect.getsourcelines(saxpy)[1])
    assert k.written_arrays == frozenset({"y"})


def test_loc_is_the_def_line_after_decorators() -> None:
    k = parse_kernel(decorated, {})
    assert k.loc is not None
    assert k.loc.line == marked("decorated-def")
    assert k.loc.file == __file__


def test_every_statement_kind() -> None:
    k = parse_kernel(every_statement, {})
    assert k.locals == (ir.Local("total", E.I32), ir.Local("k", E.I32))
    body = k.body
    assert body[0] == ir.Assign("total", C(0, E.I32))
    loop = body[1]
    assert isinstance(loop, ir.For)
    assert (loop.var, loop.start, loop.stop, loop.step) == (
        "k", C(0, E.I32), V("n", E.I32), C(1, E.I32))
    assert loop.body == (
        ir.If(B(OP.EQ, V("k", E.I32), C(3, E.I32), E.BOOL), (ir.Continue(),), ()),
        ir.Assign("total", B(OP.ADD, V("total", E.I32), V("k", E.I32), E.I32)),
    )
    down = body[2]
    assert isinstance(down, ir.For)
    assert (down.start, down.stop, down.step) == (C(10, E.I32), C(0, E.I32), C(-2, E.I32))
    assert down.body == (
        ir.Assign("total", B(OP.SUB, V("total", E.I32), V("k", E.I32), E.I32)),)
    loop2 = body[3]
    assert isinstance(loop2, ir.While)
    assert loop2.cond == B(OP.GT, V("total", E.I32), C(100, E.I32), E.BOOL)
    assert loop2.body == (
        ir.Assign("total", B(OP.IDIV, V("total", E.I32), C(2, E.I32), E.I32)),
        ir.If(B(OP.LT, V("total", E.I32), C(7, E.I32), E.BOOL), (ir.Break(),), ()),
    )
    assert body[4] == ir.Store("b", C(0, E.I32), V("total", E.I32))
    assert body[5] == ir.Store("b", C(1, E.I32), B(
        OP.MUL, ir.Load("b", C(1, E.I32), E.I32), C(2, E.I32), E.I32))
    assert body[6] == ir.Return()
    assert len(body) == 7
    text = ir.format_kernel(k)
    assert "while (total > 100:i32):" in text


def elif_chain(a: Array[f32], n: i32):
    if n < 0:
        a[0] = -1.0
    elif n == 0:
        a[0] = 0.0
    else:
        a[0] = 1.0


def test_elif_nests_in_orelse() -> None:
    (top,) = stmts(elif_chain)
    assert isinstance(top, ir.If)
    assert top.then == (ir.Store("a", C(0, E.I32), C(-1.0, E.F32)),)
    (inner,) = top.orelse
    assert isinstance(inner, ir.If)
    assert inner.cond == B(OP.EQ, V("n", E.I32), C(0, E.I32), E.BOOL)
    assert inner.orelse == (ir.Store("a", C(0, E.I32), C(1.0, E.F32)),)


# ---------------------------------------------------------------- comptime


def test_comptime_values_are_baked_in_and_folded() -> None:
    k = parse_kernel(reduce_like, {"N": 8})
    assert k.comptime == (("N", 8), ("USE_EXP", False), ("SCALE", 1.0))
    loop = k.body[1]
    assert isinstance(loop, ir.For)
    assert loop.stop == C(16, E.I32)  # N*2 folded into one constant
    # USE_EXP is False: only the else branch remains, with SCALE a typed constant.
    assert k.body[2] == ir.Assign("acc", B(OP.MUL, V("acc", E.F32), C(1.0, E.F32), E.F32))
    assert not any(isinstance(n, ir.If) for n in ir.walk(k.body))
    assert not any(isinstance(n, ir.Math) for n in ir.walk(k.body))
    k2 = parse_kernel(reduce_like, {"N": 8, "USE_EXP": True})
    assert k2.body[2] == ir.Assign("acc", ir.Math(ir.MathFn.EXP, (V("acc", E.F32),), E.F32))


def test_untaken_comptime_branch_is_not_compiled() -> None:
    k = parse_kernel(comptime_guarded, {"WIDE": True})
    assert k.body == (ir.Store("a", C(0, E.I32), ir.Cast(ir.Len("a"), E.F32)),)
    assert k.locals == ()
    err = syntax_error(comptime_guarded, {"WIDE": False})
    assert "`a` holds f32 but the value is i32" in err.message


def test_distinct_comptime_values_give_distinct_digests() -> None:
    digests = {parse_kernel(reduce_like, {"N": n}).digest for n in (1, 2, 3)}
    digests.add(parse_kernel(reduce_like, {"N": 1, "SCALE": 2.0}).digest)
    digests.add(parse_kernel(reduce_like, {"N": 1, "USE_EXP": True}).digest)
    assert len(digests) == 5
    assert parse_kernel(reduce_like, {"N": 2}).digest == parse_kernel(
        reduce_like, {"N": 2}).digest
    # A comptime value that the body does not change still distinguishes the kernel.
    a = parse_kernel(comptime_guarded, {"WIDE": True})
    assert a.comptime == (("WIDE", True),)


def test_comptime_type_errors_are_type_errors() -> None:
    with pytest.raises(TypeError, match="`N`"):
        parse_kernel(reduce_like, {})
    with pytest.raises(TypeError, match="`N`"):
        parse_kernel(reduce_like, {"N": "4"})


def comptime_assigned(a: Array[f32], *, N: Comptime[int]):
    N = 3  # <comptime-assigned>


def test_assigning_a_comptime_param_is_an_error() -> None:
    err = syntax_error(comptime_assigned, {"N": 1})
    assert "comptime parameter `N`" in err.message
    assert err.line == marked("comptime-assigned")


def comptime_truthiness(a: Array[f32], *, N: Comptime[int]):
    if N:  # <comptime-truthy>
        a[0] = 1.0


def test_if_on_comptime_int_needs_a_comparison() -> None:
    err = syntax_error(comptime_truthiness, {"N": 1})
    assert "must be bool" in err.message and "int literal" in err.message
    assert err.line == marked("comptime-truthy")


# ---------------------------------------------------------------- weak typing


def weak_adopts(a: Array[f32], b: Array[u32], x: f32, i: u32):
    y = x * 2
    z = 1 + i
    b[i] = 7
    a[0] = 3
    w = x + GLOBAL_SCALE + GLOBAL_HALF


def test_weak_literals_adopt_the_other_type() -> None:
    body = stmts(weak_adopts)
    assert body[0] == ir.Assign("y", B(OP.MUL, V("x", E.F32), C(2.0, E.F32), E.F32))
    assert isinstance(body[0].value, B)
    assert isinstance(body[0].value.rhs, C) and isinstance(body[0].value.rhs.value, float)
    assert body[1] == ir.Assign("z", B(OP.ADD, C(1, E.U32), V("i", E.U32), E.U32))
    assert body[2] == ir.Store("b", V("i", E.U32), C(7, E.U32))
    assert body[3] == ir.Store("a", C(0, E.I32), C(3.0, E.F32))
    assert body[4] == ir.Assign("w", B(OP.ADD, B(OP.ADD, V("x", E.F32), C(3.0, E.F32), E.F32),
                                       C(0.5, E.F32), E.F32))


def weak_alone(a: Array[f32]):
    p = 1
    q = 2.5
    r = True
    s = GLOBAL_SCALE * 2 + 1
    t = -7 // 2
    u = -7 % 2
    v = 7.5 % 2
    w = 2 ** 10
    x = GLOBAL_SCALE / 2.0
    y = 1 + 0.5
    z = GLOBAL_FLAG and not False
    c = 1 < 2 < 3
    sh = (1 << 4) | 3 ^ 1 & 7


def test_weak_values_fold_and_default() -> None:
    k = parse_kernel(weak_alone, {})
    values = {s.name: s.value for s in k.body if isinstance(s, ir.Assign)}
    assert values == {
        "p": C(1, E.I32), "q": C(2.5, E.F32), "r": C(True, E.BOOL), "s": C(7, E.I32),
        "t": C(-3, E.I32), "u": C(-1, E.I32), "v": C(1.5, E.F32), "w": C(1024, E.I32),
        "x": C(1.5, E.F32), "y": C(1.5, E.F32), "z": C(True, E.BOOL), "c": C(True, E.BOOL),
        "sh": C((1 << 4) | 3 ^ 1 & 7, E.I32),
    }
    assert [loc.name for loc in k.locals] == list(values)


def weak_float_meets_int(a: Array[i32]):
    i = 0
    j = i + 0.5  # <float-meets-int>


def weak_too_big(a: Array[f32]):
    x = 3000000000  # <too-big>


def weak_negative_unsigned(b: Array[u32]):
    b[0] = -1  # <neg-unsigned>


def weak_bool_meets_int(a: Array[i32], n: i32):
    x = n + True  # <bool-meets-int>


def wide_constant(a: Array[f32]):
    x = i64(3000000000)


def test_weak_literal_errors() -> None:
    err = syntax_error(weak_float_meets_int)
    assert err.line == marked("float-meets-int")
    assert "type mismatch in `i + 0.5`: i32 vs float literal" in err.message
    assert "`i` is i32" in err.message and "f32(i)" in err.message
    err = syntax_error(weak_too_big)
    assert err.line == marked("too-big")
    assert "does not fit in i32" in err.message and "i64(3000000000)" in err.message
    err = syntax_error(weak_negative_unsigned)
    assert err.line == marked("neg-unsigned") and "does not fit in u32" in err.message
    err = syntax_error(weak_bool_meets_int)
    assert err.line == marked("bool-meets-int") and "bool" in err.message
    assert only_assign(wide_constant) == C(3000000000, E.I64)


# ---------------------------------------------------------------- mismatches


def mismatch_compare(a: Array[f32], n: i32):
    i = ABSOLUTE_POS
    if i < n:  # <mismatch-compare>
        a[i] = 1.0


def mismatch_arith(a: Array[f32], x: f64, y: f32):
    a[0] = f32(x * y)  # <mismatch-arith>


def mismatch_store(a: Array[f32], n: i32):
    a[0] = n  # <mismatch-store>


def mismatch_reassign(a: Array[f32]):
    acc = 0
    acc = a[0]  # <mismatch-reassign>


def mismatch_augassign(a: Array[f32]):
    acc = 0
    for i in range(len(a)):
        acc += a[i]  # <mismatch-aug>


def mismatch_select(a: Array[f32], n: i32, x: f32):
    a[0] = x if n > 0 else n  # <mismatch-select>


def mismatch_math(a: Array[f32], n: i32, x: f32):
    a[0] = k_max(x, n)  # <mismatch-math>


def test_mismatch_messages_name_operator_types_and_variables() -> None:
    err = syntax_error(mismatch_compare)
    assert err.line == marked("mismatch-compare")
    assert "type mismatch in `i < n`: u32 vs i32" in err.message
    assert "`n` is i32" in err.message and "`i` is u32" in err.message
    assert "cast one side, e.g. u32(n)" in err.message
    assert str(err).startswith(f"{__file__}:{err.line}: ")

    err = syntax_error(mismatch_arith)
    assert err.line == marked("mismatch-arith")
    assert "`x * y`: f64 vs f32" in err.message and "`y` is f32" in err.message

    err = syntax_error(mismatch_store)
    assert err.line == marked("mismatch-store")
    assert "`a` holds f32 but the value is i32" in err.message and "f32(n)" in err.message

    err = syntax_error(mismatch_reassign)
    assert err.line == marked("mismatch-reassign")
    assert "`acc`" in err.message and "is i32" in err.message and "f32" in err.message
    assert f"line {marked('mismatch-reassign') - 1}" in err.message

    err = syntax_error(mismatch_augassign)
    assert err.line == marked("mismatch-aug")
    assert "`acc` is i32" in err.message and "i32 vs f32" in err.message

    err = syntax_error(mismatch_select)
    assert err.line == marked("mismatch-select") and "f32 vs i32" in err.message

    err = syntax_error(mismatch_math)
    assert err.line == marked("mismatch-math") and "f32 vs i32" in err.message


# ---------------------------------------------------------------- locals


def read_before_assign(a: Array[f32]):
    y = 1.0
    if y > 0.0:
        a[0] = x  # noqa: F821  # <read-before>
    x = 2.0


def assign_array_param(a: Array[f32]):
    a = 1.0  # <assign-array>


def assign_scalar_param(a: Array[f32], n: i32, n_copy: i32):
    n = n + 1
    a[n] = 1.0


def loop_var_assigned(a: Array[f32]):
    for i in range(4):
        i = 2  # <loop-var-assigned>


def annotated_local(a: Array[f64], n: i32):
    acc: f64 = 0
    acc += a[n]
    a[0] = acc


def multi_target(a: Array[f32]):
    x = y = 1.5
    a[0] = x + y


def test_local_rules() -> None:
    err = syntax_error(read_before_assign)
    assert err.line == marked("read-before") and "`x` is read before it is assigned" \
        in err.message
    err = syntax_error(assign_array_param)
    assert err.line == marked("assign-array") and "array parameter `a`" in err.message
    err = syntax_error(loop_var_assigned)
    assert err.line == marked("loop-var-assigned") and "`i`" in err.message

    k = parse_kernel(assign_scalar_param, {})
    # The copy's name avoids the parameter that is already called n_copy.
    assert k.locals == (ir.Local("n_copy1", E.I32),)
    assert k.body[0] == ir.Assign("n_copy1", V("n", E.I32))
    assert k.body[1] == ir.Assign("n_copy1", B(OP.ADD, V("n_copy1", E.I32), C(1, E.I32),
                                               E.I32))
    assert k.body[2] == ir.Store("a", V("n_copy1", E.I32), C(1.0, E.F32))

    k = parse_kernel(annotated_local, {})
    assert k.locals == (ir.Local("acc", E.F64),)
    assert k.body[0] == ir.Assign("acc", C(0.0, E.F64))

    k = parse_kernel(multi_target, {})
    assert k.body[:2] == (ir.Assign("x", C(1.5, E.F32)), ir.Assign("y", C(1.5, E.F32)))


# ---------------------------------------------------------------- loops


def loop_types(a: Array[f32], n: i32, m: i64):
    for i in range(len(a)):
        a[i] = 0.0
    for j in range(n):
        a[j] = 1.0
    for k in range(2, m, 3):
        a[k] = 2.0
    for w in range(5):
        a[w] = 3.0


def loop_bounds_disagree(a: Array[f32], n: i32):
    for i in range(len(a), n):  # <bounds-disagree>
        a[i] = 0.0


def loop_runtime_step(a: Array[f32], n: i32):
    for i in range(0, 10, n):
        a[i] = 0.0


def loop_step_float(a: Array[f32]):
    for i in range(0, 10, 0.5):  # <step-float>
        a[i] = 0.0


def loop_step_mismatch(a: Array[f32], n: i32, s: u32):
    for i in range(0, n, s):  # <step-mismatch>
        a[i] = 0.0


def loop_runtime_step_unrolled(a: Array[f32], n: i32):
    for i in range(0, 10, n, unroll=True):  # <step-unrolled>
        a[i] = 0.0


def loop_step_zero(a: Array[f32], *, S: Comptime[int]):
    for i in range(0, 10, S):  # <step-zero>
        a[i] = 0.0


def loop_negative_unsigned(a: Array[f32]):
    for i in range(len(a), 0, -1):  # <neg-step-unsigned>
        a[i] = 0.0


def loop_float_bounds(a: Array[f32], x: f32):
    for i in range(x):  # <float-bounds>
        a[0] = 0.0


def loop_over_array(a: Array[f32]):
    for v in (a[0], a[1]):  # <loop-over-array>
        pass


def loop_retyped(a: Array[f32], n: i32):
    for i in range(len(a)):
        a[i] = 0.0
    for i in range(n):  # <loop-retyped>
        a[i] = 1.0


def test_loop_variable_types() -> None:
    k = parse_kernel(loop_types, {})
    assert k.locals == (ir.Local("i", E.U32), ir.Local("j", E.I32), ir.Local("k", E.I64),
                        ir.Local("w", E.I32))
    loops = [s for s in k.body if isinstance(s, ir.For)]
    assert [(f.start, f.stop, f.step) for f in loops] == [
        (C(0, E.U32), ir.Len("a"), C(1, E.U32)),
        (C(0, E.I32), V("n", E.I32), C(1, E.I32)),
        (C(2, E.I64), V("m", E.I64), C(3, E.I64)),
        (C(0, E.I32), C(5, E.I32), C(1, E.I32)),
    ]
    assert parse_kernel(loop_step_zero, {"S": 2}).body[0] == ir.For(
        "i", C(0, E.I32), C(10, E.I32), C(2, E.I32),
        (ir.Store("a", V("i", E.I32), C(0.0, E.F32)),))
    # A step known at run time only types the loop with the bounds.
    assert parse_kernel(loop_runtime_step, {}).body[0] == ir.For(
        "i", C(0, E.I32), C(10, E.I32), V("n", E.I32),
        (ir.Store("a", V("i", E.I32), C(0.0, E.F32)),))


@pytest.mark.parametrize(("fn", "tag", "fragment", "comptime"), [
    (loop_bounds_disagree, "bounds-disagree", "u32 vs i32", {}),
    (loop_step_float, "step-float", "the step of range() must be an integer", {}),
    (loop_step_mismatch, "step-mismatch", "bounds and step of range() must share one type, "
                                          "i32 vs u32", {}),
    (loop_runtime_step_unrolled, "step-unrolled", "needs constant bounds and step", {}),
    (loop_step_zero, "step-zero", "must not be zero", {"S": 0}),
    (loop_negative_unsigned, "neg-step-unsigned", "negative step needs a signed", {}),
    (loop_float_bounds, "float-bounds", "integer bounds", {}),
    (loop_over_array, "loop-over-array", "only `for i in range(...)` loops and `for x in a` "
                                          "over an array", {}),
    (loop_retyped, "loop-retyped", "`i` is already u32", {}),
])
def test_loop_errors(fn: Callable[..., Any], tag: str, fragment: str,
                     comptime: dict[str, object]) -> None:
    err = syntax_error(fn, comptime)
    assert fragment in err.message
    assert err.line == marked(tag)


# ---------------------------------------------------------------- operators


def operators(a: Array[f32], b: Array[i32], x: f32, n: i32, u: u32, c: bool_):
    q = x / 2.0
    r = n // 3
    s = n % 3
    t = x % 1.5
    p = x ** 2
    o = (n & 3) | (n ^ 1)
    sh = (u << 2) >> 1
    ng = -x
    inv = ~n
    lg = (c and not c) or n >= 0
    ch = 0 <= n < 10
    sl = x if c else 1.0
    pos = +n


def test_operators_produce_the_documented_nodes() -> None:
    k = parse_kernel(operators, {})
    values = {s.name: s.value for s in k.body if isinstance(s, ir.Assign)}
    x, n, u, c = V("x", E.F32), V("n", E.I32), V("u", E.U32), V("c", E.BOOL)
    assert values["q"] == B(OP.DIV, x, C(2.0, E.F32), E.F32)
    assert values["r"] == B(OP.IDIV, n, C(3, E.I32), E.I32)
    assert values["s"] == B(OP.REM, n, C(3, E.I32), E.I32)
    assert values["t"] == B(OP.REM, x, C(1.5, E.F32), E.F32)
    assert values["p"] == ir.Math(ir.MathFn.POW, (x, C(2.0, E.F32)), E.F32)
    assert values["o"] == B(OP.BITOR, B(OP.BITAND, n, C(3, E.I32), E.I32),
                            B(OP.BITXOR, n, C(1, E.I32), E.I32), E.I32)
    assert values["sh"] == B(OP.SHR, B(OP.SHL, u, C(2, E.U32), E.U32), C(1, E.U32), E.U32)
    assert values["ng"] == ir.Unary(ir.UnOp.NEG, x, E.F32)
    assert values["inv"] == ir.Unary(ir.UnOp.BITNOT, n, E.I32)
    assert values["lg"] == B(OP.OR, B(OP.AND, c, ir.Unary(ir.UnOp.NOT, c, E.BOOL), E.BOOL),
                             B(OP.GE, n, C(0, E.I32), E.BOOL), E.BOOL)
    assert values["ch"] == B(OP.AND, B(OP.LE, C(0, E.I32), n, E.BOOL),
                             B(OP.LT, n, C(10, E.I32), E.BOOL), E.BOOL)
    assert values["sl"] == ir.Select(c, x, C(1.0, E.F32), E.F32)
    assert values["pos"] == n


def op_div_ints(a: Array[f32], n: i32):
    m = n / 2  # <div-ints>


def op_floordiv_floats(a: Array[f32], x: f32):
    y = x // 2.0  # <floordiv-floats>


def op_pow_ints(a: Array[f32], n: i32):
    m = n ** 2  # <pow-ints>


def op_bitand_floats(a: Array[f32], x: f32):
    y = x & 1.0  # <bitand-floats>


def op_and_ints(a: Array[f32], n: i32):
    c = n and n  # <and-ints>


def op_not_int(a: Array[f32], n: i32):
    c = not n  # <not-int>


def op_invert_float(a: Array[f32], x: f32):
    y = ~x  # <invert-float>


def op_neg_bool(a: Array[f32], c: bool_):
    y = -c  # <neg-bool>


def op_shift_bool(a: Array[f32], c: bool_):
    y = c & c  # <bitand-bool>


def op_order_bool(a: Array[f32], c: bool_):
    y = c < c  # <order-bool>


def op_if_number(a: Array[f32], n: i32):
    if n:  # <if-number>
        a[0] = 1.0


def op_while_number(a: Array[f32], n: i32):
    while n - 1:  # <while-number>
        n -= 1


def op_index_float(a: Array[f32], x: f32):
    a[x] = 1.0  # <index-float>


def op_index_float_literal(a: Array[f32]):
    y = a[1.0]  # <index-float-literal>


def op_negative_index(a: Array[f32]):
    y = a[-1]  # <negative-index>


def op_index_scalar(a: Array[f32], x: f32):
    y = x[0]  # <index-scalar>


def op_array_as_value(a: Array[f32]):
    b = a  # <array-value>


def op_is(a: Array[f32], n: i32):
    c = n is n  # <is-compare>


def op_const_div_zero(a: Array[f32]):
    y = 1 // 0  # <div-zero>


@pytest.mark.parametrize(("fn", "tag", "fragment"), [
    (op_div_ints, "div-ints", "use `//`"),
    (op_floordiv_floats, "floordiv-floats", "`//` is integer division"),
    (op_pow_ints, "pow-ints", "`**` needs floats"),
    (op_bitand_floats, "bitand-floats", "`&` needs integer operands"),
    (op_and_ints, "and-ints", "`and` needs bool operands"),
    (op_not_int, "not-int", "`not` needs a bool operand"),
    (op_invert_float, "invert-float", "`~` needs an integer operand"),
    (op_neg_bool, "neg-bool", "unary `-` needs a number"),
    (op_shift_bool, "bitand-bool", "use `and`, `or`, `not`"),
    (op_order_bool, "order-bool", "cannot compare bool"),
    (op_if_number, "if-number", "condition of `if` must be bool, got i32"),
    (op_while_number, "while-number", "condition of `while` must be bool"),
    (op_index_float, "index-float", "an index must be an integer, got f32"),
    (op_index_float_literal, "index-float-literal", "an index must be an integer"),
    (op_negative_index, "negative-index", "negative index"),
    (op_index_scalar, "index-scalar", "`x` is not an array"),
    (op_array_as_value, "array-value", "can only be indexed"),
    (op_is, "is-compare", "not supported"),
    (op_const_div_zero, "div-zero", "by zero"),
])
def test_operator_type_errors(fn: Callable[..., Any], tag: str, fragment: str) -> None:
    err = syntax_error(fn)
    assert fragment in err.message
    assert err.line == marked(tag)
