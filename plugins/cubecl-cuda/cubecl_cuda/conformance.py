"""What cubecl-cuda adds to the conformance suite (a pytest plugin).

The suite loads it wherever it runs against ``cuda`` (the plugin's own tests, the
CLI, the runner), through the entry point ``cuda = "cubecl_cuda.conformance"`` of the
group ``cubecl_server.conformance``: every artifact the suite's compile-only
tests finalize has its PTX assembled by ``ptxas`` for the artifact's architecture,
where a CUDA toolkit's ``ptxas`` is found (PATH, ``/usr/local/cuda/bin`` or
``CUBECL_CUDA_PTXAS``); without one the check is left out, not failed.
"""

from __future__ import annotations

import pytest

from cubecl_cuda.ptxas import check_artifact, ptxas_path
from cubecl_server.backend import Artifact, CompiledKernel

__all__ = ["pytest_cubecl_validate_artifact", "pytest_report_header"]


@pytest.hookimpl(optionalhook=True)
def pytest_cubecl_validate_artifact(backend: str, artifact: Artifact,
                                    compiled: CompiledKernel) -> str | None:
    """The conformance suite's artifact check for ``cuda``: the PTX must assemble."""
    if backend != "cuda" or ptxas_path() is None:
        return None
    result = check_artifact(artifact)
    if result.ok:
        return None
    return f"ptxas rejects {compiled.name} ({artifact.header.get('arch')}):\n{result.output}"


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Which ptxas checks the PTX (or that none does)."""
    tool = ptxas_path()
    return [f"cubecl-cuda: PTX checked by {tool}" if tool
            else "cubecl-cuda: no ptxas found, PTX not checked"]
