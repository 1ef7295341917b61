"""Plugins: the hooks a backend implements and the registry that discovers them.

Importing this package discovers nothing; the first lookup on ``registry()`` does.
See ``docs/hooks.md`` for every hook, the precedence rule and the ``CUBECL_*``
variables that choose which plugins load.
"""

from cubecl_server.plugins.hookspecs import hookimpl, hookspec
from cubecl_server.plugins.registry import (
    BackendStatus,
    BrokenPlugin,
    PluginRegistry,
    registry,
    reset_registry,
)

__all__ = [
    "hookimpl", "hookspec", "BackendStatus", "BrokenPlugin", "PluginRegistry",
    "registry", "reset_registry",
]
