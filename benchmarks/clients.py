"""Clients for the benchmarks: a fresh one per figure, compile-only where there is no device."""

from __future__ import annotations

from cubecl_server.client import ComputeClient, create_client

__all__ = ["make_client"]


def make_client(backend: str, compile_only: bool = False) -> ComputeClient:
    """A new client of ``backend``, not shared with the one ``cubecl_server.client()`` gives.

    ``compile_only``: the backend has no device here, so the client's server is the one
    its plugin provides for compiling without a device (cuda): everything up to
    finalize and the store runs, loads only check the artifact.
    """
    return create_client(backend, compile_only=compile_only)
