"""Fixture plugin written before descriptors stated a contract version: it must be
listed as broken, naming the missing field, and cost no other backend anything."""

from __future__ import annotations

from typing import Any

from cubecl_server.backend import BackendDescriptor, hookimpl


def _never(*parts: Any) -> Any:
    raise AssertionError("a broken backend's parts were asked for")


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    return [BackendDescriptor(name="nocontract", package=__name__,  # type: ignore[call-arg]
                              runtime=_never, compiler=_never, artifact_compiler=_never,
                              target=_never)]
