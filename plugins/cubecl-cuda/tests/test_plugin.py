"""The plugin through the core's registry and CLI, on a machine without a GPU."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from cubecl_cuda import CompileOnlyTarget, compile_only_capabilities
from cubecl_cuda.compiler import CudaCompiler
from cubecl_cuda.runtime import NO_DEVICE, CudaRuntime
from cuda_support import without_gpu

from cubecl_server.backend.compiling import backend_compiler
from cubecl_server.client import create_client
from cubecl_server.errors import BackendUnavailable
from cubecl_server.lang import ABSOLUTE_POS, Array, CubeDim, f32, kernel
from cubecl_server.plugins import registry, reset_registry
from cubecl_server.server import DeviceTimer
from cubecl_server.timestamp_profiler import TimingMethod


@kernel
def double(a: Array[f32]) -> None:
    """a *= 2, in the kernel language."""
    i = ABSOLUTE_POS
    if i < len(a):
        a[i] = a[i] * 2.0


@without_gpu
def test_backends_json_lists_cuda_unavailable() -> None:
    """``cubecl-server backends --json``: cuda, unavailable, "no CUDA device"."""
    proc = subprocess.run([sys.executable, "-m", "cubecl_server.cli", "backends", "--json"],
                          capture_output=True, text=True, timeout=120, check=True)
    rows = {row["name"]: row for row in json.loads(proc.stdout)}
    assert rows["cuda"]["distribution"] == "cubecl-cuda"
    assert rows["cuda"]["status"] == "unavailable"
    assert rows["cuda"]["reason"] == NO_DEVICE == "no CUDA device"


def test_discovery_does_not_import_cupy() -> None:
    """Importing the plugin, and the core's discovery of every plugin, leave CuPy
    unimported: it costs a few hundred milliseconds, which every ``cubecl-server``
    command and every other backend's client would pay."""
    code = """
import sys
def cupy_modules():
    return sorted(m for m in sys.modules if m.split(".")[0] in ("cupy", "cupy_backends"))
import cubecl_cuda.plugin
assert not cupy_modules(), ("import cubecl_cuda.plugin", cupy_modules())
from cubecl_server.plugins import registry
registry().descriptor("cuda")
assert not cupy_modules(), ("registry()", cupy_modules())
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@without_gpu
def test_runtime_without_a_device() -> None:
    """No GPU here: devices() says so, and so does creating a client."""
    with pytest.raises(BackendUnavailable, match=r"^no CUDA device$"):
        CudaRuntime().devices()
    reset_registry()
    with pytest.raises(BackendUnavailable, match="no CUDA device"):
        create_client("cuda")


def test_the_descriptor_makes_the_cuda_compiler() -> None:
    """The Compiler resolved for ``cuda`` is the descriptor's CUDA C++ one (for ``cuda``
    only), and the store's maps keep their cuda names."""
    reset_registry()
    caps = compile_only_capabilities()
    compiler = backend_compiler("cuda", caps)
    assert isinstance(compiler, CudaCompiler) and compiler.extension == "cu"
    assert not isinstance(backend_compiler("cpu", caps), CudaCompiler)
    assert registry().descriptor("cuda").store_names.kernels == "cuda-cubin"


def test_compile_only_capabilities() -> None:
    """What the conformance suite reads to run only the compile-only half."""
    caps = compile_only_capabilities()
    assert caps.device_present is False and caps.plane_size == 32
    assert caps.f16 and caps.f64 and caps.shared_memory_bytes == 48 * 1024


def test_compile_only_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client with a real compile path and no device: prepare() compiles and stores,
    memory is refused; CUBECL_CUDA_ARCH names the architecture."""
    monkeypatch.setenv("CUBECL_CUDA_ARCH", "sm_80")
    reset_registry()
    client = create_client("cuda", compile_only=True)
    assert client.capabilities.device_present is False
    assert client.loader.artifact_compiler.variant.startswith("sm_80-nvrtc")
    assert isinstance(client.loader.target, CompileOnlyTarget)
    client.prepare(double, CubeDim(128))
    assert "compile-only (sm_80" in str(client.device)
    with pytest.raises(BackendUnavailable, match="compile-only"):
        client.empty(16, "float32")


def test_only_a_gpu_server_times_with_the_device() -> None:
    """CudaServer times launches with CUDA events (run on a GPU by device-check.sh);
    the compile-only server has no device, so ``client.profile`` uses the host clock."""
    from cubecl_cuda.compile_only import CompileOnlyServer
    from cubecl_cuda.server import CudaServer

    assert issubclass(CudaServer, DeviceTimer)
    assert not isinstance(CompileOnlyServer(), DeviceTimer)
    reset_registry()
    client = create_client("cuda", compile_only=True)
    assert client.profile(lambda: None).method is TimingMethod.SYSTEM
