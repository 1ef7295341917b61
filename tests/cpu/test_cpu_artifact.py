"""The cpu artifact is generated source that the load validates, never code it trusts:
the generator and the validator agree on every kernel, hostile payloads are refused,
and a tampered store row is purged and rebuilt without running."""

from __future__ import annotations

import ast
import marshal
import math
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from helpers import kernels as test_kernels

from cubecl_server import ir
from cubecl_server.backends.cpu import compiler as cpu_compiler
from cubecl_server.backends.cpu import validate
from cubecl_server.backends.cpu.artifact import KIND, CpuArtifactCompiler, CpuTarget
from cubecl_server.backends.cpu.compiler import CpuCompiler
from cubecl_server.client import create_client, recording
from cubecl_server.compiler import Artifact, CompilationOutcome, KernelCacheKey
from cubecl_server.compiler.record import CompilationRecording
from cubecl_server.conformance import kernels as ck
from cubecl_server.errors import ArtifactRejected, CompilationError, CubeclError
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CompiledKernel, CubeCount, CubeDim
from cubecl_server.lang import KernelFunction

E = ir.Elem
HEADER = {"entry_point": "run", "kernel": "scale"}
TARGET = CpuTarget(None)


# ---------------------------------------------------------------- the corpus


def _extras() -> ir.Kernel:
    """IR for what no conformance kernel generates: float IDIV, non-finite constants,
    the ``<=`` and ``>`` position tests and an atomic on shared memory."""
    pos = ir.Builtin(ir.BuiltinName.ABSOLUTE_POS)
    unit = ir.Builtin(ir.BuiltinName.UNIT_POS)
    a = ir.Load("a", pos, E.F32)
    return ir.Kernel(
        "validator_extras", (ir.Param("a", E.F32, True), ir.Param("out", E.F32, True)), (),
        (ir.SharedArray("tile", E.U32, 64),), (
            ir.If(ir.Binary(ir.BinOp.LE, pos, ir.Len("out"), E.BOOL), (
                ir.Store("out", pos, ir.Binary(ir.BinOp.IDIV, a, ir.Const(math.inf, E.F32),
                                               E.F32)),), ()),
            ir.If(ir.Binary(ir.BinOp.GT, pos, ir.Const(5, E.U32), E.BOOL),
                  (ir.Store("out", pos, ir.Const(-math.inf, E.F32)),),
                  (ir.Store("out", pos, ir.Const(math.nan, E.F32)),)),
            ir.AtomicStmt(ir.AtomicOp.ADD, "tile", unit, ir.Const(1, E.U32), None, None),
        ))


@cache
def corpus() -> tuple[tuple[str, str], ...]:
    """(name, source) of every kernel of the conformance set and of ``tests/helpers/kernels.py``
    the cpu compiler lowers, in both modes, and of :func:`_extras`.

    The factories are tried with every operator and element type; the combinations
    the kernel language refuses are no kernels, so they are left out.
    """
    made: list[tuple[ir.Kernel, CubeDim]] = []

    def add(factory: Callable[..., KernelFunction], *args: object) -> None:
        try:
            made.append((factory(*args).ir(), CubeDim(64)))
        except (CubeclError, TypeError):
            pass

    for get, comptime, dim in ck.KERNEL_SET.values():
        made.append((get().ir(**comptime), dim))
    for e in E:
        for op in ("add", "sub", "mul", "div", "idiv", "rem", "bitand", "bitor", "bitxor",
                   "shl", "shr"):
            add(ck.binary, op, e)
        for op in ("eq", "ne", "lt", "le", "gt", "ge"):
            add(ck.compare, op, e)
        for op in ("neg", "bitnot"):
            add(ck.unary, op, e)
        for fn in ir.MathFn:
            for factory in (ck.math1, ck.math2, ck.math3):
                add(factory, fn.value, e)
        for dst in E:
            add(ck.cast, e, dst)
        for conditional in (False, True):
            add(ck.select_kernel, e, conditional)
        add(ck.with_scalar, e)
        for op in ("add", "sub", "max", "min", "exchange"):
            add(ck.atomic_kernel, op, e)
        add(ck.atomic_cas, e)
    for op in ("and", "or", "not"):
        add(ck.logical, op)
    for k in (ck.scale, ck.builtins, ck.control_flow, ck.shape_stride, ck.transpose_shape,
              ck.plane_kernel, ck.f64_kernel, test_kernels.scale):
        made.append((k.ir(), CubeDim(64)))
    made.append((ck.add_const.ir(C=3), CubeDim(64)))
    made.append((test_kernels.add_const.ir(C=-7), CubeDim(64)))
    made.append((_extras(), CubeDim(64)))
    assert len(made) > 300, "the factories built fewer kernels than the set has"
    return tuple((f"{k.name}/{mode.value}", CpuCompiler().compile(k, dim, mode).source)
                 for k, dim in made for mode in ExecutionMode)


def test_validator_accepts_every_generated_kernel() -> None:
    refused = []
    for name, src in corpus():
        try:
            fn = TARGET.load(Artifact(KIND, src.encode(), {"entry_point": "run",
                                                            "kernel": name}))
        except ArtifactRejected as e:
            refused.append(f"{name}: {e}")
            continue
        assert callable(fn)
    assert not refused, "\n".join(refused[:20])


def test_allow_lists_are_exactly_what_is_generated() -> None:
    """Nothing is allowed that no kernel generates (each name is attack surface)."""
    used: dict[str, set[str]] = {"np": set(), "_s": set(), "g": set(), "str": set(),
                                 "keyword": set()}
    for _, src in corpus():
        for n in ast.walk(ast.parse(src)):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and (
                    n.value.id in used):
                used[n.value.id].add(n.attr)
            elif isinstance(n, ast.keyword) and n.arg is not None:
                used["keyword"].add(n.arg)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                used["str"].add(n.value)
    assert used["np"] == validate.NUMPY_NAMES
    assert used["_s"] == validate.SUPPORT_NAMES
    assert used["g"] == validate.GRID_NAMES
    assert used["keyword"] == validate.KEYWORDS
    assert validate.STRINGS <= used["str"]  # the rest are docstrings


def test_compiler_names_only_what_is_allowed() -> None:
    """The compiler's literal ``np.X`` and ``_s.X`` (the corpus covers the computed ones)."""
    text = Path(cpu_compiler.__file__).read_text()
    np_names = set(re.findall(r"\bnp\.(\w+)", text))
    s_names = set(re.findall(r"\b_s\.(\w+)", text))
    assert np_names and np_names <= validate.NUMPY_NAMES, np_names - validate.NUMPY_NAMES
    assert s_names and s_names <= validate.SUPPORT_NAMES, s_names - validate.SUPPORT_NAMES
    assert all(hasattr(np, n) for n in validate.NUMPY_NAMES)
    assert all(callable(getattr(validate.SUPPORT, n)) for n in validate.SUPPORT_NAMES)


def test_loaded_kernel_sees_no_builtins_and_only_allowed_names() -> None:
    fn = TARGET.load(Artifact(KIND, _scale_source().encode(), HEADER))
    g = fn.run.__globals__
    assert g["__builtins__"] == {}
    assert set(g) == {"__builtins__", "__name__", "__doc__", "np", "_s", "run"}
    assert set(vars(g["np"])) == validate.NUMPY_NAMES
    assert set(vars(g["_s"])) == validate.SUPPORT_NAMES
    a, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    fn([a, out], [(8,), (8,)], [(1,), (1,)], [np.float32(3)], (1, 1, 1), (64, 1, 1))
    np.testing.assert_array_equal(out, a * 3)


# ---------------------------------------------------------------- hostile payloads


@cache
def _scale_source() -> str:
    """The generated source of ``tests/helpers/kernels.py``'s scale, the base of every payload."""
    return CpuCompiler().compile(test_kernels.scale.ir(), CubeDim(64),
                                 ExecutionMode.CHECKED).source


def _in_run(snippet: str) -> tuple[bytes, int]:
    """The scale kernel's source with ``snippet`` first in ``run``; the snippet's line."""
    lines = _scale_source().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith('    """Run ')) + 1
    body = ["    " + line for line in snippet.splitlines()]
    return "\n".join([*lines[:at], *body, *lines[at:]]).encode(), at + 1


IN_RUN = {
    "import": ("import os", "import of os"),
    "import_from": ("from os import system", "import of system"),
    "dunder_import": ("__import__('os').system('true')", "call of '__import__'"),
    "subclasses": ("x = ().__class__.__base__.__subclasses__()", "'__subclasses__'"),
    "np_lib": ("x = np.lib", "attribute 'lib' of 'np'"),
    "np_ctypeslib": ("x = np.ctypeslib.as_array", "attribute 'ctypeslib' of 'np'"),
    "np_load": ("x = np.load", "attribute 'load' of 'np'"),
    "getattr": ("x = getattr(np, 'lib')", "call of 'getattr'"),
    "open": ("open('/tmp/cubecl-marker', 'w')", "call of 'open'"),
    "eval": ("eval('1')", "call of 'eval'"),
    "exec": ("exec('1')", "call of 'exec'"),
    "private_attribute": ("x = _s._CACHE", "attribute '_CACHE'"),
    "dunder_on_a_value": ("x = arrays.__class__", "attribute '__class__'"),
    "support_module_attr": ("x = _s.np", "attribute 'np' of '_s'"),
    "grid_attr": ("x = g.count", "attribute 'count' of 'g'"),
    "value_attr": ("x = arrays.append", "attribute 'append' of 'arrays'"),
    "lambda": ("f = (lambda: 0)", "expression Lambda"),
    "def": ("def f():\n    pass", "FunctionDef 'f'"),
    "class": ("class C:\n    pass", "ClassDef 'C'"),
    "global": ("global np", "statement Global"),
    "try": ("try:\n    pass\nexcept Exception:\n    pass", "statement Try"),
    "other_with": ("with open('x'):\n    pass", "statement With"),
    "del": ("del arrays", "statement Delete"),
    "return": ("return np", "statement Return"),
    "yield": ("yield 1", "Yield"),
    "assert": ("assert arrays", "statement Assert"),
    "raise": ("raise SystemExit", "statement Raise"),
    "starred": ("_s.check_dim(*arrays)", "expression Starred"),
    "double_starred": ("_s.check_dim(**arrays)", "**kwargs"),
    "keyword": ("_s.check_dim(dim, dim, evil=1)", "keyword argument 'evil'"),
    "walrus": ("x = (y := 1)", "expression NamedExpr"),
    "comprehension": ("x = [a for a in arrays]", "expression ListComp"),
    "fstring": ("x = f'{arrays}'", "expression JoinedStr"),
    "string": ("x = 'rm -rf /'", "string constant 'rm -rf /'"),
    "bytes": ("x = b'ignore'", "bytes constant"),
    "rebind_np": ("np = _s", "assignment to 'np'"),
    "rebind_param": ("arrays = 1", "assignment to 'arrays'"),
    "rebind_chunk": ("g = arrays", "assignment to 'g'"),
    "module_as_value": ("x = np", "'np' other than as a module"),
    "builtin_name": ("x = print", "name 'print', which the function does not bind"),
    "builtin_call": ("x = len(arrays)", "call of 'len'"),
    "call_a_local": ("f = _s.load\nf(arrays, 0, True)", "call of 'f'"),
    "subscript_store": ("arrays[0] = 1", "assignment to Subscript"),
    "attribute_store": ("_s.MAX_LANES = 1", "assignment to attribute"),
    "slice": ("x = arrays[0:1]", "expression Subscript"),
    "power": ("x = np.float32(2) ** 10", "operator Pow"),
    "bool_op": ("x = arrays or shapes", "expression BoolOp"),
    "if_expression": ("x = 1 if arrays else 2", "expression IfExp"),
    "in": ("x = 1 in arrays", "operator In"),
    "other_for": ("for x in arrays:\n    pass", "statement For"),
    "other_while": ("while arrays:\n    break", "statement While"),
    "else": ("if arrays is False:\n    pass\nelse:\n    pass", "statement If"),
    "break_outside_a_loop": ("break", "break outside a loop"),
    "astype_object": ("x = arrays[0].astype(np.float32, 'O')", "astype"),
}


@pytest.mark.parametrize("snippet,names", IN_RUN.values(), ids=IN_RUN.keys())
def test_construct_outside_the_subset_is_refused(snippet: str, names: str) -> None:
    payload, line = _in_run(snippet)
    with pytest.raises(ArtifactRejected) as info:
        TARGET.load(Artifact(KIND, payload, HEADER))
    assert names in str(info.value)
    assert f"at line {line}" in str(info.value) or f"at line {line + 1}" in str(info.value)


def _deep_sum(terms: int) -> bytes:
    """A payload whose one expression nests ``terms`` additions deep."""
    return _in_run("x = np.float32(1)" + " + np.float32(1)" * terms)[0]


WHOLE = {
    "module_level_import": (_scale_source() + "import os\n").encode(),
    "module_level_code": (_scale_source() + "run = print\n").encode(),
    "other_entry_point": _scale_source().replace("def run(", "def main(").encode(),
    "second_function": (_scale_source() + "def run2():\n    pass\n").encode(),
    "other_numpy_import": _scale_source().replace("import numpy as np",
                                                  "import os as np").encode(),
    "other_support_import": _scale_source().replace(
        "from cubecl_server.backends.cpu import support as _s", "from os import path as _s"
    ).encode(),
    "decorator": _scale_source().replace("def run(", "@_s.chunks\ndef run(").encode(),
    "default_argument": _scale_source().replace("dim):", "dim=np.zeros):", 1).encode(),
    "extra_parameter": _scale_source().replace("dim):", "dim, extra):", 1).encode(),
    "annotation": _scale_source().replace("dim):", "dim: np.lib):", 1).encode(),
    "no_docstring": _scale_source().replace('    """Run ', '    pass  # """Run ').encode(),
    "non_utf8": b"\xff\xfe" + _scale_source().encode(),
    "nul_byte": _scale_source().replace("np.float32", "np.float32\x00").encode(),
    "marshal_code_object": marshal.dumps(compile(_scale_source(), "<cpu>", "exec")),
    "empty": b"",
    "checker_recursion": _deep_sum(2000),
    "parser_recursion": _deep_sum(50_000),
    "parser_memory": b"x = " + b"-" * 100_000 + b"1\n",
    "attribute_chain": b"x = a" + b".shape" * 100_000 + b"\n",
}


@pytest.mark.parametrize("payload", WHOLE.values(), ids=WHOLE.keys())
def test_payload_outside_the_module_shape_is_refused(payload: bytes) -> None:
    with pytest.raises(ArtifactRejected):
        TARGET.load(Artifact(KIND, payload, HEADER))


def test_nesting_past_the_checker_is_refused_not_crashing() -> None:
    with pytest.raises(ArtifactRejected, match="nests deeper"):
        TARGET.load(Artifact(KIND, _deep_sum(2000), HEADER))


@pytest.mark.parametrize("kind,header", [
    ("py-code-v0", HEADER), (KIND, {"entry_point": "main", "kernel": "scale"}), (KIND, {}),
])
def test_other_kind_or_entry_point_is_refused(kind: str, header: dict[str, str]) -> None:
    src = _scale_source().encode()
    if header.get("entry_point") == "main":
        src = src.replace(b"def run(", b"def main(")
    with pytest.raises(ArtifactRejected, match="not a cpu source artifact"):
        TARGET.load(Artifact(kind, src, header))  # type: ignore[arg-type]


def test_finalize_refuses_source_the_loader_would() -> None:
    ac = CpuArtifactCompiler(CpuCompiler())
    bad = CompiledKernel(name="k", entry_point="run", extension="py",
                         source=_in_run("import os")[0].decode())
    with pytest.raises(CompilationError, match="import of os"):
        ac.finalize(bad, CompilationRecording(False, "k", "cpu", ac.variant))


# ---------------------------------------------------------------- a tampered store


def _hostile(marker: Path) -> dict[str, bytes]:
    """Payloads that would create ``marker`` if the load ran them."""
    touch = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    src = _scale_source()
    return {
        "source": (src + touch + "\n").replace(
            '    """Run ', f'    {touch}\n    """Run ').encode(),
        "marshal": marshal.dumps(compile(src + touch + "\n", "<cpu>", "exec")),
    }


@pytest.mark.parametrize("which", ["source", "marshal"])
def test_tampered_row_is_refused_purged_and_rebuilt(tmp_path: Path, which: str) -> None:
    marker = tmp_path / "the-hostile-code-ran"
    payload = _hostile(marker)[which]
    c = create_client("cpu")
    dim = CubeDim(64)
    aid = c.artifact_id(test_kernels.scale, dim, {})
    key = KernelCacheKey.of(aid, c.loader.build_id)
    store = c.loader.target.store
    assert store is not None
    # Written through the store as a well-formed entry: its checksum is right.
    assert store.put(key, Artifact(KIND, payload, HEADER))
    assert store.get(key) == Artifact(KIND, payload, HEADER)
    with recording(c) as recs:
        a, out = c.create(np.arange(10, dtype=np.float32)), c.empty(10, np.float32)
        test_kernels.scale.launch(c, CubeCount(1), dim, a, out, 3.0)
    assert np.array_equal(c.read(out), np.arange(10, dtype=np.float32) * 3)
    assert [r.outcome for r in recs] == [CompilationOutcome.COMPILED]
    assert not marker.exists()
    fresh = store.get(key)
    want = CpuCompiler().compile(aid.kernel.ir, aid.cube_dim, aid.mode).source
    assert fresh is not None and fresh.payload == want.encode()
