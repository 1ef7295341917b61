"""What a fresh process imports on its way to a first result: discovery loads every
installed plugin, but only the backend asked for imports its parts.

Each case runs a fresh interpreter that creates a client, launches a saxpy on data
whose size no cube size divides, checks it against NumPy and reports ``sys.modules``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.processes import last_json_line, run_python

PLUGINS = ("cubecl_opencl", "cubecl_vulkan", "cubecl_cuda", "cubecl_llvm", "cubecl_example",
           "cubecl_c")
"""The installed plugins' packages: each may be imported by discovery, as its package
and its ``plugin`` module, and no further unless its backend is used."""

CPU_PARTS = tuple(f"cubecl_server.backends.cpu.{m}"
                  for m in ("artifact", "atomics", "compiler", "planes", "server", "support",
                            "validate"))
"""The built-in cpu backend's parts, which only a cpu (or example) client needs."""

OWN_PARTS = {
    "cpu": ("cubecl_server.backends.cpu.compiler", "cubecl_server.backends.cpu.server"),
    "opencl": ("cubecl_opencl.compiler", "cubecl_opencl.artifact", "cubecl_opencl.server",
               "cubecl_opencl.runtime"),
    "vulkan": ("cubecl_vulkan.compiler", "cubecl_vulkan.artifact", "cubecl_vulkan.server",
               "cubecl_vulkan.runtime"),
    "llvm": ("cubecl_llvm.backend", "cubecl_llvm.elf", "cubecl_llvm.host"),
}
"""Modules the backend under test does import: proof that the report sees imports."""

C_FAMILY = ("opencl", "cuda", "c")
"""The backends that write C: only they import the core's C-family emitter."""

SCRIPT = """
import json, sys
import numpy as np
import cubecl_server
from cubecl_server.errors import BackendUnavailable
from cubecl_server.lang import ABSOLUTE_POS, Array, CubeCount, CubeDim, f32, kernel

@kernel
def saxpy(x: Array[f32], y: Array[f32], out: Array[f32], alpha: f32) -> None:
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = alpha * x[i] + y[i]

try:
    c = cubecl_server.client(sys.argv[1])
except BackendUnavailable as e:
    print(json.dumps({"unavailable": str(e)}))
    raise SystemExit(0)
rng = np.random.default_rng(11)
n = 1000 + 7
x = rng.standard_normal(n, dtype=np.float32)
y = rng.standard_normal(n, dtype=np.float32)
x[:3] = [0.0, -0.0, np.float32(3.4e38)]
out = c.empty(n, np.float32)
saxpy.launch(c, CubeCount(-(-n // 64)), CubeDim(64), c.create(x), c.create(y), out, 0.5)
got = c.read(out)
want = np.float32(0.5) * x + y
print(json.dumps({"right": bool(np.allclose(got, want, rtol=1e-6, atol=1e-6)),
                  "modules": sorted(sys.modules)}))
"""


def _first_result(backend: str, tmp_path: Path) -> list[str]:
    """The modules a fresh process had imported once its first result was right."""
    script = tmp_path / "first_result.py"  # a file: kernels are parsed from their source
    script.write_text(SCRIPT)
    proc = run_python(f"import runpy, sys; sys.argv[1:] = [{backend!r}]; "
                      f"runpy.run_path({str(script)!r}, run_name='__main__')", timeout=300)
    answer = last_json_line(proc)
    if "unavailable" in answer:
        pytest.skip(f"{backend}: {answer['unavailable']}")
    assert answer["right"], f"{backend} gave a wrong saxpy"
    modules: list[str] = answer["modules"]
    return modules


@pytest.mark.parametrize("backend", ["cpu", "opencl", "vulkan", "llvm"])
def test_a_first_result_imports_no_other_backends_parts(backend: str, tmp_path: Path) -> None:
    modules = _first_result(backend, tmp_path)
    for part in OWN_PARTS[backend]:
        assert part in modules, f"{part} was not imported by a {backend} launch"
    others = [p for p in PLUGINS if p != f"cubecl_{backend}"]
    found = [m for m in modules if m.split(".")[0] in others
             and m not in (*others, *(f"{p}.plugin" for p in others))]
    if backend != "cpu":
        found += [m for m in modules if m in CPU_PARTS]
    assert not found, (f"the {backend} client imported other backends' parts: "
                       + json.dumps(found))
    # Discovery still loaded every installed plugin (any may answer another's hook).
    assert {f"{p}.plugin" for p in others} <= set(modules)
    if backend not in C_FAMILY:  # and no plugin module imported a C emitter for it
        assert "cubecl_server.lowering.cfamily" not in modules


NOT_ON_A_WARM_LAUNCH = (
    "cubecl_server.lang.frontend",  # the IR comes from the store
    "cubecl_server.tune",  # nothing is tuned
    "cubecl_server.persistence.bundle",  # nothing is exported or imported
    "cubecl_server.persistence.remote",  # no shared tier is configured
    "cubecl_server.persistence.signing",
    "importlib_metadata",  # discovery and the build id read the standard library's
    "tomllib",  # there is no cubecl.toml
    "cubecl_server.lowering.passes.mathlib",  # nothing is lowered: no pass is imported
    "cubecl_server.lowering.passes.loops",
)
"""Modules a launch of a kernel the store holds does without."""


ALSO_NOT_ON_A_WARM_LAUNCH = {
    # Nothing runs a command (platform.processor() would, on Linux; PyOpenCL does).
    "cpu": ("subprocess",),
    "llvm": ("subprocess",
             "llvmlite.binding",  # LLVM itself (180 MB): the object code is linked without it
             "cubecl_llvm.native",
             "cubecl_llvm.emitter"),  # nothing is lowered
}
"""What a warm launch of some backends does without besides."""


@pytest.mark.parametrize("backend", ["cpu", "opencl", "llvm"])
def test_a_warm_first_result_imports_no_frontend_tuner_bundles_or_tier(
        backend: str, tmp_path: Path) -> None:
    _first_result(backend, tmp_path)  # the IR and the artifact into the store
    modules = set(_first_result(backend, tmp_path))
    assert "cubecl_server.lang.ircache" in modules, "the report does not see lang's imports"
    unused = NOT_ON_A_WARM_LAUNCH + ALSO_NOT_ON_A_WARM_LAUNCH.get(backend, ())
    found = [m for m in unused if m in modules]
    assert not found, f"a warm {backend} launch imported {found}"
