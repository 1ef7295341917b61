"""Plugins: the hooks, the descriptor a backend registers, and the registry that
discovers them.

Importing this package discovers nothing; the first lookup on ``registry()`` does.
See ``docs/hooks.md`` for every hook, the precedence rule and the ``CUBECL_*``
variables that choose which plugins load. A backend imports ``hookimpl`` and
``BackendDescriptor`` from :mod:`cubecl_server.backend`.
"""

from cubecl_server.plugins.registry import (
    BackendStatus,
    BrokenPlugin,
    PluginRegistry,
    registry,
    reset_registry,
)

__all__ = ["BackendStatus", "BrokenPlugin", "PluginRegistry", "registry", "reset_registry"]
