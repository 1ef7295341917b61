"""The backend surface's lowering tier: ``StructuredEmitter`` and the passes it runs
(``Native``, ``lower``), the C-family emitter with its dialects, the info words a
launch passes besides its arrays, and a print's ``printf`` format
(``docs/writing-a-backend.md``, sections 6 and 7)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cubecl_server.backend._tiers import lazy

if TYPE_CHECKING:
    from cubecl_server.lowering import (
        ALL_BUILTINS,
        UNSIGNED,
        ArrayRef,
        CDialect,
        CEmitter,
        InfoEntry,
        InfoLayout,
        InfoWords,
        Native,
        StandardC,
        StructuredEmitter,
        fold_count,
        lower,
        metadata_kind,
        printf_format,
    )

# The table in _tiers says the same (tests/architecture/test_public_surface.py checks it).
__all__ = [
    "ALL_BUILTINS", "UNSIGNED", "ArrayRef", "CDialect", "CEmitter", "InfoEntry", "InfoLayout",
    "InfoWords", "Native", "StandardC", "StructuredEmitter", "fold_count", "lower",
    "metadata_kind", "printf_format"
]

__getattr__, __dir__ = lazy(__name__)
