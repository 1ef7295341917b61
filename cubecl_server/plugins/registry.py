"""The process-wide plugin registry: lazy discovery, broken plugins kept apart, precedence.

Nothing is imported or discovered when ``cubecl_server`` is imported; the first
lookup (``backends()``, ``descriptor()``, ``hook``, ``broken()``,
``call_firstresult()``) loads the built-in backends and every allowed entry point
of the group ``cubecl_server``, each in isolation: one that fails to import, to
register with pluggy or to hand over its backends is listed as broken and the
others work as if it were not installed.

Precedence (for ``firstresult`` hooks and for a backend name two plugins provide):
external plugins before built-in ones, and among external plugins in order of
entry-point name; last, the core's answers from each backend's descriptor
(:mod:`cubecl_server.plugins.owner`). It is realised as pluggy's own call order
(the core's answers are registered first and ``trylast``, then the built-ins, then
external plugins in reverse name order, and pluggy calls the last registered
first), so ``registry().hook.<name>(...)`` and ``call_firstresult`` agree. A
``tryfirst``/``trylast`` hookimpl option moves that implementation as pluggy
documents.
"""

from __future__ import annotations

import inspect
import os
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from importlib import import_module
from typing import Any, Literal

import pluggy

import cubecl_server
from cubecl_server.device import Capabilities
from cubecl_server.errors import BackendNotFound, BackendUnavailable, PluginError
from cubecl_server.logging import logger
from cubecl_server.plugins import hookspecs, owner
from cubecl_server.plugins.descriptor import CONTRACT_VERSION, BackendDescriptor

__all__ = [
    "BUILTIN_PLUGINS", "ENV_ALLOW", "ENV_BLOCK", "ENV_STRICT", "OWNER_PLUGIN",
    "BackendStatus", "BrokenPlugin", "PluginRegistry", "registry", "reset_registry",
]

log = logger("plugins")

BUILTIN_PLUGINS: tuple[str, ...] = ("cubecl_server.backends.cpu.plugin",)
"""Import paths of the core's own plugin modules, registered whatever the env says."""

ENV_ALLOW = "CUBECL_PLUGINS"
"""Comma-separated entry-point names to load (unset: all; empty: no external plugin)."""

ENV_BLOCK = "CUBECL_DISABLE_PLUGINS"
"""Comma-separated entry-point names never to load."""

ENV_STRICT = "CUBECL_STRICT_PLUGINS"
"""When true (``1``, ``true``, ``yes``, ``on``), a broken plugin fails discovery."""

OWNER_PLUGIN = "cubecl_server.plugins.owner"
"""The name the core's answers from backend descriptors are registered under."""

_BUILTIN_DISTRIBUTION = "cubecl-server"

_PROBE = Capabilities(f64=False, f16=False, device_present=False)
"""The capabilities ``backends()`` asks each backend's Compiler with, having no device."""


@dataclass(frozen=True)
class BrokenPlugin:
    """A plugin that could not be used, with why: its error and the traceback.

    ``name`` is the entry-point name (the import path for a built-in one);
    ``error`` is the exception's type and message.
    """

    name: str
    distribution: str
    version: str
    error: str
    traceback: str


@dataclass(frozen=True)
class BackendStatus:
    """One row of the backend listing: a backend and whether it can run here.

    ``status`` is ``"ok"`` (``devices`` lists them), ``"unavailable"`` (installed,
    but its runtime reports no device or fails; ``reason`` says why),
    ``"incompatible"`` (built for another backend contract version; ``reason`` says
    which, and what to install) or ``"broken"`` (a broken plugin: ``name`` is the
    plugin's, ``reason`` its error).
    """

    name: str
    distribution: str
    version: str
    status: Literal["ok", "broken", "unavailable", "incompatible"]
    reason: str = ""
    devices: list[str] = field(default_factory=list)


@dataclass(frozen=True, eq=False)
class _Origin:
    """Where a registered plugin comes from.

    ``about`` gives its distribution's name and version. For an entry point that is
    a parse of the distribution's metadata, which a launch does not need: it is done
    the first time they are shown (a broken plugin, the backend listing).
    """

    name: str
    about: Callable[[], tuple[str, str]]

    @cached_property
    def _about(self) -> tuple[str, str]:
        return self.about()

    @property
    def distribution(self) -> str:
        """The name of the distribution that installed the plugin."""
        return self._about[0]

    @property
    def version(self) -> str:
        """That distribution's version."""
        return self._about[1]

    def __str__(self) -> str:
        return f"{self.name!r} ({self.distribution} {self.version})"


@dataclass
class _Discovery:
    """Everything one discovery found; published whole, so a lookup never sees half."""

    pm: pluggy.PluginManager
    origins: dict[str, _Origin] = field(default_factory=dict)
    descriptors: dict[str, tuple[BackendDescriptor, _Origin]] = field(default_factory=dict)
    broken: list[BrokenPlugin] = field(default_factory=list)
    incompatible: dict[str, tuple[str, _Origin]] = field(default_factory=dict)
    """Backends built for another contract version: why, and whose they are."""

    def mark_broken(self, origin: _Origin, exc: BaseException) -> None:
        self.broken.append(BrokenPlugin(
            origin.name, origin.distribution, origin.version,
            _describe(exc), "".join(traceback.format_exception(exc)),
        ))


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _env_names(value: str) -> set[str]:
    return {name.strip() for name in value.split(",") if name.strip()}


def _env_true(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


class PluginRegistry:
    """The plugins and backends of one process, discovered on first use.

    Use the process-wide one, ``registry()``. ``group`` and ``builtins`` are the
    entry-point group and the built-in plugin modules to load; their defaults are
    the core's.
    """

    def __init__(self, *, group: str = hookspecs.PROJECT,
                 builtins: Sequence[str] = BUILTIN_PLUGINS) -> None:
        self._group = group
        self._builtins = tuple(builtins)
        # Reentrant so that a plugin looking plugins up while it is being imported
        # gets an error (and is set apart as broken) instead of a deadlock.
        self._lock = threading.RLock()
        self._discovering = False
        self._found: _Discovery | None = None

    @property
    def hook(self) -> pluggy.HookRelay:
        """The pluggy hook relay, for calling the broadcast (observer) hooks."""
        return self._discovered().pm.hook

    def backends(self) -> list[BackendStatus]:
        """Every known backend with its status, by name, then one row per ``broken()`` entry.

        This calls each backend's runtime factory and its ``devices()``; it is the
        only lookup that touches device drivers.
        """
        found = self._discovered()
        for name in sorted(found.descriptors):
            entry = found.descriptors.get(name)
            if entry is None:  # its plugin was set apart by an earlier backend's probe
                continue
            # A plugin that breaks in the compile path is found out here, without a
            # device, rather than by the first user of some backend.
            try:
                self.call_firstresult("cubecl_server_compiler", descriptor=entry[0],
                                      capabilities=_PROBE)
            except BackendUnavailable:
                pass
            except PluginError:
                # The plugin at fault is set apart and listed below; strict mode stops.
                if _env_true(os.environ.get(ENV_STRICT, "")):
                    raise
        rows = [_status(descriptor, origin)
                for _, (descriptor, origin) in sorted(found.descriptors.items())]
        rows += [BackendStatus(name, origin.distribution, origin.version, "incompatible",
                               reason) for name, (reason, origin)
                 in sorted(found.incompatible.items())]
        rows.extend(BackendStatus(b.name, b.distribution, b.version, "broken", b.error)
                    for b in found.broken)
        return rows

    def descriptor(self, name: str) -> BackendDescriptor:
        """The descriptor of the backend ``name``; ``BackendNotFound`` says what exists."""
        found = self._discovered()
        entry = found.descriptors.get(name)
        if entry is not None:
            return entry[0]
        if name in found.incompatible:
            raise BackendUnavailable(f"backend {name!r} is incompatible: "
                                     f"{found.incompatible[name][0]}")
        available = ", ".join(sorted(found.descriptors)) or "none"
        message = f"no backend {name!r}; available: {available}"
        if found.broken:
            message += "; broken plugins: " + "; ".join(
                f"{b.name} ({b.error})" for b in found.broken)
        raise BackendNotFound(message)

    def broken(self) -> list[BrokenPlugin]:
        """The plugins discovery could not use, in the order it met them."""
        return list(self._discovered().broken)

    def call_firstresult(self, hook_name: str, **kwargs: Any) -> Any:
        """Call a ``firstresult`` hook through pluggy, in precedence order.

        Returns the first result that is not None, or None. A plugin whose
        implementation raises is broken: it is set apart (listed by ``broken()``
        with its traceback, its backends gone, one warning) and the call goes on
        without it, so one bad plugin never takes the others' backends down. When a
        descriptor's factory raises (the core's answer, last), the plugin that
        registered the descriptor is set apart and ``PluginError`` names it: the
        backend has nothing to fall back on. Under ``CUBECL_STRICT_PLUGINS`` it
        raises ``PluginError`` naming the plugin, with the traceback, instead.
        ``BackendUnavailable`` passes through as it is, being the contract's way to
        say "cannot run here".
        """
        found = self._discovered()
        caller: pluggy.HookCaller | None = getattr(found.pm.hook, hook_name, None)
        if caller is None or caller.spec is None or not caller.spec.opts.get("firstresult"):
            raise ValueError(f"{hook_name!r} is not a firstresult hook of {hookspecs.PROJECT}")
        missing = [name for name in caller.spec.argnames if name not in kwargs]
        if missing:
            raise TypeError(f"{hook_name}() missing arguments: {', '.join(missing)}")
        while True:
            try:
                return caller(**kwargs)
            except BackendUnavailable:
                raise
            except Exception as exc:
                culprit = _culprit(exc, caller)
                if culprit is None:
                    raise
                if culprit != OWNER_PLUGIN:
                    self._set_apart(found, culprit, hook_name, exc)
                    continue
                descriptor: BackendDescriptor = kwargs["descriptor"]
                entry = found.descriptors.get(descriptor.name)
                at_fault = ""
                if entry is not None and entry[0] is descriptor:
                    at_fault = f"; plugin {entry[1]} is set apart"
                    self._set_apart(found, entry[1].name, hook_name, exc)
                raise PluginError(f"backend {descriptor.name!r} failed in {hook_name}: "
                                  f"{_describe(exc)}{at_fault}") from exc

    def _set_apart(self, found: _Discovery, plugin: str, hook_name: str,
                   exc: Exception) -> None:
        """Unregister a plugin that raised in a hook and list it as broken."""
        with self._lock:
            origin = found.origins.pop(plugin, None)
            if origin is None:  # another thread set it apart first
                return
            found.pm.unregister(name=plugin)
            for name in [n for n, (_, o) in found.descriptors.items() if o is origin]:
                del found.descriptors[name]
            failure = PluginError(f"failed in {hook_name}: {_describe(exc)}")
            failure.__cause__ = exc
            found.mark_broken(origin, failure)
            broken = found.broken[-1]
        if _env_true(os.environ.get(ENV_STRICT, "")):
            raise PluginError(f"plugin {origin} is broken ({ENV_STRICT} is set): "
                              f"{broken.error}\n{broken.traceback}") from exc
        log.warning("cubecl-server plugin %s is broken and set apart: %s", origin,
                    broken.error)

    def _discovered(self) -> _Discovery:
        found = self._found
        if found is not None:
            return found
        with self._lock:
            if self._found is None:
                if self._discovering:
                    raise PluginError("a plugin looked up plugins while they were being discovered")
                self._discovering = True
                try:
                    self._found = self._discover()
                finally:
                    self._discovering = False
            return self._found

    def _discover(self) -> _Discovery:
        # Imported here, not at module level, so `import cubecl_server` stays cheap
        # and touches no installed distribution.
        from importlib import metadata

        found = _Discovery(pluggy.PluginManager(hookspecs.PROJECT))
        found.pm.add_hookspecs(hookspecs)
        # First, so that among trylast implementations too the owners answer last.
        found.pm.register(owner, name=OWNER_PLUGIN)

        for path in self._builtins:
            origin = _Origin(path, _builtin_about)
            try:
                module = import_module(path)
            except Exception as exc:
                found.mark_broken(origin, exc)
                continue
            _register(found, module, origin)

        allow_env = os.environ.get(ENV_ALLOW)
        allow = None if allow_env is None else _env_names(allow_env)
        block = _env_names(os.environ.get(ENV_BLOCK, ""))
        points = sorted(metadata.entry_points(group=self._group), key=lambda ep: ep.name)
        if allow:
            unknown = allow - {ep.name for ep in points}
            if unknown:
                log.warning("%s names plugins that are not installed: %s",
                               ENV_ALLOW, ", ".join(sorted(unknown)))
        loaded: list[tuple[object, _Origin]] = []
        for ep in points:
            if (allow is not None and ep.name not in allow) or ep.name in block:
                continue
            origin = _Origin(ep.name, _about(ep.dist))
            try:
                loaded.append((ep.load(), origin))
            except Exception as exc:
                found.mark_broken(origin, exc)
        # pluggy calls the last registered first: registering in reverse name order
        # makes the first entry-point name the first called.
        for plugin, origin in reversed(loaded):
            _register(found, plugin, origin)

        _collect_backends(found)

        if found.broken and _env_true(os.environ.get(ENV_STRICT, "")):
            raise PluginError(f"broken plugins ({ENV_STRICT} is set):\n" + "\n".join(
                f"{b.name} ({b.distribution} {b.version}): {b.error}\n{b.traceback}"
                for b in found.broken))
        for b in found.broken:
            log.warning("cubecl-server plugin %r (%s %s) is broken: %s",
                           b.name, b.distribution, b.version, b.error)
        return found


def _builtin_about() -> tuple[str, str]:
    """The distribution of the built-in plugins: the core's."""
    return _BUILTIN_DISTRIBUTION, cubecl_server.__version__


def _about(dist: Any) -> Callable[[], tuple[str, str]]:
    """What reads the name and version of an entry point's distribution (an
    ``importlib.metadata.Distribution``, or None for an entry point without one)."""
    def read() -> tuple[str, str]:
        return (dist.name, dist.version) if dist is not None else ("?", "?")
    return read


def _culprit(exc: BaseException, caller: pluggy.HookCaller) -> str | None:
    """The name of the plugin whose implementation of ``caller`` raised ``exc``: the
    outermost frame of its traceback that runs one of the implementations."""
    impls = {inspect.unwrap(impl.function).__code__: impl.plugin_name
             for impl in caller.get_hookimpls()}
    tb = exc.__traceback__
    while tb is not None:
        name = impls.get(tb.tb_frame.f_code)
        if name is not None:
            return name
        tb = tb.tb_next
    return None


def _register(found: _Discovery, plugin: object, origin: _Origin) -> None:
    """Register one plugin with pluggy, or mark it broken if pluggy refuses it or it
    implements a hook that does not exist (a misspelt name would otherwise be
    silently never called)."""
    try:
        found.pm.register(plugin, name=origin.name)
    except Exception as exc:
        found.mark_broken(origin, exc)
        return
    unknown = [caller.name for caller in found.pm.get_hookcallers(plugin) or []
               if not caller.has_spec()
               and not any(impl.optionalhook for impl in caller.get_hookimpls()
                           if impl.plugin is plugin)]
    if unknown:
        found.pm.unregister(plugin)
        found.mark_broken(origin, PluginError(
            f"implements hooks that do not exist: {', '.join(sorted(unknown))}"))
        return
    found.origins[origin.name] = origin


def _collect_backends(found: _Discovery) -> None:
    """Ask each plugin on its own for its backends, in precedence order, so one that
    raises is set apart without costing the others theirs."""
    caller = found.pm.hook.cubecl_server_register_backends
    for impl in reversed(caller.get_hookimpls()):
        origin = found.origins[impl.plugin_name]
        try:
            descriptors = impl.function()
            if not isinstance(descriptors, (list, tuple)) or not all(
                    isinstance(d, BackendDescriptor) for d in descriptors):
                raise PluginError(
                    f"cubecl_server_register_backends returned {descriptors!r}, "
                    "not a list of BackendDescriptor")
        except Exception as exc:
            found.pm.unregister(name=impl.plugin_name)
            del found.origins[impl.plugin_name]
            found.mark_broken(origin, exc)
            continue
        for descriptor in descriptors:
            if descriptor.contract != CONTRACT_VERSION:
                found.incompatible[descriptor.name] = (_incompatibility(descriptor, origin),
                                                       origin)
                continue
            taken = found.descriptors.get(descriptor.name)
            if taken is not None:
                found.mark_broken(origin, PluginError(
                    f"backend {descriptor.name!r} already provided by plugin {taken[1]}"))
                continue
            found.descriptors[descriptor.name] = (descriptor, origin)


def _incompatibility(descriptor: BackendDescriptor, origin: _Origin) -> str:
    """Why a backend built for another contract version is not run, and what to do."""
    return (f"built for backend contract {descriptor.contract}, but cubecl-server "
            f"{cubecl_server.__version__} implements contract {CONTRACT_VERSION}: install "
            f"a version of {origin.distribution} built for contract {CONTRACT_VERSION}")


def _status(descriptor: BackendDescriptor, origin: _Origin) -> BackendStatus:
    """Whether a backend can run here, from its runtime's own account of its devices."""
    def row(status: Literal["ok", "unavailable"], reason: str = "",
            devices: list[str] | None = None) -> BackendStatus:
        return BackendStatus(descriptor.name, origin.distribution, origin.version,
                             status, reason, devices or [])

    try:
        devices = descriptor.runtime().devices()
    except BackendUnavailable as exc:
        return row("unavailable", str(exc) or type(exc).__name__)
    except Exception as exc:
        return row("unavailable", _describe(exc))
    if not devices:
        return row("unavailable", "no device found")
    return row("ok", devices=[str(device) for device in devices])


_registry: PluginRegistry | None = None
_registry_lock = threading.Lock()


def registry() -> PluginRegistry:
    """The process-wide plugin registry (created on first call; it discovers on first lookup)."""
    global _registry
    if _registry is not None:
        return _registry
    with _registry_lock:
        if _registry is None:
            _registry = PluginRegistry()
        return _registry


def reset_registry() -> None:
    """Test support: forget the process-wide registry, so the next lookup discovers
    again and reads the ``CUBECL_*`` plugin variables as they are then.

    Plugin modules already imported stay imported (Python caches modules); what
    changes is which of them are registered.
    """
    global _registry
    with _registry_lock:
        _registry = None
