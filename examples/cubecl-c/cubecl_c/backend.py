"""The ``c`` backend's parts: IR to C99 through the core's C-family emitter, ``cc`` to a
shared library (the stored artifact), ctypes to run its cubes on the host, one unit after
another; where units meet at barriers each has a stack of its own (``<ucontext.h>``), and
a barrier passes control to the next unit. A plane is one unit. No f16: GCC 12 computes
``_Float16`` in float, not rounding each operation as the IR's f16 does."""

from __future__ import annotations

import ctypes
import math
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

import numpy as np

import cubecl_server.backend as cb
import cubecl_server.backend.compiling as cp
import cubecl_server.backend.lowering as lo
import cubecl_server.backend.support as su
from cubecl_server import ir

Elem, B, Op = ir.Elem, ir.BuiltinName, ir.AtomicOp
KIND, FLAGS = "c-shared-library", ("-std=c99", "-O2", "-shared", "-fPIC")
# Builtins from the unit's index k_u, the cube's k_c and the cube count in k_w[0..2].
_CUBE = {B.UNIT_POS: "k_u", B.UNIT_POS_X: "k_u % {x}u", B.UNIT_POS_Y: "k_u / {x}u % {y}u",
         B.UNIT_POS_Z: "k_u / {xy}u", B.CUBE_POS: "k_c", B.CUBE_POS_X: "k_c % k_w[0]",
         B.CUBE_POS_Y: "k_c / k_w[0] % k_w[1]", B.CUBE_POS_Z: "k_c / (k_w[0] * k_w[1])",
         B.CUBE_COUNT_X: "k_w[0]", B.CUBE_COUNT_Y: "k_w[1]", B.CUBE_COUNT_Z: "k_w[2]",
         B.PLANE_DIM: "1u", B.UNIT_POS_PLANE: "0u"}
# An atomic's next value from the old one (ADD and SUB wrap: see C99.atomic; a float
# MAX or MIN is fmax/fmin: a NaN old value is replaced, a NaN operand changes nothing).
_NEXT = {Op.ADD: "+", Op.SUB: "-", Op.MAX: "v > old || old != old ? v : old",
         Op.MIN: "v < old || old != old ? v : old", Op.EXCHANGE: "v", Op.AND: "old & v",
         Op.COMPARE_EXCHANGE: "old == cmp ? v : old", Op.OR: "old | v", Op.XOR: "old ^ v"}
# The entry point: a launch's words are the cube count, the arrays' addresses, the
# scalars' bytes, then the metadata the kernel reads. It runs on one thread, so the
# state of the launch (and the cube's shared arrays) is that thread's.
_ENTRY = Template("""\
static __thread const uint64_t *k_a;  // the launch's words
static __thread uint32_t k_c;  // the cube running
static __thread ucontext_t *k_ctx;  // each unit's, then the launch's
static void k_unit(int k_i);
static void k_sync(uint32_t u) { swapcontext(&k_ctx[u], &k_ctx[(u + 1) % ${n}u]); }
void $entry(const uint64_t *a) {
    char *stacks = $team ? malloc((size_t)$n << 16) : NULL;  // 64 KiB a unit
    k_ctx = $team ? malloc(($n + 1) * sizeof *k_ctx) : NULL, k_a = a;
    for (k_c = 0; k_c < a[0] * a[1] * a[2]; k_c++) {
        for (int u = 0; u < $n; u++) {
            if (!$team) { k_unit(u); continue; }
            getcontext(&k_ctx[u]);
            k_ctx[u].uc_stack = (stack_t){.ss_sp = stacks + ((size_t)u << 16), .ss_size = 1 << 16};
            k_ctx[u].uc_link = &k_ctx[u + 1];  // once done: the next unit, or back here
            makecontext(&k_ctx[u], (void (*)(void))k_unit, 1, u);
        }
        if ($team) swapcontext(&k_ctx[$n], &k_ctx[0]);
    }
    free(k_ctx), free(stacks);
}""")


def _cc(*args: str, source: str = "") -> subprocess.CompletedProcess[str]:
    """``cc`` run with ``args``, ``source`` on its standard input."""
    return subprocess.run(["cc", *args], input=source, capture_output=True, text=True)


@cache
def toolchain() -> str:
    """The system C compiler, in full: its target and its version."""
    return f"{_cc('-dumpmachine').stdout.strip()} {_cc('--version').stdout.splitlines()[0]}"


# What the host does here: no f16 (see above), and planes of one unit.
CAPABILITIES = cb.Capabilities(
    f64=True, f16=False, int8=True, int16=True, max_cube_count=(su.MAX_UNITS,) * 3,
    atomics=frozenset({Elem.I32, Elem.U32, Elem.I64, Elem.U64, Elem.F32}),
    shared_memory_bytes=65536, max_cube_dim=1024, plane_size=1, debug_print=True)


class C99(lo.StandardC):
    """C99 with ``<ucontext.h>``, and GCC's ``__thread`` and ``__atomic`` builtins."""

    barrier = "k_sync(k_u);"
    shared_space = "static __thread "
    # Every atomic is a compare-exchange loop of C99.atomic's, the float ones too.
    native = replace(lo.StandardC.native, builtins=frozenset(_CUBE), float_atomics=frozenset(Op))

    def builtin(self, e: lo.CEmitter, name: ir.BuiltinName) -> str | None:
        """The unit's and the cube's position, the cube count; planes of one unit."""
        x, y, _ = e.dim
        return _CUBE[name].format(x=x, y=y, xy=x * y) if name in _CUBE else None

    def metadata(self, e: lo.CEmitter, kind: str, array: ir.Param, dim: int) -> str:
        """A launch word, after the count, the parameters and the metadata read before."""
        return f"((uint32_t)k_w[{3 + len(e.kernel.params) + len(e.meta_used)}])"

    def atomic(self, e: lo.CEmitter, op: ir.AtomicOp, array: lo.ArrayRef, element: str,
               operands: list[str]) -> str:
        """A helper per operation and type: a compare-exchange loop."""
        t, name = array.elem, f"k_atomic_{op.value}_{array.elem.value}"
        c, args = e.ctype(t), ["cmp", "v"] if op is Op.COMPARE_EXCHANGE else ["v"]
        new = e.wrap(_NEXT[op], "old", "v", t) if op in (Op.ADD, Op.SUB) else _NEXT[op]
        e.helper(name, lambda: e.function(c, name, [(f"{c} *", "p"), *((c, a) for a in args)], [
            f"{c} old, next;", "__atomic_load(p, &old, __ATOMIC_RELAXED);",
            f"do next = {new}; while (!__atomic_compare_exchange(p, &old, &next, false, "
            "__ATOMIC_SEQ_CST, __ATOMIC_RELAXED));", "return old;"]))
        return f"{name}(&{element}, {', '.join(operands)})"

    def plane(self, e: lo.CEmitter, fn: ir.PlaneFn, value: str, lane: str | None,
              t: Elem) -> str:
        """A plane is one unit: its own value (its bit for a ballot, 0 or 1 before it)."""
        own = {"ballot": f"({value} ? 1u : 0u)", "exclusive_sum": "0", "exclusive_prod": "1"}
        return own.get(fn.value, value)

    plane_barrier = staticmethod(lambda e: ";")  # a plane is one unit: nothing to wait for

    def head(self, e: lo.CEmitter) -> list[str]:
        """The entry point, which runs the cubes: as contexts where units meet at barriers."""
        team = bool(e.shared) or any(isinstance(s, ir.Barrier) for s in ir.walk(e.kernel.body))
        headers = ("stdint", "stdbool", "stdio", "math", "string", "stdlib", "ucontext")
        return [*(f"#include <{h}.h>" for h in headers),
                _ENTRY.substitute(n=math.prod(e.dim), team=int(team), entry=f"cubecl_{e.ident}")]

    def signature(self, e: lo.CEmitter) -> str:
        """The function one unit runs, given its index."""
        return "static void k_unit(int k_i)"

    def prologue(self, e: lo.CEmitter) -> None:
        """The unit and the parameters, from the launch's words."""
        e.line("const uint32_t k_u = (uint32_t)k_i; const uint64_t *const k_w = k_a;")
        for i, p in enumerate(e.arrays.values(), 3):
            t = e.mtype(p.elem)
            e.line(f"{t} *const p_{e.stems[p.name]} = ({t} *)(uintptr_t)k_w[{i}];")
        for i, p in enumerate(e.scalars.values(), 3 + len(e.arrays)):
            s = f"p_{e.stems[p.name]}"
            e.line(f"{e.ctype(p.elem)} {s}; memcpy(&{s}, &k_w[{i}], sizeof {s});")


class CCompiler:
    """The ``c`` backend's Compiler: IR to C99, and where each metadata word comes from."""

    extension = "c"

    def compile(self, kernel: ir.Kernel, cube_dim: cb.CubeDim,
                mode: cp.ExecutionMode) -> cb.CompiledKernel:
        """Lower ``kernel`` for cubes of ``cube_dim`` in ``mode``."""
        e = lo.CEmitter(kernel, cube_dim, mode, C99())
        source, arrays = e.program(), list(e.arrays)
        return cb.CompiledKernel(kernel.name, f"cubecl_{e.ident}", source, self.extension,
                                 [[k, arrays.index(a), d] for k, a, d in e.meta_used], e.kernel)


class CArtifactCompiler(cp.LoweringArtifactCompiler):
    """Lowers with the Compiler it is given; finalizes with ``cc`` to a shared library."""

    def __init__(self, compiler: cb.Compiler) -> None:
        # The variant: the C compiler in full, and this artifact format's version.
        super().__init__(compiler, f"{toolchain()} c1")

    def source(self, compiled: cb.CompiledKernel) -> bytes:
        """The flags and the source decide the library (the variant names ``cc``)."""
        return "\n".join([*FLAGS, compiled.source]).encode()

    def finalize(self, compiled: cb.CompiledKernel,
                 recording: cp.CompilationRecording) -> cb.Artifact:
        """The library, sealed with its SHA-256; its entry point and metadata layout."""
        with tempfile.TemporaryDirectory() as d:
            run = _cc(*FLAGS, "-x", "c", "-", "-o", f"{d}/k.so", "-lm", source=compiled.source)
            if run.returncode:
                raise cb.CompilationError(f"cc exited with {run.returncode}",
                                          kernel=compiled.name, backend="c", log=run.stderr)
            lib = Path(d, "k.so").read_bytes()
        return cb.Artifact.sealed(KIND, lib, {"entry_point": compiled.entry_point,
                                              "meta": compiled.repr})


class CTarget:
    """Loads shared libraries; its store is the one the core opened for it."""

    def __init__(self, store: cp.ArtifactStore | None) -> None:
        self.store = store

    def load(self, artifact: cb.Artifact) -> tuple[Any, Any]:
        """The entry point and the metadata layout, once the bytes match their SHA-256."""
        h = artifact.opened(KIND)
        with tempfile.TemporaryDirectory() as d:  # private; the library stays mapped
            Path(d, "k.so").write_bytes(artifact.payload)
            return getattr(ctypes.CDLL(f"{d}/k.so"), str(h["entry_point"])), h["meta"]


def _view(b: cb.Binding) -> np.ndarray:  # the binding's elements, in the storage's memory
    return b.resource[b.offset:b.offset + b.size].view(b.elem.numpy_name)


class CServer:
    """The host as the ``c`` device; a launch runs to completion at once."""

    backend = "c"

    def __init__(self, device: cb.DeviceInfo) -> None:
        self.device, self.storage, self.capabilities = device, su.BytesStorage(), CAPABILITIES

    def read(self, binding: cb.Binding) -> np.ndarray:
        """A copy of the binding's elements."""
        return _view(binding).copy()

    def write(self, binding: cb.Binding, data: np.ndarray) -> None:
        """Copy ``data`` into the binding."""
        _view(binding)[:] = data

    def launch(self, kernel: tuple[Any, Any], count: cb.CubeCount, dim: cb.CubeDim,
               arrays: Sequence[cb.Binding], scalars: Sequence[np.generic]) -> None:
        """Call the entry point with the launch's words."""
        fn, meta = kernel
        values = np.frombuffer(b"".join(s.tobytes().ljust(8, b"\0") for s in scalars), np.uint64)
        words = np.array([count.x, count.y, count.z,
                          *(b.resource.ctypes.data + b.offset for b in arrays), *values,
                          *(arrays[i].metadata(kind, d) for kind, i, d in meta)], np.uint64)
        fn(words.ctypes)  # as a pointer

    def sync(self) -> None:
        """Nothing to wait for."""


class CRuntime:
    """One device: this host, with its C compiler."""

    name = "c"

    def devices(self) -> list[cb.DeviceInfo]:
        """The host, if it has ``cc``."""
        if shutil.which("cc") is None:
            raise cb.BackendUnavailable("the c backend needs a C compiler, cc, on PATH")
        return [cb.DeviceInfo("c", 0, "host", cb.DeviceKind.CPU, driver_version=toolchain())]

    def create_server(self, device: int) -> CServer:
        """The server for ``devices()[device]``."""
        return CServer(self.devices()[device])

