"""The lowering every backend shares, from the IR to a target language's source.

- :mod:`~cubecl_server.lowering.passes`: what the IR means, once - IR-to-IR passes
  taking a kernel to the core IR for a target described by a :class:`Native`
  (:func:`lower` runs them; every emitter below does, first).
- :class:`StructuredEmitter`: the skeleton (naming, temporaries, nesting, dispatch
  over the core IR's node types, helper collection); the cpu backend's NumPy emitter,
  the vulkan backend's SPIR-V emitter and :class:`CEmitter` build on it.
- :class:`CEmitter`: the lowering of C-like languages, spelled by a :class:`CDialect`;
  :class:`StandardC` spells every hook as C99 does, for a dialect to subclass (the
  OpenCL C and CUDA C++ backends and the C example are dialects).
- :class:`InfoLayout`: the words a launch passes besides its arrays (scalars, lengths,
  shapes, strides, the cube count), and :func:`fold_count` for a cube count past a
  per-axis dispatch limit.
- :func:`printf_format`: a ``DebugPrint`` as C's ``printf`` takes it, for the targets
  that print through one.

Backend authors import these from :mod:`cubecl_server.backend.lowering`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cubecl_server.lowering.info import InfoEntry, InfoLayout, InfoWords, fold_count
from cubecl_server.lowering.passes import ALL_BUILTINS, Native, lower
from cubecl_server.lowering.printf import printf_format
from cubecl_server.lowering.structured import StructuredEmitter, mangle, metadata_kind

if TYPE_CHECKING:
    from cubecl_server.lowering.cfamily import (
        UNSIGNED,
        ArrayRef,
        CDialect,
        CEmitter,
        StandardC,
    )

__all__ = ["StructuredEmitter", "mangle", "CEmitter", "CDialect", "StandardC", "ArrayRef",
           "UNSIGNED", "ALL_BUILTINS", "InfoEntry", "InfoLayout", "InfoWords", "fold_count",
           "Native", "lower", "metadata_kind", "printf_format"]

_CFAMILY = ("CEmitter", "CDialect", "StandardC", "ArrayRef", "UNSIGNED")


def __getattr__(name: str) -> Any:
    # The C-family emitter loads when first asked for: the backends that write no C
    # (the cpu, SPIR-V and LLVM emitters) never pay for it, nor does discovery.
    if name not in _CFAMILY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from cubecl_server.lowering import cfamily

    return getattr(cfamily, name)
