"""The example backend's conformance hooks: what the suite may expect of it.

Named in the entry-point group ``cubecl_server.conformance``, so they apply wherever
the suite runs against ``example``: this repository's tests and
``cubecl-server conformance example``.
"""

from __future__ import annotations

import pytest

from cubecl_server.backend import Artifact, CompiledKernel


def pytest_cubecl_expected_failures(config: pytest.Config, backend: str) -> dict[str, str]:
    """Tests of the suite this backend is known to fail, with why (none)."""
    return {}


def pytest_cubecl_validate_artifact(backend: str, artifact: Artifact,
                                    compiled: CompiledKernel) -> str | None:
    """Check that a finalized artifact is the source it was lowered to, as text."""
    if artifact.payload != compiled.source.encode():
        return f"{compiled.name}: the artifact is not the generated source"
    return None
