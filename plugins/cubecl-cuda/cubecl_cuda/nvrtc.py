"""NVRTC through CuPy's low-level wrapper: CUDA C++ to PTX and cubin, with no GPU.

Only ``cupy.cuda.nvrtc``'s thin calls are used (``createProgram``,
``compileProgram``, ``getPTX``, ``getCUBIN``, ``getProgramLog``,
``destroyProgram``): they load ``libnvrtc`` and nothing else. CuPy's higher-level
compile helpers ask the CUDA runtime for a device first, so they are of no use on a
machine without one.

The headers the generated code includes (``cuda_fp16.h``) come from the CUDA runtime
wheel (``nvidia-cuda-runtime``), found through ``cuda-pathfinder`` as CuPy finds
its own; ``CUDA_PATH``/``CUDA_HOME`` is the fallback.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from cubecl_server.backend import BackendUnavailable


@cache
def _api() -> Any:
    """CuPy's NVRTC module, imported on first use: importing CuPy takes a few hundred
    milliseconds, which listing backends or running another backend must not pay."""
    from cupy.cuda import nvrtc

    return nvrtc

__all__ = ["NvrtcOutput", "NvrtcFailure", "version", "include_dir", "headers_digest",
           "supported_archs", "compile_source", "source_lines"]

_HEADERS = ("cuda_fp16.h", "cuda_fp16.hpp")


@dataclass(frozen=True)
class NvrtcOutput:
    """What one NVRTC compilation produced: PTX, the cubin (None for a virtual
    ``compute_XX`` target), NVRTC's log (warnings) and how long it took."""

    ptx: bytes
    cubin: bytes | None
    log: str
    ms: float


class NvrtcFailure(Exception):
    """NVRTC refused a program: its status name and its whole log."""

    def __init__(self, status: str, log: str) -> None:
        super().__init__(f"{status}\n{log}")
        self.status = status
        self.log = log


@cache
def version() -> tuple[int, int]:
    """The loaded NVRTC's (major, minor) version."""
    major, minor = _api().getVersion()
    return int(major), int(minor)


@cache
def supported_archs() -> tuple[int, ...]:
    """The real architectures this NVRTC compiles for, as numbers (``90`` for sm_90)."""
    return tuple(int(a) for a in _api().getSupportedArchs())


@cache
def include_dir() -> Path:
    """The directory holding ``cuda_fp16.h``; ``BackendUnavailable`` if there is none."""
    candidates: list[Path] = []
    try:
        from cuda.pathfinder import find_nvidia_header_directory
        found = find_nvidia_header_directory("cudart")
        if found:
            candidates.append(Path(found))
    except ImportError:
        pass
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "include")
    for path in candidates:
        if (path / _HEADERS[0]).is_file():
            return path
    raise BackendUnavailable("no CUDA headers (cuda_fp16.h): install nvidia-cuda-runtime "
                             "or set CUDA_PATH")


@cache
def headers_digest() -> str:
    """A hash of the headers the generated code includes: they shape NVRTC's output,
    and they come from a wheel whose version is not in the build id."""
    h = hashlib.sha256()
    for name in _HEADERS:
        path = include_dir() / name
        if path.is_file():
            h.update(name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def compile_source(source: str, name: str, options: list[str]) -> NvrtcOutput:
    """Compile one translation unit with ``options`` (plus the include directory).

    Raise :class:`NvrtcFailure` with NVRTC's log when it does not compile.
    """
    start = time.perf_counter()
    prog = _api().createProgram(source, name, [], [])
    try:
        try:
            _api().compileProgram(prog, [*options, f"-I{include_dir()}"])
        except _api().NVRTCError as e:
            raise NvrtcFailure(str(e), _api().getProgramLog(prog)) from None
        log = _api().getProgramLog(prog)
        ptx = bytes(_api().getPTX(prog)).rstrip(b"\0")
        real = any(re.fullmatch(r"--gpu-architecture=sm_\w+", o) for o in options)
        cubin = bytes(_api().getCUBIN(prog)) if real else None
    finally:
        _api().destroyProgram(prog)
    return NvrtcOutput(ptx, cubin, log.strip("\0").strip(), (time.perf_counter() - start) * 1e3)


def source_lines(log: str, source: str, name: str) -> str:
    """The generated lines NVRTC's log points at (``name(LINE): error ...``), numbered;
    empty when the log names none (an error of ptxas, which NVRTC runs last)."""
    lines = source.splitlines()
    found = re.findall(rf"^{re.escape(name)}\((\d+)\): (?:error|catastrophic)", log, re.M)
    numbers = sorted({int(n) for n in found if 0 < int(n) <= len(lines)})
    return "\n".join(f"{n:5d} | {lines[n - 1]}" for n in numbers)
