"""The namespaces of a backend's artifacts: what the artifact store writes and a bundle
reads, named in one place both import cheaply."""

from __future__ import annotations

__all__ = ["artifact_prefix"]


def artifact_prefix(backend: str, version: str, variant: str) -> str:
    """What the namespaces of a backend's artifacts for one variant start with (the
    artifact store's, :class:`cubecl_server.compiler.store.ArtifactStore`)."""
    return f"{backend}/{version}/{variant.replace('/', '_')}/"
