"""The vulkan backend's conformance hooks: every module checked by ``spirv-val``.

Named in the entry-point group ``cubecl_server.conformance``, so they apply wherever
the suite runs against ``vulkan`` (this repository's tests and ``cubecl-server
conformance vulkan``): the run sets ``CUBECL_VULKAN_VALIDATE=1``, so every module the
suite's kernels are finalized into passes ``spirv-val`` or fails its test with the
validator's message; the compile-only tests check each artifact they finalize too.
"""

from __future__ import annotations

import os
import shutil

import pytest

from cubecl_server.backend import Artifact, CompiledKernel

_saved: list[str | None] = []


def pytest_configure(config: pytest.Config) -> None:
    """Validate every module finalized during the run (where spirv-val is installed)."""
    from cubecl_vulkan.artifact import ENV_VALIDATE

    _saved.append(os.environ.get(ENV_VALIDATE))
    if shutil.which("spirv-val"):
        os.environ[ENV_VALIDATE] = "1"


def pytest_unconfigure(config: pytest.Config) -> None:
    """Put the setting back as it was."""
    from cubecl_vulkan.artifact import ENV_VALIDATE

    if _saved:
        before = _saved.pop()
        if before is None:
            os.environ.pop(ENV_VALIDATE, None)
        else:
            os.environ[ENV_VALIDATE] = before


def pytest_cubecl_validate_artifact(backend: str, artifact: Artifact,
                                    compiled: CompiledKernel) -> str | None:
    """What spirv-val finds wrong with the module, if it is installed."""
    from cubecl_vulkan.artifact import validate

    if not shutil.which("spirv-val"):
        return None
    return validate(artifact.payload)
