"""The pytest hooks a backend may implement for the conformance suite.

Both are optional. A backend implements them in a module of its distribution named in
the entry-point group ``cubecl_server.conformance`` under the backend's name
(``example = "cubecl_example.conformance"``): the suite's plugin loads that module
whenever it runs against the backend, from the backend's own test run or from
``cubecl-server conformance NAME``. (A ``conftest.py`` may implement them too, but only
runs that collect it see them.) The specifications are added to pytest with the
suite's plugin, so every implementation is checked against these signatures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from cubecl_server.compiler.contracts import Artifact
    from cubecl_server.kernel import CompiledKernel

__all__ = ["pytest_cubecl_expected_failures", "pytest_cubecl_validate_artifact"]


@pytest.hookspec
def pytest_cubecl_expected_failures(config: pytest.Config,
                                    backend: str) -> Mapping[str, str] | None:
    """The suite's tests expected to fail on ``backend``, each with the reason.

    Keys are suite test ids relative to the suite (``test_language.py::TestBinary::
    test_op[add-f16]``), a prefix of one ending before ``::`` or ``[`` (a whole class
    or every parameter of a test), or a glob (``*f16*``). Each listed test is marked
    ``xfail(strict=True)``: if it passes, the run fails, so the list cannot go stale.
    Every implementation is called; their mappings are merged.
    """


@pytest.hookspec
def pytest_cubecl_validate_artifact(backend: str, artifact: Artifact,
                                    compiled: CompiledKernel) -> str | None:
    """Check a freshly finalized artifact as far as the host can (``ptxas`` on PTX,
    ``spirv-val`` on SPIR-V); return a description of what is wrong, or None.

    Called by the compile-only tests for every artifact they finalize, on machines
    with and without the device.
    """
