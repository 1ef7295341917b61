"""The ``llvm`` backend's parts: the Compiler (IR to LLVM IR), the ArtifactCompiler (LLVM
IR to object code, the stored artifact), the CompilationTarget (object code linked into
the process), and the server running a launch's cubes on every core."""

from __future__ import annotations

import array
import ctypes
import itertools
import os
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

import cubecl_server.backend as cb
import cubecl_server.backend.compiling as cp
import cubecl_server.backend.support as su
from cubecl_server import ir

from . import BACKEND, elf
from .host import f16_in_hardware, toolchain

if TYPE_CHECKING:
    from .native import LoadedObject

__all__ = ["CAPABILITIES", "LlvmArtifactCompiler", "LlvmCompiler", "LlvmRuntime",
           "LlvmServer", "LlvmTarget"]

Elem = ir.Elem
KIND = "llvm-object"
"""The artifact's kind: this host's object code (ELF, Mach-O or COFF as the host's)."""
FORMAT = "o1"
"""The version of the artifact's layout (the words a launch passes), in the variant."""

CAPABILITIES = cb.Capabilities(
    f64=True, f16=f16_in_hardware(), int8=True, int16=True, max_cube_count=(su.MAX_UNITS,) * 3,
    atomics=frozenset({Elem.I32, Elem.U32, Elem.I64, Elem.U64, Elem.F32}),
    shared_memory_bytes=65536, max_cube_dim=1024, plane_size=1, line_sizes=(1, 2, 4, 8, 16),
    debug_print=True)
"""What the host does here: every type (f16 where the CPU converts it), atomics on 32-
and 64-bit integers and f32, and planes of one unit (a unit's plane is itself: honest,
and all a CPU core has)."""

_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
# Launches this small run on the calling thread: threads would cost more than they save.
_MIN_UNITS_THREADED = 4096
# A larger launch runs on every core only where one thread would take at least this long
# (CUBECL_LLVM_THREADED_FROM_US): handing slices to the pool and waiting for them costs
# 50-100 us on this project's 2-core machine (a 64K-element saxpy took 70-95 us on two
# threads and 20 on one; a 4M-element one 0.9-1.1 ms on two and 1.6 on one).
_THREADED_FROM_US = 200.0
# Each thread takes a few slices, so uneven cubes (a data-dependent loop) even out.
_SLICES_PER_THREAD = 4


class LlvmCompiler:
    """The ``llvm`` backend's Compiler: the kernel through the shared passes, as LLVM IR."""

    extension = "ll"

    def compile(self, kernel: ir.Kernel, cube_dim: cb.CubeDim,
                mode: cp.ExecutionMode) -> cb.CompiledKernel:
        """Lower ``kernel`` for cubes of ``cube_dim`` in ``mode``."""
        # Here, not at the top: a process whose kernels all come from the store never
        # imports the emitter, the shared passes or llvmlite's IR builder.
        from .emitter import LlvmEmitter

        e = LlvmEmitter(kernel, cube_dim, mode)
        source, arrays = e.program(), list(e.arrays)
        meta = [[k, arrays.index(a), d] for k, a, d in e.meta_used]
        return cb.CompiledKernel(kernel.name, e.entry_point, source, self.extension, meta,
                                 e.kernel)


class LlvmArtifactCompiler(cp.LoweringArtifactCompiler):
    """Lowers with the Compiler it is given; finalizes LLVM IR into object code."""

    def __init__(self, compiler: cb.Compiler) -> None:
        super().__init__(compiler, f"{toolchain()}-{FORMAT}")

    def source(self, compiled: cb.CompiledKernel) -> bytes:
        """The LLVM IR decides the object code (the variant names LLVM and the CPU)."""
        return compiled.source.encode()

    def finalize(self, compiled: cb.CompiledKernel,
                 recording: cp.CompilationRecording) -> cb.Artifact:
        """The object code, sealed with its SHA-256; its entry point and metadata."""
        from .native import compile_object  # LLVM itself, loaded where a kernel compiles

        try:
            obj = compile_object(compiled.source)
        except RuntimeError as e:
            raise cb.CompilationError(f"LLVM refused the module: {e}", kernel=compiled.name,
                                      backend=BACKEND, log=compiled.source) from e
        return cb.Artifact.sealed(KIND, obj, {"entry_point": compiled.entry_point,
                                              "meta": compiled.repr})


class LoadedKernel:
    """A kernel linked into the process: its entry point and the metadata it reads."""

    def __init__(self, obj: elf.Image | LoadedObject, entry: Any,
                 meta: list[list[Any]]) -> None:
        self.obj, self.entry, self.meta = obj, entry, meta
        self.unit_seconds = 0.0
        """What one unit took on one thread at the last launch (0: none yet), or at most
        took where it was shared: it decides whether the next launch is shared."""


class LlvmTarget:
    """Links object code into this process; its store is the one the core opened."""

    def __init__(self, store: cp.ArtifactStore | None) -> None:
        self.store = store

    def load(self, artifact: cb.Artifact) -> LoadedKernel:
        """The entry point, once the bytes match their SHA-256 and link."""
        h = artifact.opened(KIND)
        name = str(h["entry_point"])
        try:
            obj = _link(artifact.payload)
            address = obj.address(name)
        except RuntimeError as e:
            raise su.ArtifactRejected(f"the object code does not link here: {e}") from e
        if not address:
            raise su.ArtifactRejected(f"the object code has no entry point {name!r}")
        meta = h["meta"]
        assert isinstance(meta, list)
        return LoadedKernel(obj, _ENTRY(address), meta)


def _link(data: bytes) -> elf.Image | LoadedObject:
    """Object code linked into the process: by :mod:`cubecl_llvm.elf` where it can (no
    LLVM loaded), by LLVM's MCJIT otherwise (another host format, another machine)."""
    try:
        return elf.link(data)
    except elf.Unsupported:
        from .native import load_object

        return load_object(data)


@cache
def _pool() -> ThreadPoolExecutor:
    """The threads every server shares: one per core."""
    return ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="cubecl-llvm")


def _view(b: cb.Binding) -> np.ndarray:  # the binding's elements, in the storage's memory
    return b.resource[b.offset:b.offset + b.size].view(b.elem.numpy_name)


class LlvmServer:
    """The host as the ``llvm`` device; a launch runs to completion at once, its cubes
    spread over every core (ctypes releases the GIL for each call)."""

    backend = BACKEND

    def __init__(self, device: cb.DeviceInfo, threads: int, threaded_from: float) -> None:
        self.device, self.storage, self.capabilities = device, su.BytesStorage(), CAPABILITIES
        self.threads = threads
        self.threaded_from = threaded_from
        """Seconds a launch must be expected to take on one thread to run on every core
        (0: every launch of enough units does)."""
        self._addresses: dict[int, tuple[weakref.ref[np.ndarray], int]] = {}

    def _address(self, b: cb.Binding) -> int:
        """Where the binding starts in memory (each resource's address asked once: NumPy's
        ``ctypes.data`` costs microseconds, a tiny launch's budget)."""
        r = b.resource
        known = self._addresses.get(id(r))
        if known is None or known[0]() is not r:
            known = self._addresses[id(r)] = (weakref.ref(r), r.ctypes.data)
        return known[1] + b.offset

    def read(self, binding: cb.Binding) -> np.ndarray:
        """A copy of the binding's elements."""
        return _view(binding).copy()

    def write(self, binding: cb.Binding, data: np.ndarray) -> None:
        """Copy ``data`` into the binding."""
        _view(binding)[:] = data

    def launch(self, kernel: LoadedKernel, count: cb.CubeCount, dim: cb.CubeDim,
               arrays: Sequence[cb.Binding], scalars: Sequence[np.generic]) -> None:
        """Call the entry point with the launch's words, over slices of the cubes."""
        values = [int.from_bytes(s.tobytes().ljust(8, b"\0"), "little") for s in scalars]
        words = [count.x, count.y, count.z, *(self._address(b) for b in arrays), *values,
                 *(arrays[i].metadata(kind, d) for kind, i, d in kernel.meta)]
        packed = array.array("Q", words)  # a ctypes array costs 7 us to fill, this 0.5
        address = packed.buffer_info()[0]
        cubes = count.x * count.y * count.z
        units = cubes * dim.x * dim.y * dim.z
        if self.threads == 1 or cubes < 2 or units < _MIN_UNITS_THREADED:
            kernel.entry(address, 0, cubes)
            return
        if units * kernel.unit_seconds < self.threaded_from:
            # On this thread: a kernel's first launch, or one too cheap to share.
            start = time.perf_counter()
            kernel.entry(address, 0, cubes)
            kernel.unit_seconds = (time.perf_counter() - start) / units
            return
        slices = min(cubes, self.threads * _SLICES_PER_THREAD)
        bounds = [cubes * k // slices for k in range(slices + 1)]
        # One task a thread, each taking the next slice until none is left: a task per
        # slice cost a queue round trip each (a 1M-element saxpy took 480 us on two
        # threads, 320 on one; now 250).
        take = itertools.count()

        def run() -> None:
            while (k := next(take)) < slices:
                kernel.entry(address, bounds[k], bounds[k + 1])

        workers = min(self.threads, slices)
        start = time.perf_counter()
        futures = [_pool().submit(run) for _ in range(workers - 1)]
        run()
        for f in futures:
            f.result()
        # What one thread would have taken at most (the pool's own cost counted in, once
        # a thread): where that cost times the threads is under threaded_from (2 threads
        # here), a cheap kernel whose first timing a busy core or page faults inflated
        # goes back to the calling thread; on many cores it stays shared, as every
        # launch of enough units was before launches were timed.
        kernel.unit_seconds = (time.perf_counter() - start) * workers / units

    def sync(self) -> None:
        """Nothing to wait for: a launch has finished when it returns."""


class LlvmRuntime:
    """One device: this host, every core of it."""

    name = BACKEND

    def devices(self) -> list[cb.DeviceInfo]:
        """The host, named by its CPU as LLVM sees it."""
        return [cb.DeviceInfo(BACKEND, 0, f"host ({os.cpu_count()} cores)", cb.DeviceKind.CPU,
                              driver_version=toolchain())]

    def create_server(self, device: int) -> LlvmServer:
        """The server for ``devices()[device]``; ``CUBECL_LLVM_THREADS`` caps its threads,
        ``CUBECL_LLVM_THREADED_FROM_US`` says from how many microseconds on one thread a
        launch is shared among them."""
        threads = int(os.environ.get("CUBECL_LLVM_THREADS", "0")) or os.cpu_count() or 1
        threaded_from = float(os.environ.get("CUBECL_LLVM_THREADED_FROM_US",
                                             _THREADED_FROM_US)) * 1e-6
        return LlvmServer(self.devices()[device], threads, threaded_from)
