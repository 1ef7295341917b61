"""The IR's checker (``cubecl_server.ir_check``): the rules of ``docs/ir.md``, checked
once in the core, so ill-typed IR gets one error with one message on every backend."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers import kernels as test_kernels

from cubecl_server import ir
from cubecl_server.backends.cpu.compiler import CpuCompiler
from cubecl_server.client import create_client
from cubecl_server.compiler.contracts import Artifact, Compiler
from cubecl_server.compiler.key import ArtifactId
from cubecl_server.compiler.loader import KernelLoader
from cubecl_server.compiler.record import CompilationRecording
from cubecl_server.conformance import kernels
from cubecl_server.errors import CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.id import KernelId
from cubecl_server.ir_check import check_kernel
from cubecl_server.kernel import CompiledKernel, CubeDim
from cubecl_server.lang import KernelFunction

E = ir.Elem
B = ir.BinOp
U32, I32, F32 = E.U32, E.I32, E.F32
POS = ir.Builtin(ir.BuiltinName.ABSOLUTE_POS)
DIM = CubeDim(32)


def c(value: int | float | bool, t: ir.Elem) -> ir.Const:
    """A constant."""
    return ir.Const(value, t)


def kern(body: tuple[ir.Stmt, ...], locals_: tuple[ir.Local, ...] = (),
         shared: tuple[ir.SharedArray, ...] = (), name: str = "bad",
         local_arrays: tuple[ir.LocalArray, ...] = ()) -> ir.Kernel:
    """A kernel over ``out: Array[i32]``, ``flags: Array[bool]`` and ``n: u32``."""
    params = (ir.Param("out", I32, True), ir.Param("flags", E.BOOL, True),
              ir.Param("n", U32, False))
    return ir.Kernel(name, params, locals_, shared, body, local_arrays=local_arrays)


MALFORMED: list[tuple[str, ir.Kernel, str]] = [
    ("undeclared local", kern((ir.Assign("ghost", c(1, I32)),)),
     "'ghost' is not a declared local: only declared locals are assigned, "
     "in `ghost = 1:i32`"),
    ("mismatched operands", kern((ir.Store("out", POS, ir.Binary(
        B.ADD, c(1, I32), ir.Cast(POS, U32), I32)),)),
     "the operands of '+' are i32 and u32, not one type, in `(1:i32 + u32(ABSOLUTE_POS))`"),
    ("non-bool if condition", kern((ir.If(ir.Var("n", U32), (ir.Return(),), ()),)),
     "the condition is u32, not bool, in `if n:`"),
    ("break outside a loop", kern((ir.If(ir.Load("flags", POS, E.BOOL), (ir.Break(),), ()),)),
     "`break` outside a loop, in `break`"),
    ("store of the wrong type", kern((ir.Store("out", POS, c(1.5, F32)),)),
     "the stored value is f32, but 'out' holds i32, in `out[ABSOLUTE_POS] = 1.5:f32`"),
    ("duplicate local", kern((), locals_=(ir.Local("x", I32), ir.Local("x", F32))),
     "local 'x' is declared twice (names of params, locals, shared and local arrays are "
     "distinct, each declared once)"),
    ("local named like a parameter", kern((), locals_=(ir.Local("n", U32),)),
     "'n' is declared as a scalar parameter and as a local (names of params, locals, "
     "shared and local arrays are distinct, each declared once)"),
    ("assigned scalar parameter", kern((ir.Assign("n", c(1, U32)),)),
     "'n' is a scalar parameter: only declared locals are assigned, in `n = 1:u32`"),
    ("select of two types", kern((ir.Store("out", POS, ir.Select(
        ir.Load("flags", POS, E.BOOL), c(1, I32), c(1.0, F32), I32)),)),
     "the two sides of select are i32 and f32, not one type, "
     "in `select(flags[ABSOLUTE_POS], 1:i32, 1.0:f32)`"),
    ("float index", kern((ir.Store("out", c(0.0, F32), c(1, I32)),)),
     "the index is f32, not an integer type, in `out[0.0:f32] = 1:i32`"),
    ("load typed unlike its array", kern((ir.Store("out", POS, ir.Load("flags", POS, I32)),)),
     "the expression is typed i32, but 'flags' holds bool, in `flags[ABSOLUTE_POS]`"),
    ("comparison typed i32", kern((ir.Store("out", POS, ir.Binary(
        B.LT, c(1, I32), c(2, I32), I32)),)),
     "the expression is typed i32, but comparisons give bool, in `(1:i32 < 2:i32)`"),
    ("and of integers", kern((ir.Store("out", POS, ir.Binary(
        B.AND, c(1, I32), c(2, I32), I32)),)),
     "'and' takes bools, not i32, in `(1:i32 and 2:i32)`"),
    ("shift of floats", kern((ir.Store("out", POS, ir.Cast(ir.Binary(
        B.SHL, c(1.0, F32), c(2.0, F32), F32), I32)),)),
     "'<<' takes integers, not f32, in `(1.0:f32 << 2.0:f32)`"),
    ("float math on integers", kern((ir.Store("out", POS, ir.Math(
        ir.MathFn.SQRT, (c(4, I32),), I32)),)),
     "'sqrt' takes floats, not i32, in `sqrt(4:i32)`"),
    ("math arity", kern((ir.Store("out", POS, ir.Math(ir.MathFn.MIN, (c(4, I32),), I32)),)),
     "min takes 2 arguments, not 1, in `min(4:i32)`"),
    ("constant outside its type", kern((ir.Store("out", POS, c(1 << 31, I32)),)),
     "the constant 2147483648 is not a value of i32, in `2147483648:i32`"),
    ("negative step on u32", kern((ir.For("k", c(9, U32), c(0, U32), c(-1, U32), ()),),
                                  locals_=(ir.Local("k", U32),)),
     "the step must be a nonzero constant of the loop variable's type (u32) or a value "
     "of that type, in `for k in range(9:u32, 0:u32, -1:u32):`"),
    ("step of another type", kern((ir.For("k", c(0, I32), c(9, I32), ir.Builtin(
        ir.BuiltinName.CUBE_DIM), ()),), locals_=(ir.Local("k", I32),)),
     "the step is u32, but the loop variable 'k' is i32, "
     "in `for k in range(0:i32, 9:i32, CUBE_DIM):`"),
    ("for over a float", kern((ir.For("k", c(0.0, F32), c(1.0, F32), c(1.0, F32), ()),),
                              locals_=(ir.Local("k", F32),)),
     "the loop variable 'k' is f32, not an integer type, "
     "in `for k in range(0.0:f32, 1.0:f32, 1.0:f32):`"),
    ("unrolled loop with a variable bound", kern((ir.For(
        "k", c(0, U32), ir.Var("n", U32), c(1, U32), (), unroll=True),),
        locals_=(ir.Local("k", U32),)),
     "an unrolled loop has constant bounds, but the stop is not a constant, "
     "in `for k in range(0:u32, n, 1:u32):  # unroll`"),
    ("unrolled loop too long", kern((ir.For(
        "k", c(0, U32), c(4_000_000_000, U32), c(1, U32), (), unroll=True),),
        locals_=(ir.Local("k", U32),)),
     "an unrolled loop runs at most 4096 times (MAX_UNROLL), this one 4000000000: drop "
     "unroll=True, in `for k in range(0:u32, 4000000000:u32, 1:u32):  # unroll`"),
    ("endless while", kern((ir.While(c(True, E.BOOL), (ir.For(
        "k", c(0, U32), c(2, U32), c(1, U32), (ir.Break(),)),)),),
        locals_=(ir.Local("k", U32),)),
     "a `while` loop whose condition is the constant true needs a `break` or `return` in "
     "its body, in `while True:bool:`"),
    ("bit cast across widths", kern((ir.Store("out", POS, ir.Bitcast(c(1.0, E.F64), I32)),)),
     "a bit cast is between numeric types of one width (32 or 64 bits), not f64 to i32, "
     "in `bitcast(1.0:f64, i32)`"),
    ("atomic on a local array", kern((ir.AtomicStmt(ir.AtomicOp.ADD, "acc", c(0, U32),
                                                    c(1, I32), None, None),),
                                     local_arrays=(ir.LocalArray("acc", I32, 4),)),
     "'acc' is a local array, which no other unit reaches: atomics work on array "
     "parameters and shared arrays, in `atomic_add(acc, 0:u32, 1:i32)`"),
    ("empty local array", kern((), local_arrays=(ir.LocalArray("acc", I32, 0),)),
     "local array 'acc' has size 0; a size must be a positive integer constant, at most "
     "4294967295"),
    ("atomic sub on f32", kern((ir.AtomicStmt(ir.AtomicOp.SUB, "acc", c(0, U32),
                                              c(1.0, F32), None, None),),
                               shared=(ir.SharedArray("acc", F32, 4),)),
     "atomic sub is on i32, u32, i64, u64 elements, but 'acc' holds f32, "
     "in `atomic_sub(acc, 0:u32, 1.0:f32)`"),
    ("compare without compare_exchange", kern((ir.AtomicStmt(
        ir.AtomicOp.ADD, "out", c(0, U32), c(1, I32), c(0, I32), None),)),
     "atomic add takes no compare value (compare_exchange alone does), "
     "in `atomic_add(out, 0:u32, 0:i32, 1:i32)`"),
    ("shared array of size 0", kern((), shared=(ir.SharedArray("tile", F32, 0),)),
     "shared array 'tile' has size 0; a size must be a positive integer constant, "
     "at most 4294967295"),
    ("len of a shared array", kern((ir.Store("out", POS, ir.Cast(ir.Len("tile"), I32)),),
                                   shared=(ir.SharedArray("tile", F32, 4),)),
     "'tile' is not an array parameter, in `len(tile)`"),
    ("broadcast without a lane", kern((ir.Store("out", POS, ir.PlaneOp(
        ir.PlaneFn.BROADCAST, c(1, I32), None, I32)),)),
     "plane_broadcast needs a lane, in `plane_broadcast(1:i32)`"),
    ("plane sum of bools", kern((ir.Store("flags", POS, ir.PlaneOp(
        ir.PlaneFn.SUM, ir.Load("flags", POS, E.BOOL), None, E.BOOL)),)),
     "'plane_sum' takes numbers, not bool, in `plane_sum(flags[ABSOLUTE_POS])`"),
    ("undeclared variable", kern((ir.Store("out", POS, ir.Var("m", I32)),)),
     "'m' is neither a local nor a scalar parameter, in `m`"),
]


# ---------------------------------------------------------------- each backend's compile path


@dataclasses.dataclass
class _Lowering:
    """An ArtifactCompiler around a backend's Compiler that needs no device: its
    artifact is the source."""

    compiler: Compiler

    @property
    def variant(self) -> str:
        """One variant: nothing here depends on a device."""
        return "test"

    def lower(self, kernel: ir.Kernel, cube_dim: CubeDim, mode: ExecutionMode,
              recording: CompilationRecording) -> CompiledKernel:
        """The backend's own lowering."""
        return self.compiler.compile(kernel, cube_dim, mode)

    def source(self, compiled: CompiledKernel) -> bytes | None:
        """No reuse across builds."""
        return None

    def finalize(self, compiled: CompiledKernel, recording: CompilationRecording) -> Artifact:
        """The source as the artifact."""
        return Artifact("source", compiled.source.encode())


class _NoDevice:
    """A CompilationTarget without a device or a store: loading is keeping."""

    store = None

    def load(self, artifact: Artifact) -> Artifact:
        """The artifact itself."""
        return artifact


def _opencl() -> Compiler:
    return pytest.importorskip("cubecl_opencl.compiler").OpenclCompiler()  # type: ignore[no-any-return]


def _vulkan() -> Compiler:
    vk = pytest.importorskip("cubecl_vulkan.compiler")
    # A device with room for every cube dim of the kernel set (16 x 16 among them) and
    # what its f64, 64-bit, bool, 16-bit and plane kernels use.
    return vk.VulkanCompiler(vk.ShaderFeatures(  # type: ignore[no-any-return]
        max_invocations=1024, max_workgroup_size=(1024, 1024, 64), float64=True,
        int64=True, int64_atomics=True, bool_storage=True, int16=True, subgroups=True,
        subgroup_size=8))


def _cuda() -> Compiler:
    return pytest.importorskip("cubecl_cuda.compiler").CudaCompiler()  # type: ignore[no-any-return]


_COMPILERS: dict[str, Callable[[], Compiler]] = {
    "cpu": CpuCompiler, "opencl": _opencl, "vulkan": _vulkan, "cuda": _cuda}
"""Each backend's Compiler, as this machine can build it without a device."""
BACKENDS = list(_COMPILERS)


def _loader(backend: str) -> KernelLoader:
    """The loader of ``backend``'s compile path: the cpu backend's own, in process; a
    plugin's Compiler behind the same loader, without a device."""
    if backend == "cpu":
        return create_client("cpu").loader
    return KernelLoader(backend, _Lowering(_COMPILERS[backend]()), _NoDevice(), "test-build")


def _obtain(loader: KernelLoader, k: ir.Kernel, dim: CubeDim = DIM) -> Any:
    return loader.get(ArtifactId(KernelId.of(k), dim, ExecutionMode.CHECKED))


@pytest.fixture
def loaders() -> Iterator[dict[str, KernelLoader]]:
    """The compile path of every backend installed here."""
    out: dict[str, KernelLoader] = {}
    for backend in BACKENDS:
        try:
            out[backend] = _loader(backend)
        except pytest.skip.Exception:
            continue
    yield out


@pytest.mark.parametrize(("what", "bad", "message"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_ir_gets_one_error_on_every_backend(
        what: str, bad: ir.Kernel, message: str, loaders: dict[str, KernelLoader]) -> None:
    assert "cpu" in loaders
    for backend, loader in loaders.items():
        with pytest.raises(CompilationError) as info:
            _obtain(loader, bad)
        err = info.value
        assert (err.kernel, err.backend) == ("bad", backend), (what, backend)
        assert err.message == message, f"{what} on {backend}"
        assert str(err) == f"[{backend}] kernel 'bad': {message}"


def test_the_message_starts_with_where_the_kernel_was_written() -> None:
    bad = dataclasses.replace(MALFORMED[0][1], loc=ir.SourceLoc("kernels/k.py", 12))
    with pytest.raises(CompilationError) as info:
        check_kernel(bad, "cpu")
    assert info.value.message == "kernels/k.py:12: " + MALFORMED[0][2]


def test_a_kernel_obtained_for_several_cube_dims_is_checked_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from cubecl_server import ir_check

    seen: list[ir.Kernel] = []
    real = ir_check._Checker.check

    def counting(self: Any) -> None:
        seen.append(self.k)
        real(self)

    monkeypatch.setattr(ir_check._Checker, "check", counting)
    k = dataclasses.replace(kernels.saxpy.ir(), name="saxpy_checked_once")
    loader = create_client("cpu").loader
    for dim in (CubeDim(32), CubeDim(64), CubeDim(8, 8)):
        _obtain(loader, k, dim)
    assert seen == [k]


# ---------------------------------------------------------------- valid kernels


def _valid_kernels() -> Iterator[tuple[str, ir.Kernel]]:
    """Every kernel the conformance suite and the core's tests launch, as IR."""
    for name, (get, comptime, _) in kernels.KERNEL_SET.items():
        yield name, get().ir(**comptime)
    factories: list[tuple[str, Callable[[], KernelFunction]]] = []
    ints, floats = (E.I32, E.I64, E.U32, E.U64), (E.F16, E.F32, E.F64)
    for t in (*ints, *floats):
        for op in ("add", "sub", "mul", "rem"):
            factories.append((f"binary-{op}-{t.value}", lambda op=op, t=t: kernels.binary(op, t)))
        for op in ("eq", "ne", "lt", "le", "gt", "ge"):
            factories.append((f"compare-{op}-{t.value}",
                              lambda op=op, t=t: kernels.compare(op, t)))
        factories.append((f"neg-{t.value}", lambda t=t: kernels.unary("neg", t)))
        for fn in ("min", "max"):
            factories.append((f"{fn}-{t.value}", lambda fn=fn, t=t: kernels.math2(fn, t)))
        factories.append((f"clamp-{t.value}", lambda t=t: kernels.math3("clamp", t)))
        for d in (*ints, *floats):
            if d is not t:
                factories.append((f"cast-{t.value}-{d.value}",
                                  lambda t=t, d=d: kernels.cast(t, d)))
    for t in ints:
        for op in ("idiv", "bitand", "bitor", "bitxor", "shl", "shr"):
            factories.append((f"binary-{op}-{t.value}", lambda op=op, t=t: kernels.binary(op, t)))
        factories.append((f"bitnot-{t.value}", lambda t=t: kernels.unary("bitnot", t)))
    for t in (E.I32, E.I64):
        factories.append((f"abs-{t.value}", lambda t=t: kernels.math1("abs", t)))
    for t in floats:
        factories.append((f"div-{t.value}", lambda t=t: kernels.binary("div", t)))
        for fn in ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "abs", "floor",
                   "ceil", "isnan", "isinf"):
            factories.append((f"{fn}-{t.value}", lambda fn=fn, t=t: kernels.math1(fn, t)))
        factories.append((f"pow-{t.value}", lambda t=t: kernels.math2("pow", t)))
        factories.append((f"fma-{t.value}", lambda t=t: kernels.math3("fma", t)))
    for t in (e for e in ir.Elem if not e.is_minifloat):  # no scalar minifloats
        for conditional in (False, True):
            factories.append((f"select-{t.value}-{conditional}",
                              lambda t=t, cd=conditional: kernels.select_kernel(t, cd)))
        factories.append((f"scalar-{t.value}", lambda t=t: kernels.with_scalar(t)))
    for op in ("and", "or", "not"):
        factories.append((f"logical-{op}", lambda op=op: kernels.logical(op)))
    for t in (E.I32, E.U32, E.I64, E.U64):
        for op in ("add", "sub", "max", "min", "exchange"):
            factories.append((f"atomic-{op}-{t.value}",
                              lambda op=op, t=t: kernels.atomic_kernel(op, t)))
        factories.append((f"cas-{t.value}", lambda t=t: kernels.atomic_cas(t)))
    factories.append(("atomic-add-f32", lambda: kernels.atomic_kernel("add", E.F32)))
    for name, make in factories:
        yield name, make().ir()
    for fn in (kernels.scale, kernels.plane_kernel, kernels.f64_kernel, kernels.shape_stride,
               kernels.transpose_shape, test_kernels.scale):
        yield fn.__name__, fn.ir()
    for fn in (kernels.add_const, test_kernels.add_const):
        yield fn.__name__, fn.ir(C=3)


def test_kernels_of_the_language_pass_the_check() -> None:
    refused = {}
    for name, k in _valid_kernels():
        try:
            check_kernel(k, "cpu")
        except CompilationError as e:
            refused[name] = e.message
    assert not refused, refused


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_kernel_set_lowers_on_every_backend_without_its_own_checks(backend: str) -> None:
    """Checked IR is all an emitter needs: each kernel of the set lowers to source."""
    compiler = _COMPILERS[backend]()
    for name, (get, comptime, dim) in kernels.KERNEL_SET.items():
        k = get().ir(**comptime)
        if backend == "vulkan" and any(isinstance(n, ir.DebugPrint) for n in ir.walk(k.body)):
            continue  # it cannot print: the launch refuses the kernel (tests/lang/test_prints.py)
        check_kernel(k, backend)
        for mode in ExecutionMode:
            assert compiler.compile(k, dim, mode).source.strip(), (name, mode)
