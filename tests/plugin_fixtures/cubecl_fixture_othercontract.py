"""Fixture plugin built for another version of the backend contract: its backend must
be listed as incompatible, with the reason, and no client of it ever made."""

from __future__ import annotations

from typing import Any

from cubecl_server.backend import BackendDescriptor, hookimpl


def _never(*parts: Any) -> Any:
    raise AssertionError("an incompatible backend's parts were asked for")


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    return [BackendDescriptor(contract=2, name="othercontract", package=__name__,
                              runtime=_never, compiler=_never, artifact_compiler=_never,
                              target=_never)]
