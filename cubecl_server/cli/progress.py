"""Progress of a command that takes more than a moment: :mod:`cubecl_server.progress`,
where the library's own slow work (autotune) reports too."""

from __future__ import annotations

from cubecl_server.progress import Step, steps

__all__ = ["Step", "steps"]
