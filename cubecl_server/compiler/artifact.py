"""The artifact: what a backend's finalize makes, the store keeps and a device loads.

A module of its own so that the store and the contracts both import it, and neither
imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cubecl_server.persistence.codec import HeaderValue

__all__ = ["Artifact"]


@dataclass(frozen=True)
class Artifact:
    """What a device loads: the finalized bytes and a small JSON-typed header.

    ``kind`` names the format (``"py-code"``, ``"cl-binary"``, ``"spirv"``...);
    ``header`` carries what load needs besides the bytes (entry point, binding
    layout), JSON values only (str, int, float, bool, None, and lists and
    string-keyed dicts of them). This is all the store keeps: no pickle, no live
    objects.
    """

    kind: str
    payload: bytes
    header: dict[str, HeaderValue] = field(default_factory=dict)
