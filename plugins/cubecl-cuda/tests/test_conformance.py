"""The conformance suite for every architecture the compile-only run covers.

This run already includes the suite in this process (``pyproject.toml``: ``-p
cubecl_server.conformance --cubecl-backend cuda``), compiling for ``CUBECL_CUDA_ARCH``
(default ``sm_90``). Each other architecture of :data:`cuda_support.ARCHS` gets the suite's
compile-only tests in a fresh process, through the core's runner, with the same ptxas
check (the suite loads ``cubecl_cuda.conformance`` through its entry point), and every
one of them must pass.
"""

from __future__ import annotations

import pytest
from cubecl_cuda.ptxas import ptxas_path
from cuda_support import ARCHS, gpu_present

from cubecl_server.conformance import kernels, subject
from cubecl_server.conformance.runner import run_suite


def _in_process_arch(config: pytest.Config) -> str | None:
    """The architecture this process's conformance run compiles for, or None when
    the suite is not part of the run."""
    subj = subject(config)
    if subj is None or subj.backend != "cuda":
        return None
    return str(subj.client().loader.artifact_compiler.arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_compile_only_conformance(arch: str, request: pytest.FixtureRequest) -> None:
    """``-m compile_only`` of the suite with ``CUBECL_CUDA_ARCH=arch``: all pass."""
    if gpu_present():
        # The suite would use the GPU's own architecture, not ``arch``.
        pytest.skip("a GPU is here: the conformance suite runs on it, in full")
    if _in_process_arch(request.config) == arch:
        pytest.skip(f"the in-process conformance run compiles for {arch}")
    run = run_suite("cuda", ["-m", "compile_only"], env={"CUBECL_CUDA_ARCH": arch},
                    timeout=600)
    assert run.returncode == 0, run.output[-6000:]
    assert f"variant {arch}-nvrtc" in run.output, run.output[:3000]
    if ptxas_path() is not None:
        assert "cubecl-cuda: PTX checked by" in run.output, run.output[:3000]
    passed = set(run.with_outcome("passed"))
    want = {f"TestCompileOnly::test_lower_and_finalize[{name}]" for name in kernels.KERNEL_SET}
    assert want <= passed, f"not passed for {arch}: {sorted(want - passed)}"
    assert not run.with_outcome("failed") and not run.with_outcome("error"), run.output[-6000:]
