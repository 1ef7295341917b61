"""The public surface for backend authors, first tier: the names every backend uses.

A backend's package imports the core from here, from the second tiers below
(:mod:`cubecl_server.backend.compiling`, :mod:`~cubecl_server.backend.lowering`,
:mod:`~cubecl_server.backend.features`, :mod:`~cubecl_server.backend.support`) and from
:mod:`cubecl_server.ir` only (its conformance hooks module also from
:mod:`cubecl_server.conformance`); ``tests/architecture/test_public_surface.py`` fails on any other
import. Each name has one import path: the tier ``cubecl_server/backend/_tiers.py``
puts it in. What each name is for: ``docs/writing-a-backend.md``; the hooks:
``docs/hooks.md``.

Each name is imported from its module the first time it is asked for, so a plugin
that imports ``hookimpl`` and ``BackendDescriptor`` at discovery pays for those two
and not for the compile path, the lowering or the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cubecl_server.backend._tiers import lazy

if TYPE_CHECKING:
    from cubecl_server.compiler.artifact import Artifact
    from cubecl_server.compiler.contracts import ArtifactCompiler, CompilationTarget, Compiler
    from cubecl_server.device import Capabilities, DeviceInfo, DeviceKind
    from cubecl_server.errors import BackendUnavailable, CompilationError
    from cubecl_server.kernel import CompiledKernel, CubeCount, CubeDim
    from cubecl_server.plugins.descriptor import BackendDescriptor, Runtime
    from cubecl_server.plugins.hookspecs import hookimpl
    from cubecl_server.runtime import backend_descriptor
    from cubecl_server.server import Binding, ComputeServer
    from cubecl_server.storage import ComputeStorage, ResourceStorage

# The table in _tiers says the same (tests/architecture/test_public_surface.py checks it).
__all__ = [
    "BackendDescriptor", "Runtime", "hookimpl", "backend_descriptor", "Binding",
    "ComputeServer", "ComputeStorage", "ResourceStorage", "ArtifactCompiler",
    "CompilationTarget", "Compiler", "Artifact", "CompiledKernel", "CubeCount", "CubeDim",
    "Capabilities", "DeviceInfo", "DeviceKind", "BackendUnavailable", "CompilationError"
]

__getattr__, __dir__ = lazy(__name__)
