"""The ``opencl`` backend's two compiler halves: OpenCL C to a program binary
(:class:`OpenclArtifactCompiler`, any thread), and its load on the server's context
(:class:`OpenclTarget`)."""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import pyopencl as cl
from pyopencl import _cl

from cubecl_server.backend import Artifact, CompilationError, CompiledKernel, CubeDim
from cubecl_server.backend.compiling import (
    ArtifactStore,
    CompilationRecording,
    ExecutionMode,
    LoweringArtifactCompiler,
)
from cubecl_server.backend.support import ArtifactRejected
from cubecl_server.ir import Kernel

from . import BACKEND, pocl
from .build_workers import BuildWorkers, WorkerDied, workers_for
from .compiler import ArrayArg, KernelLayout, Need, OpenclCompiler, ScalarArg
from .device import DeviceFeatures, features_of, variant_of
from .launcher import Enqueue, make_enqueue, scalar_arg_dtypes

__all__ = ["KIND", "BUILD_OPTIONS", "OpenclArtifactCompiler", "OpenclTarget", "LoadedKernel",
           "build_error", "program_key"]

log = logging.getLogger(__name__)

KIND = "cl-binary"
"""The artifact kind: a ``CL_PROGRAM_BINARIES`` blob for one device."""

BUILD_OPTIONS = "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt"
"""Options every program is built with (part of what ``source`` hashes)."""

# A build's warnings are about source we generated, not the user's: PyOpenCL's
# CompilerWarning for them (raised at our build calls) would only be noise.
warnings.filterwarnings("ignore", category=cl.CompilerWarning, module=__name__)

_NEEDS = {Need.FP64: "f64 arithmetic needs cl_khr_fp64",
          Need.FP16: "f16 arithmetic needs cl_khr_fp16",
          Need.INT64_ATOMICS: "64-bit atomics need cl_khr_int64_base_atomics and "
                              "cl_khr_int64_extended_atomics",
          Need.SUBGROUPS: "plane operations need cl_khr_subgroups with a known size",
          Need.SUBGROUP_ARITHMETIC: "plane_prod needs cl_khr_subgroup_non_uniform_arithmetic",
          Need.SUBGROUP_BALLOT: "plane_ballot needs cl_khr_subgroup_ballot",
          Need.SUBGROUP_SHUFFLE: "plane_shuffle_xor needs cl_khr_subgroup_shuffle"}

# clang's diagnostics, as PoCL and most drivers pass them on:
# "<file>:LINE:COL: error: msg" or PoCL's "error: <file>:LINE:COL: msg".
_DIAGNOSTIC = re.compile(r"(?:^|\s)(?:error: )?(?P<file>[^\s:]*):(?P<line>\d+):(?P<col>\d+):"
                         r"\s*(?:(?:fatal )?error:\s*)?(?P<msg>.*)$")


def program_key(source: str, options: str = BUILD_OPTIONS) -> str:
    """The name a program's PoCL locks go by: the digest of its build options and
    source, which is what decides PoCL's directory for it. The build records it in
    the artifact's header (``program``) so that the load takes the same lock."""
    return hashlib.sha256(f"{options}\n{source}".encode()).hexdigest()


@contextmanager
def _program_lock(on_pocl: bool, key: str) -> Iterator[None]:
    """:func:`cubecl_opencl.pocl.program_lock` on PoCL; nothing on other drivers."""
    with pocl.program_lock(key) if on_pocl else nullcontext():
        yield


_HEX64 = re.compile(r"[0-9a-f]{64}")
_BUILD_ATTEMPTS = 3


def build_error(kernel: str, source: str, log: str) -> CompilationError:
    """A CompilationError for a failed build: the first error the log names, with the
    generated source line it points at, and the whole log."""
    lines = source.splitlines()
    for raw in log.splitlines():
        if "error" not in raw:
            continue
        m = _DIAGNOSTIC.search(raw)
        if m is None:
            continue
        n, col = int(m.group("line")), int(m.group("col"))
        quoted = lines[n - 1].strip() if 0 < n <= len(lines) else "<line not in the source>"
        message = (f"the OpenCL compiler rejected the generated source at line {n}:{col}: "
                   f"{m.group('msg').strip()}\n    {n} | {quoted}")
        return CompilationError(message, kernel=kernel, backend=BACKEND, log=log)
    return CompilationError("the OpenCL compiler rejected the generated source",
                            kernel=kernel, backend=BACKEND, log=log)


class OpenclArtifactCompiler(LoweringArtifactCompiler):
    """Lowers to OpenCL C and builds it for the device into a program binary.

    It builds on a context of its own (OpenCL contexts and program builds are
    thread-safe; nothing here is shared with the server's queue), so it may run on
    any thread of the loader's pool. PyOpenCL releases the GIL in ``clBuildProgram``,
    but PoCL 3.1 holds a process-wide lock around its compiler: on PoCL, builds from
    two threads would run one after the other, whatever their contexts. So on PoCL
    one build at a time runs here, and a build asked for while it runs goes to a
    worker process (:mod:`cubecl_opencl.build_workers`): a batch's misses build in
    parallel, and a kernel compiled alone pays for no process.
    """

    def __init__(self, compiler: OpenclCompiler, device: cl.Device,
                 features: DeviceFeatures | None = None) -> None:
        # The variant: platform, device and driver versions, what binaries are valid on.
        super().__init__(compiler, variant_of(device))
        self.device = device
        self.features = features or features_of(device)
        self._on_pocl = pocl.is_pocl(device.platform.name)
        self._context: cl.Context | None = None
        self._lock = threading.Lock()
        self._here = threading.Lock()
        """Held by the build running in this process (on PoCL)."""
        self._workers: BuildWorkers | None = None

    def _ctx(self) -> cl.Context:
        with self._lock:
            if self._context is None:
                self._context = cl.Context([self.device])
            return self._context

    def lower(self, kernel: Kernel, cube_dim: CubeDim, mode: ExecutionMode,
              recording: CompilationRecording) -> CompiledKernel:
        """IR to OpenCL C, refusing what the device cannot run before anything is built."""
        compiled = super().lower(kernel, cube_dim, mode, recording)
        layout: KernelLayout = compiled.repr
        f = self.features
        have = {Need.FP64: f.fp64, Need.FP16: f.fp16, Need.INT64_ATOMICS: f.int64_atomics,
                Need.SUBGROUPS: f.subgroups,
                **{n: n in f.extensions for n in (Need.SUBGROUP_ARITHMETIC,
                                                  Need.SUBGROUP_BALLOT, Need.SUBGROUP_SHUFFLE)}}
        missing = [_NEEDS[n] for n in sorted(layout.needs) if not have[n]]
        if missing:
            raise CompilationError(f"{'; '.join(missing)}, which {self.device.name.strip()} "
                                   "does not report", kernel=kernel.name, backend=BACKEND)
        if cube_dim.total > f.max_work_group_size or any(
                d > m for d, m in zip((cube_dim.x, cube_dim.y, cube_dim.z),
                                      f.max_work_item_sizes, strict=False)):
            raise CompilationError(
                f"cube dim {cube_dim.x}x{cube_dim.y}x{cube_dim.z} exceeds the device's work "
                f"group limits ({f.max_work_group_size} units, per axis "
                f"{list(f.max_work_item_sizes)})", kernel=kernel.name, backend=BACKEND)
        if layout.shared_bytes > f.local_mem_bytes:
            raise CompilationError(f"{layout.shared_bytes} bytes of shared memory exceed the "
                                   f"device's {f.local_mem_bytes}",
                                   kernel=kernel.name, backend=BACKEND)
        return compiled

    def source(self, compiled: CompiledKernel) -> bytes:
        """The build options and the generated source: together they decide the binary."""
        return f"// build options: {BUILD_OPTIONS}\n{compiled.source}".encode()

    def finalize(self, compiled: CompiledKernel, recording: CompilationRecording) -> Artifact:
        """Build the program for the device and keep its ``CL_PROGRAM_BINARIES``."""
        payload = self.build(compiled.name, compiled.source)
        recording.add("artifact", 0.0, len(payload))
        layout: KernelLayout = compiled.repr
        return Artifact.sealed(KIND, payload, {
            "entry_point": compiled.entry_point, "kernel": compiled.name,
            "build_options": BUILD_OPTIONS, "program": program_key(compiled.source),
            "params": layout.to_header(),
        })

    def build(self, kernel: str, source: str) -> bytes:
        """The device binary of ``source``; CompilationError with the build log if the
        OpenCL compiler rejects it.

        On PoCL the build and the serialization of its binary hold the program's
        lock (:mod:`cubecl_opencl.pocl`): another process rewriting the program's
        ``program.bc`` in between would leave it out of the binary. A binary that
        comes back broken all the same (a process outside cubecl rewrote it) is built
        again rather than stored.
        """
        problem: str | None = None
        for _ in range(_BUILD_ATTEMPTS):
            binary = self._build_somewhere(kernel, source)
            problem = pocl.binary_problem(binary) if self._on_pocl else None
            if problem is None:
                return binary
            log.warning("PoCL returned a broken binary for %s (%s); building it again",
                        kernel, problem)
        raise CompilationError(f"PoCL returned a broken program binary: {problem}",
                               kernel=kernel, backend=BACKEND)

    def _build_somewhere(self, kernel: str, source: str) -> bytes:
        if not self._on_pocl:
            return self._build_once(kernel, source)
        if not self._here.acquire(blocking=False):
            return self._build_in_worker(kernel, source)
        try:
            with _program_lock(True, program_key(source)):
                return self._build_once(kernel, source)
        finally:
            self._here.release()

    def _build_in_worker(self, kernel: str, source: str) -> bytes:
        if self._workers is None:
            self._workers = workers_for(self.device.platform.name, self.device.name)
        try:
            result = self._workers.build(kernel, source, BUILD_OPTIONS, program_key(source))
        except (WorkerDied, OSError) as e:
            raise CompilationError(f"building in a worker process failed: {e}",
                                   kernel=kernel, backend=BACKEND) from None
        if result.binary is None:
            raise build_error(kernel, source, result.log)
        return result.binary

    def _build_once(self, kernel: str, source: str) -> bytes:
        # The raw program, not pyopencl.Program: its build adds an include path,
        # PYOPENCL_BUILD_OPTIONS and a binary cache of its own, none of which would
        # be in what ``source`` hashes.
        program = _cl._Program(self._ctx(), source)
        try:
            program.build(BUILD_OPTIONS.encode(), [self.device])
        except cl.Error as e:
            try:
                build_log = program.get_build_info(self.device, cl.program_build_info.LOG)
            except cl.Error:
                build_log = str(e)
            raise build_error(kernel, source, build_log or str(e)) from None
        (binary,) = program.get_info(cl.program_info.BINARIES)
        # Released here, inside the caller's lock: with PoCL's cache off, releasing
        # deletes the program's directory, which a load of this binary in another
        # thread would be unpacking into.
        del program
        return bytes(binary)


@dataclass(frozen=True)
class LoadedKernel:
    """A kernel ready to launch on the server's context: the CL kernel (with its
    scalar argument types set, for PyOpenCL's fast argument packing) and its layout.

    ``enqueue`` is the launcher :func:`cubecl_opencl.launcher.make_enqueue` made for
    this argument list once, here: a launch only calls it.
    """

    kernel: cl.Kernel
    name: str
    arrays: tuple[ArrayArg, ...]
    scalars: tuple[ScalarArg, ...]
    enqueue: Enqueue = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "enqueue", make_enqueue(self.kernel, self.arrays,
                                                          len(self.scalars)))


class OpenclTarget:
    """Loads program binaries on the server's context; its store is the one the core
    opened for this platform, device and driver."""

    def __init__(self, context: cl.Context, device: cl.Device,
                 store: ArtifactStore | None) -> None:
        self.context = context
        self.device = device
        self.store = store
        self._on_pocl = pocl.is_pocl(device.platform.name)

    def load(self, artifact: Artifact) -> LoadedKernel:
        """Program from binary, built for the device, and its kernel object.

        A binary the driver refuses (or whose bytes are not the ones finalize
        produced) raises ArtifactRejected; the loader purges it and compiles again.
        """
        h = artifact.opened(KIND)  # drivers accept some damaged binaries, or crash
        entry, digest = h.get("entry_point"), str(h["sha256"])
        if not isinstance(entry, str):
            raise ArtifactRejected("an OpenCL binary artifact without an entry point")
        try:
            arrays, scalars = KernelLayout.arrays_from_header(h.get("params"))
        except ValueError as e:
            raise ArtifactRejected(str(e)) from e
        if self._on_pocl and (problem := pocl.binary_problem(artifact.payload)):
            # PoCL asserts on these instead of returning an error: reject it first.
            raise ArtifactRejected(f"a broken PoCL binary: {problem}")
        key = h.get("program")
        if not isinstance(key, str) or not _HEX64.fullmatch(key):
            key = digest  # stored before artifacts named their program
        try:
            # Unpacking the binary writes the program's PoCL directory: the program's
            # lock keeps a build or another unpacking of it out meanwhile.
            with _program_lock(self._on_pocl, key):
                program = _cl._Program(self.context, [self.device], [artifact.payload])
                program.build(str(h.get("build_options", "")).encode(), [self.device])
                kernel = cl.Kernel(program, entry)
        except cl.Error as e:
            raise ArtifactRejected(f"the driver rejected the binary: {e}") from e
        kernel.set_scalar_arg_dtypes(scalar_arg_dtypes(arrays, scalars))
        return LoadedKernel(kernel, str(h.get("kernel", entry)), arrays, scalars)
