"""The ``cuda`` backend's two compiler halves: CUDA C++ to cubin + PTX, and its load.

Variant: ``sm_90-nvrtc13.5``, the exact architecture the cubin is for and the NVRTC
that built it. The architecture comes from the device (its compute capability, which
names the SM exactly: ``sm_86`` and ``sm_89`` never share); without a device,
``CUBECL_CUDA_ARCH`` names it, for compile-only runs and ahead-of-time builds.

Architecture-specific targets (``sm_90a``, ``sm_100a``): not used by default. The
lowering emits nothing that needs them (no ``wgmma``, no ``setmaxnreg``), and PTX
for an ``a`` target cannot be JIT-compiled for any other GPU, which would take away
the PTX fallback. ``CUBECL_CUDA_ARCH=sm_90a`` asks for one explicitly (ahead of time);
it is then its own variant.

Artifact (kind ``cuda-cubin``): the payload is the cubin followed by the PTX, their
sizes in the header beside the entry point, the parameter layout, the architecture
and the NVRTC version. Load tries the cubin, then the PTX (which the driver
JIT-compiles, for a driver that takes the cubin's architecture as foreign); a module
the driver refuses both ways is ``ArtifactRejected``, so the loader purges it and
compiles again.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from cubecl_cuda import BACKEND, STORE_NAMES, nvrtc
from cubecl_cuda.compiler import CudaCompiler, KernelRepr, Param
from cubecl_server.backend import (
    Artifact,
    BackendUnavailable,
    CompilationError,
    CompiledKernel,
)
from cubecl_server.backend.compiling import (
    ArtifactStore,
    CompilationRecording,
    LoweringArtifactCompiler,
)
from cubecl_server.backend.support import ArtifactRejected

__all__ = [
    "KIND", "STORE_NAMES", "ENV_ARCH", "COMPILE_ONLY_ARCHS", "parse_arch", "nvrtc_options",
    "CudaArtifactCompiler", "LoadedCudaKernel", "split_payload",
    "CompileOnlyTarget", "compile_only_archs", "compile_only_compiler", "default_arch",
]

KIND = "cuda-cubin"
ENV_ARCH = "CUBECL_CUDA_ARCH"
"""Names the architecture(s) to compile for without a device: ``sm_90``, or a comma
separated list for compile-only runs (``sm_80,sm_90``)."""
COMPILE_ONLY_ARCHS = ("sm_80", "sm_90")
"""What a compile-only run compiles for when ``CUBECL_CUDA_ARCH`` is not set."""
_MIN_ARCH = 70  # f16 atomics (16-bit atomicCAS) and __activemask need Volta


def parse_arch(text: str) -> str:
    """Normalise an architecture name: ``sm_90``, ``sm_90a``, ``90`` or ``9.0``.

    ``ValueError`` for anything else, or for one older than ``sm_70``.
    """
    t = text.strip().lower()
    m = (re.fullmatch(r"(?:sm_)?(\d{2,3})([af]?)", t)
         or re.fullmatch(r"(\d+)\.(\d)", t))
    if m is None:
        raise ValueError(f"not a CUDA architecture: {text!r} (write it as sm_90)")
    if "." in t:
        number, suffix = int(m.group(1)) * 10 + int(m.group(2)), ""
    else:
        number, suffix = int(m.group(1)), m.group(2)
    if number < _MIN_ARCH:
        raise ValueError(f"{text!r}: cubecl-cuda needs sm_{_MIN_ARCH} or newer")
    return f"sm_{number}{suffix}"


def nvrtc_options(arch: str) -> list[str]:
    """The NVRTC options every kernel is compiled with, for ``arch``.

    ``--fmad=false``: the IR's ``a * b + c`` is two rounded operations (``fma`` is
    its own function), so NVRTC must not contract them.
    """
    return [f"--gpu-architecture={arch}", "-std=c++17", "--fmad=false"]


def split_payload(artifact: Artifact) -> tuple[bytes, bytes]:
    """An artifact's (cubin, PTX); ``ArtifactRejected`` if it is not a cuda one."""
    h = artifact.header
    cubin_size, ptx_size = h.get("cubin_bytes"), h.get("ptx_bytes")
    if (artifact.kind != KIND or not isinstance(cubin_size, int)
            or not isinstance(ptx_size, int)
            or cubin_size + ptx_size != len(artifact.payload)):
        raise ArtifactRejected(f"not a cuda artifact (kind {artifact.kind!r})")
    return artifact.payload[:cubin_size], artifact.payload[cubin_size:]


class CudaArtifactCompiler(LoweringArtifactCompiler):
    """Lowers to CUDA C++ and finalizes it with NVRTC into a cubin (and PTX) for one
    architecture. Safe to use from any thread (each compile is its own program).

    The variant is the architecture and the NVRTC version, e.g. ``sm_90-nvrtc13.5``."""

    def __init__(self, compiler: CudaCompiler, arch: str) -> None:
        self.arch = parse_arch(arch)
        major, minor = nvrtc.version()
        self.nvrtc_version = f"{major}.{minor}"
        if int(re.sub(r"\D", "", self.arch)) not in nvrtc.supported_archs():
            raise BackendUnavailable(f"NVRTC {self.nvrtc_version} cannot compile for "
                                     f"{self.arch}")
        self.options = nvrtc_options(self.arch)
        super().__init__(compiler, f"{self.arch}-nvrtc{self.nvrtc_version}")

    def source(self, compiled: CompiledKernel) -> bytes:
        """The source with everything else finalize depends on: options, architecture,
        NVRTC version and the included headers (the include path itself is not: it is
        where the headers are, not what they say)."""
        head = json.dumps({"options": self.options, "nvrtc": self.nvrtc_version,
                           "headers": nvrtc.headers_digest(),
                           "entry": compiled.entry_point}, sort_keys=True)
        return head.encode() + b"\n" + compiled.source.encode()

    def finalize(self, compiled: CompiledKernel, recording: CompilationRecording) -> Artifact:
        """NVRTC to cubin and PTX; ``CompilationError`` with NVRTC's log and the
        generated lines it complains about."""
        name = f"{compiled.entry_point}.cu"
        try:
            out = nvrtc.compile_source(compiled.source, name, self.options)
        except nvrtc.NvrtcFailure as e:
            lines = nvrtc.source_lines(e.log, compiled.source, name)
            message = f"NVRTC {self.nvrtc_version} failed for {self.arch} ({e.status})"
            if lines:
                message += "\ngenerated source:\n" + lines
            raise CompilationError(message, kernel=compiled.name, backend=BACKEND,
                                   log=e.log) from None
        assert out.cubin is not None  # self.arch is always a real sm_ target
        recording.add("nvrtc", out.ms, len(out.cubin))
        recording.add("ptx", 0.0, len(out.ptx))
        layout = compiled.repr
        if not isinstance(layout, KernelRepr):
            raise CompilationError("lowered by another Compiler (no parameter layout)",
                                   kernel=compiled.name, backend=BACKEND)
        header: dict[str, Any] = {
            "entry_point": compiled.entry_point, "kernel": compiled.name,
            "params": [p.to_json() for p in layout.params], "cube_dim": list(layout.cube_dim),
            "arch": self.arch, "nvrtc": self.nvrtc_version,
            "cubin_bytes": len(out.cubin), "ptx_bytes": len(out.ptx),
        }
        if out.log:
            header["nvrtc_log"] = out.log  # warnings: kept for whoever reads the entry
        return Artifact(KIND, out.cubin + out.ptx, header)


@dataclass(frozen=True)
class LoadedCudaKernel:
    """A kernel loaded on a device: its function, how to fill its parameters, the
    cube dim it was compiled for, and whether the PTX fallback was used."""

    name: str
    function: Any
    module: Any
    params: tuple[Param, ...]
    cube_dim: tuple[int, int, int]
    from_ptx: bool


class CompileOnlyTarget:
    """The CompilationTarget of a machine without a GPU, for one architecture: the
    store the core opened, and a load that checks the artifact is whole instead of
    handing it to a driver.

    What it "loads" is the artifact itself. With it, the core's KernelLoader runs the
    whole compile path (cold, warm, rekeyed, a corrupt entry purged) on the host.
    """

    def __init__(self, arch: str, store: ArtifactStore | None = None) -> None:
        self.arch = parse_arch(arch)
        self.store = store

    def load(self, artifact: Artifact) -> Artifact:
        """The artifact, once its payload, header and architecture check out;
        ``ArtifactRejected`` otherwise (as a driver would refuse it)."""
        cubin, ptx = split_payload(artifact)
        arch = artifact.header.get("arch")
        if arch != self.arch:
            raise ArtifactRejected(f"artifact for {arch!r} offered to {self.arch}")
        if not cubin.startswith(b"\x7fELF") or b".entry" not in ptx:
            raise ArtifactRejected("payload is not a cubin followed by PTX")
        return artifact


def compile_only_archs() -> list[str]:
    """The architectures a run without a device compiles for: ``CUBECL_CUDA_ARCH``
    (comma separated), else :data:`COMPILE_ONLY_ARCHS`."""
    names = os.environ.get(ENV_ARCH, "").strip()
    if not names:
        return list(COMPILE_ONLY_ARCHS)
    return [parse_arch(n) for n in names.split(",") if n.strip()]


def default_arch() -> str:
    """The one architecture a device-less client or compiler targets when none is
    named: the first of ``CUBECL_CUDA_ARCH``, else ``sm_90``."""
    return compile_only_archs()[0] if os.environ.get(ENV_ARCH, "").strip() else "sm_90"


def compile_only_compiler(arch: str | None = None,
                          compiler: CudaCompiler | None = None) -> CudaArtifactCompiler:
    """A ready ArtifactCompiler for ``arch`` that needs no device (lower, source and
    finalize all run on the host); ``arch`` defaults to ``CUBECL_CUDA_ARCH``'s first,
    else ``sm_90``. This is what a compile-only conformance run and an ahead-of-time
    build use, since the core's client needs a server and so a device."""
    return CudaArtifactCompiler(compiler or CudaCompiler(), arch or default_arch())

