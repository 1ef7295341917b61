"""The artifact: what a backend's finalize makes, the store keeps and a device loads.

A module of its own so that the store and the contracts both import it, and neither
imports the other.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from cubecl_server.errors import ArtifactRejected
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

    @classmethod
    def sealed(cls, kind: str, payload: bytes, header: dict[str, HeaderValue]) -> Artifact:
        """An artifact of ``kind`` whose header also records its payload's SHA-256
        (``sha256``), for :meth:`opened` to check at load: a driver may accept some
        damaged binaries and fail later, or crash, so a load checks the bytes first."""
        return cls(kind, payload, {**header, "sha256": hashlib.sha256(payload).hexdigest()})

    def opened(self, kind: str) -> dict[str, HeaderValue]:
        """The header of this artifact, once it is of ``kind`` and its payload is the one
        :meth:`sealed` recorded; ``ArtifactRejected`` otherwise (the loader then purges
        it and compiles again)."""
        if self.kind != kind:
            raise ArtifactRejected(f"not a {kind} artifact (kind {self.kind!r})")
        if self.header.get("sha256") != hashlib.sha256(self.payload).hexdigest():
            raise ArtifactRejected(f"the {kind} artifact's bytes do not match the SHA-256 "
                                   "its header records")
        return self.header
