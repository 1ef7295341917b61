"""The tiers of the backend surface: which names each tier module exports, and where
each name lives.

This table is the one source: every tier module takes its ``__all__`` and its lazy
attributes from it, ``docs/writing-a-backend.md`` prints it (section 2, checked by
``tests/architecture/test_public_surface.py``), and each name belongs to exactly one tier.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cubecl_server.plugins.lazy import lazy_attributes

TIERS: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {
    "cubecl_server.backend": (
        "the first tier: registering a backend, the contracts, the values they pass, "
        "and the errors a backend raises", {
            "cubecl_server.plugins.descriptor": ("BackendDescriptor", "Runtime"),
            "cubecl_server.plugins.hookspecs": ("hookimpl",),
            "cubecl_server.runtime": ("backend_descriptor",),
            "cubecl_server.server": ("Binding", "ComputeServer"),
            "cubecl_server.storage": ("ComputeStorage", "ResourceStorage"),
            "cubecl_server.compiler.contracts": ("ArtifactCompiler", "CompilationTarget",
                                                 "Compiler"),
            "cubecl_server.compiler.artifact": ("Artifact",),
            "cubecl_server.kernel": ("CompiledKernel", "CubeCount", "CubeDim"),
            "cubecl_server.device": ("Capabilities", "DeviceInfo", "DeviceKind"),
            "cubecl_server.errors": ("BackendUnavailable", "CompilationError"),
        }),
    "cubecl_server.backend.compiling": (
        "the compile path past the contracts: the mode and recording a compile is "
        "handed, the store, an ArtifactCompiler's common half, reusing another "
        "backend's Compiler", {
            "cubecl_server.execution": ("ExecutionMode",),
            "cubecl_server.compiler.record": ("CompilationRecording",),
            "cubecl_server.compiler.store": ("ArtifactStore", "StoreNames",
                                             "compilation_store"),
            "cubecl_server.compiler.key": ("KernelCacheKey",),
            "cubecl_server.compiler.contracts": ("LoweringArtifactCompiler",),
            "cubecl_server.runtime": ("backend_compiler",),
        }),
    "cubecl_server.backend.lowering": (
        "the shared lowering: the emitter skeleton, the C-family emitter and its "
        "dialects, Native and the passes, the info words of a launch, a print's "
        "printf format", {
            "cubecl_server.lowering": ("ALL_BUILTINS", "UNSIGNED", "ArrayRef", "CDialect",
                                       "CEmitter", "InfoEntry", "InfoLayout", "InfoWords",
                                       "Native", "StandardC", "StructuredEmitter",
                                       "fold_count", "lower", "metadata_kind",
                                       "printf_format"),
        }),
    "cubecl_server.backend.features": (
        "what a server may implement besides the contract: events, fills and copies, "
        "timers, tensor maps, driver caches, an info-word cache, the caller's arrays "
        "used in place", {
            "cubecl_server.device_events": ("CompletedEvent", "DeviceEvent", "EventServer"),
            "cubecl_server.command": ("FillCopy",),
            "cubecl_server.server": ("DeviceTimer",),
            "cubecl_server.compiler.store": ("DriverCache",),
            "cubecl_server.metadata_cache": ("MetadataCache",),
            "cubecl_server.tma": ("TENSOR_MAP_BYTES", "BoundTensorMap", "TensorMap",
                                  "TensorMapError", "TmaFill", "TmaInterleave",
                                  "TmaSwizzle"),
            "cubecl_server.arrays": ("HostMemoryServer", "CudaArray", "CudaArrayServer"),
        }),
    "cubecl_server.backend.support": (
        "helpers for devices, storage ids, drivers and a plugin's lazy names, the "
        "contract version, and the errors a backend rarely raises itself", {
            "cubecl_server.device": ("MAX_UNITS",),
            "cubecl_server.storage": ("BytesStorage", "StorageId", "storage_id_type"),
            "cubecl_server.plugins.lazy": ("lazy_attributes",),
            "cubecl_server.plugins.descriptor": ("CONTRACT_VERSION",),
            "cubecl_server.driver": ("DriverError", "code_names", "driver_error"),
            "cubecl_server.errors": ("ArtifactRejected", "CubeclError", "LaunchError"),
        }),
}
"""Each tier module: what it is for, and its names by the module each lives in."""


def homes(tier: str) -> dict[str, str]:
    """Each name ``tier`` exports, with the module it lives in."""
    return {name: module for module, names in TIERS[tier][1].items() for name in names}


def exports(tier: str) -> list[str]:
    """The names ``tier`` exports (its ``__all__``), in table order."""
    return list(homes(tier))


def lazy(tier: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the tier module ``tier``: each name is
    imported from its home the first time it is asked for, so a plugin that imports
    ``hookimpl`` and ``BackendDescriptor`` at discovery pays for those two only; a name
    of another tier says which."""
    getattr_, _ = lazy_attributes(tier, homes(tier))

    def __getattr__(name: str) -> Any:
        try:
            return getattr_(name)
        except AttributeError:
            elsewhere = [t for t in TIERS if name in homes(t)]
            if not elsewhere:
                raise
            raise AttributeError(f"module {tier!r} has no attribute {name!r}; it is in "
                                 f"{elsewhere[0]}") from None

    return __getattr__, lambda: sorted(homes(tier))


def guide_table() -> str:
    """The tiers as the Markdown table ``docs/writing-a-backend.md`` holds."""
    rows = ["| import from | what it holds | names |", "|---|---|---|"]
    for tier, (what, _) in TIERS.items():
        names = ", ".join(f"`{n}`" for n in sorted(exports(tier), key=str.lower))
        rows.append(f"| `{tier}` | {what} | {names} |")
    return "\n".join(rows)
