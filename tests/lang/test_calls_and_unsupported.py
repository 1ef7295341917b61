"""The kernel language frontend, continued: calls (math, casts, builtins, globals and
closure constants), the sentinels outside kernels, and every construct the language
refuses, at its line."""

# Kernel bodies are compiled, never run: locals that look unused to a linter are the
# IR under test.
# ruff: noqa: F841

from __future__ import annotations

import inspect
import math
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers.frontend import stmts, syntax_error
from helpers.marks import marked_line

import cubecl_server.lang as cl
from cubecl_server import ir
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import (
    ABSOLUTE_POS,
    CUBE_DIM_X,
    UNIT_POS_X,
    Array,
    Comptime,
    KernelOnlyError,
    bool_,
    clamp,
    exp,
    f32,
    f64,
    fma,
    i32,
    isnan,
    parse_kernel,
    select,
    sqrt,
    u32,
)
from cubecl_server.lang import abs as k_abs
from cubecl_server.lang import max as k_max
from cubecl_server.lang import min as k_min

E = ir.Elem
C = ir.Const
V = ir.Var
B = ir.Binary
OP = ir.BinOp

# Module globals the kernels below read (the frontend resolves them at parse time).
GLOBAL_SCALE = 3
GLOBAL_FLAG = True
GLOBAL_NP = np.float64(2.5)
GLOBAL_OBJ = object()


def marked(tag: str) -> int:
    """The line of this file that ends with the comment ``# <tag>``."""
    return marked_line(__file__, tag)


# ---------------------------------------------------------------- calls


def math_calls(a: Array[f32], b: Array[i32], x: f32, n: i32, d: f64):
    e = exp(x)
    s = sqrt(d)
    m = k_max(x, 1.0)
    mi = min(n, 3, b[0])
    ab = abs(n)
    ab2 = k_abs(-x)
    cl_ = clamp(n, 0, 10)
    f = fma(x, x, 1)
    nan = isnan(x)
    sel = select(n > 0, n, 0)
    ln = len(a)
    cf = f32(n)
    same = f32(x)
    folded = i32(2.9)
    wrap = u32(-1)
    bl = bool_(0)
    mod = cl.sqrt(x)
    mx = max(3, 4)


def test_math_and_cast_calls() -> None:
    k = parse_kernel(math_calls, {})
    values = {s.name: s.value for s in k.body if isinstance(s, ir.Assign)}
    x, n, d = V("x", E.F32), V("n", E.I32), V("d", E.F64)
    fn = ir.MathFn
    assert values["e"] == ir.Math(fn.EXP, (x,), E.F32)
    assert values["s"] == ir.Math(fn.SQRT, (d,), E.F64)
    assert values["m"] == ir.Math(fn.MAX, (x, C(1.0, E.F32)), E.F32)
    assert values["mi"] == ir.Math(fn.MIN, (ir.Math(fn.MIN, (n, C(3, E.I32)), E.I32),
                                             ir.Load("b", C(0, E.I32), E.I32)), E.I32)
    assert values["ab"] == ir.Math(fn.ABS, (n,), E.I32)
    assert values["ab2"] == ir.Math(fn.ABS, (ir.Unary(ir.UnOp.NEG, x, E.F32),), E.F32)
    assert values["cl_"] == ir.Math(fn.CLAMP, (n, C(0, E.I32), C(10, E.I32)), E.I32)
    assert values["f"] == ir.Math(fn.FMA, (x, x, C(1.0, E.F32)), E.F32)
    assert values["nan"] == ir.Math(fn.ISNAN, (x,), E.BOOL)
    assert values["sel"] == ir.Select(B(OP.GT, n, C(0, E.I32), E.BOOL), n, C(0, E.I32), E.I32)
    assert values["ln"] == ir.Len("a")
    assert values["cf"] == ir.Cast(n, E.F32)
    assert values["same"] == x
    assert values["folded"] == C(2, E.I32)
    assert values["wrap"] == C(4294967295, E.U32)
    assert values["bl"] == C(False, E.BOOL)
    assert values["mod"] == ir.Math(fn.SQRT, (x,), E.F32)
    assert values["mx"] == C(4, E.I32)


def builtins_and_globals(a: Array[f32], out: Array[u32]):
    out[UNIT_POS_X] = CUBE_DIM_X
    a[0] = f32(GLOBAL_NP) + 0.0 if GLOBAL_FLAG else 1


def test_builtins_and_global_constants() -> None:
    body = stmts(builtins_and_globals)
    assert body[0] == ir.Store("out", ir.Builtin(ir.BuiltinName.UNIT_POS_X),
                               ir.Builtin(ir.BuiltinName.CUBE_DIM_X))
    # The constant condition picks its side.
    assert body[1] == ir.Store("a", C(0, E.I32), B(OP.ADD, C(2.5, E.F32), C(0.0, E.F32), E.F32))
    # A NumPy scalar keeps its own type: f64, so it cannot be stored into an f32 array.
    err = syntax_error(np_scalar_store)
    assert "`a` holds f32 but the value is f64" in err.message


def np_scalar_store(a: Array[f32]):
    a[0] = GLOBAL_NP


def test_closure_constants_resolve() -> None:
    width = 4
    ratio = 0.25

    def inner(a: Array[f32]):
        for i in range(width):
            a[i] = a[i] * ratio

    (loop,) = stmts(inner)
    assert isinstance(loop, ir.For)
    assert loop.stop == C(4, E.I32)
    assert loop.body == (ir.Store("a", V("i", E.I32), B(
        OP.MUL, ir.Load("a", V("i", E.I32), E.F32), C(0.25, E.F32), E.F32)),)


def math_int_arg(a: Array[f32], n: i32):
    a[0] = sqrt(n)  # <math-int>


def math_int_literal(a: Array[f32]):
    a[0] = exp(1)  # <math-int-literal>


def math_arity(a: Array[f32], x: f32):
    a[0] = exp(x, x)  # <math-arity>


def math_keyword(a: Array[f32], x: f32):
    a[0] = k_min(x, b=x)  # <math-keyword>


def isnan_int(a: Array[f32], n: i32):
    c = isnan(n)  # <isnan-int>


def python_cast(a: Array[f32], n: i32):
    a[0] = float(n)  # <python-cast>


def len_of_scalar(a: Array[f32], n: i32):
    m = len(n)  # <len-scalar>


def range_as_value(a: Array[f32]):
    r = range(3)  # <range-value>


@pytest.mark.parametrize(("fn", "tag", "fragment"), [
    (math_int_arg, "math-int", "sqrt() needs floats, got i32"),
    (math_int_literal, "math-int-literal", "float literal"),
    (math_arity, "math-arity", "exp() takes 1 argument, got 2"),
    (math_keyword, "math-keyword", "keyword arguments"),
    (isnan_int, "isnan-int", "isnan() needs floats"),
    (python_cast, "python-cast", "f32(x)"),
    (len_of_scalar, "len-scalar", "len() needs an array"),
    (range_as_value, "range-value", "iterable of a `for` loop"),
])
def test_call_errors(fn: Callable[..., Any], tag: str, fragment: str) -> None:
    err = syntax_error(fn)
    assert fragment in err.message
    assert err.line == marked(tag)


def test_sentinels_refuse_to_run_outside_kernels() -> None:
    for call in (lambda: exp(1.0), lambda: f32(1), lambda: select(True, 1, 2),
                 lambda: k_min(1, 2), lambda: isnan(1.0), lambda: bool(ABSOLUTE_POS),
                 lambda: int(ABSOLUTE_POS)):
        with pytest.raises(KernelOnlyError, match="only works inside a @kernel"):
            call()
    assert repr(f32) == "f32" and repr(Array[f32]) == "Array[f32]"
    assert repr(Comptime[int]) == "Comptime[int]"
    with pytest.raises(TypeError):
        Array[int]
    with pytest.raises(TypeError):
        Comptime[str]


def test_public_names_have_docstrings() -> None:
    for name in cl.__all__:
        obj = getattr(cl, name)
        doc = getattr(obj, "__doc__", None)
        assert doc and doc.strip(), name
    for t, elem in ((cl.f16, E.F16), (cl.f32, E.F32), (cl.f64, E.F64), (cl.i32, E.I32),
                    (cl.i64, E.I64), (cl.u32, E.U32), (cl.u64, E.U64), (cl.bool_, E.BOOL)):
        assert t.elem is elem
    names = {b.name for b in vars(cl).values() if isinstance(b, cl.BuiltinVar)}
    assert names == set(ir.BuiltinName)


# ---------------------------------------------------------------- unsupported


def uns_with(a: Array[f32]):
    with open("f"):  # <with>
        pass


def uns_try(a: Array[f32]):
    try:  # <try>
        pass
    except Exception:
        pass


def uns_lambda(a: Array[f32]):
    f = lambda: 1  # noqa: E731  # <lambda>


def uns_list(a: Array[f32]):
    xs = [1, 2]  # <list>


def uns_attribute(a: Array[f32]):
    n = a.dtype  # <attribute>


def uns_method(a: Array[f32]):
    n = a.sum()  # <method>


def uns_unknown_call(a: Array[f32]):
    a[0] = print(1)  # <unknown-call>


def uns_undefined(a: Array[f32]):
    a[0] = undefined_thing  # noqa: F821  # <undefined>


def uns_global_object(a: Array[f32]):
    a[0] = GLOBAL_OBJ  # <global-object>


def uns_global(a: Array[f32]):
    global GLOBAL_SCALE  # <global>


def uns_nested_def(a: Array[f32]):
    def helper():  # <nested-def>
        pass


def uns_fstring(a: Array[f32], n: i32):
    s = f"{n}"  # <fstring>


def uns_unpack(a: Array[f32]):
    x, *y = 1, 2  # <unpack>


def uns_return_value(a: Array[f32]):
    return 1  # <return-value>


def uns_expr_stmt(a: Array[f32], x: f32):
    x + 1  # <expr-stmt>


def uns_unused_call(a: Array[f32], x: f32):
    exp(x)  # <unused-call>


def uns_string_stmt(a: Array[f32]):
    a[0] = 1.0
    "not a docstring"  # <string-stmt>


def uns_while_else(a: Array[f32], n: i32):
    while n > 0:  # <while-else>
        n -= 1
    else:
        pass


def uns_import(a: Array[f32]):
    import math  # noqa: F401  # <import>


def uns_assert(a: Array[f32], n: i32):
    assert n > 0  # <assert>


def uns_raise(a: Array[f32]):
    raise ValueError()  # <raise>


def uns_dict(a: Array[f32]):
    d = {}  # <dict>


def uns_tuple(a: Array[f32]):
    t = (1, 2)  # <tuple>


def uns_comprehension(a: Array[f32]):
    t = [i for i in range(3)]  # <genexp>


def uns_string_const(a: Array[f32]):
    s = "text"  # <string-const>


def uns_none(a: Array[f32]):
    s = None  # <none>


def uns_del(a: Array[f32]):
    x = 1
    del x  # <del>


def uns_walrus(a: Array[f32], n: i32):
    if (m := n) > 0:  # <walrus>
        pass


def uns_type_as_value(a: Array[f32]):
    t = f32  # <type-value>


def uns_slice(a: Array[f32]):
    t = a[0:2][0]  # <slice>


def uns_multi_index(a: Array[f32]):
    tile = cl.shared(f32, 4)
    t = tile[0, 1]  # <multi-index>


def uns_matmul(a: Array[f32], x: f32):
    t = x @ x  # <matmul>


UNSUPPORTED = [
    (uns_with, "with", "`with` statements are not supported in kernels"),
    (uns_try, "try", "`try` statements are not supported in kernels"),
    (uns_lambda, "lambda", "`lambda` expressions are not supported in kernels"),
    (uns_list, "list", "list literals are not supported in kernels"),
    (uns_attribute, "attribute", "attribute access (`a.dtype`) is not supported"),
    (uns_method, "method", "method calls (`a.sum()`) are not supported"),
    (uns_unknown_call, "unknown-call", "call to unknown function `print`"),
    (uns_undefined, "undefined", "name `undefined_thing` is not defined"),
    (uns_global_object, "global-object", "`GLOBAL_OBJ` (a Python object) cannot be used"),
    (uns_global, "global", "`global` declarations are not supported in kernels"),
    (uns_nested_def, "nested-def", "nested function definitions are not supported"),
    (uns_fstring, "fstring", "f-strings are not supported in kernels"),
    (uns_unpack, "unpack", "starred targets (`*y`) are not supported in kernels"),
    (uns_return_value, "return-value", "a kernel returns nothing"),
    (uns_expr_stmt, "expr-stmt", "`x + 1` has no effect"),
    (uns_unused_call, "unused-call", "the result of `exp(x)` is unused"),
    (uns_string_stmt, "string-stmt", "string constants are not supported"),
    (uns_while_else, "while-else", "`while ... else` is not supported"),
    (uns_import, "import", "imports are not supported in kernels"),
    (uns_assert, "assert", "`assert` statements are not supported"),
    (uns_raise, "raise", "`raise` statements are not supported"),
    (uns_dict, "dict", "dict literals are not supported"),
    (uns_tuple, "tuple", "`(1, 2)` is 2 values, and `t` takes one: unpack them"),
    (uns_comprehension, "genexp", "comprehensions are not supported"),
    (uns_string_const, "string-const", "string constants are not supported"),
    (uns_none, "none", "`None` is not supported"),
    (uns_del, "del", "`del` statements are not supported"),
    (uns_walrus, "walrus", "`:=` assignment expressions are not supported"),
    (uns_type_as_value, "type-value", "`f32` is a type"),
    (uns_slice, "slice", "a slice `a[lo:hi]` is a view to assign to a name"),
    (uns_multi_index, "multi-index", "`tile` has one dimension"),
    (uns_matmul, "matmul", "not supported in kernels"),
]


@pytest.mark.parametrize(("fn", "tag", "fragment"), UNSUPPORTED,
                         ids=[tag for _, tag, _ in UNSUPPORTED])
def test_unsupported_constructs_raise_at_their_line(fn: Callable[..., Any], tag: str,
                                                    fragment: str) -> None:
    err = syntax_error(fn)
    assert fragment in err.message
    assert err.line == marked(tag)
    assert err.file == __file__


def test_source_must_be_available() -> None:
    ns: dict[str, Any] = {}
    src = textwrap.dedent("""
        def made(a: Array[f32]):
            a[0] = 1.0
    """)
    exec(compile(src, "<generated>", "exec"), {"Array": Array, "f32": f32}, ns)
    err = syntax_error(ns["made"])
    assert "must be defined in a file" in err.message
    assert err.file == "<generated>"
    with pytest.raises(KernelSyntaxError, match="Python function"):
        parse_kernel(len, {})  # type: ignore[arg-type]


def test_lambda_kernel_is_rejected() -> None:
    fn = lambda a: None  # noqa: E731
    fn.__annotations__ = {"a": Array[f32]}
    with pytest.raises(KernelSyntaxError, match="`def` statement"):
        parse_kernel(fn, {})


def test_docstring_pass_ellipsis_and_bare_return() -> None:
    def trivial(a: Array[f32]):
        """Only a docstring, pass, an ellipsis and a return."""
        pass
        ...
        return

    assert stmts(trivial) == (ir.Return(),)


def test_kernel_with_underindented_string_parses() -> None:
    def under(a: Array[f32]):
        """First line.
Second line at column zero."""
        a[0] = 1.0

    k = parse_kernel(under, {})
    assert k.body == (ir.Store("a", C(0, E.I32), C(1.0, E.F32)),)
    assert k.loc is not None and k.loc.line == inspect.getsourcelines(under)[1]


def test_error_line_inside_nested_test_function() -> None:
    def nested(a: Array[f32], n: i32):
        a[0] = 1.0
        a[n] = n  # <nested-line>

    err = syntax_error(nested)
    assert err.line == marked("nested-line")


def test_float_special_global_constants() -> None:
    k = parse_kernel(special_floats, {})
    consts = [n.value for n in ir.walk(k.body) if isinstance(n, ir.Const) and n.type is E.F32]
    assert any(math.isnan(v) for v in consts)
    assert math.inf in consts and -math.inf in consts
    assert any(v == 0.0 and math.copysign(1.0, v) < 0 for v in consts)


NAN = float("nan")
INF = float("inf")
NEG_ZERO = -0.0


def special_floats(a: Array[f32]):
    a[0] = NAN
    a[1] = INF
    a[2] = -INF
    a[3] = NEG_ZERO
