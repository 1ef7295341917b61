"""The Runtime contract, the descriptor a plugin registers, and ``client()``."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from cubecl_server.client import ComputeClient
from cubecl_server.compiler.key import build_id_hash
from cubecl_server.compiler.loader import KernelLoader
from cubecl_server.compiler.record import CompilationBatchRecord, CompilationRecord, Recorder
from cubecl_server.compiler.store import StoreNames, environment_database
from cubecl_server.config import config
from cubecl_server.device import DeviceInfo
from cubecl_server.errors import BackendUnavailable, PluginError, StoreError
from cubecl_server.logging import configure_logging, logger
from cubecl_server.memory_management import MemoryManagement
from cubecl_server.persistence import environment
from cubecl_server.persistence.sqlite import SqliteStore
from cubecl_server.plugins.registry import registry
from cubecl_server.server import ComputeServer

__all__ = [
    "Runtime", "BackendDescriptor", "EnvironmentRecorder", "client", "create_client",
    "recording",
]

log = logger("runtime")


class Runtime(Protocol):
    """A backend's entry to its devices: lists them and creates a server for one."""

    name: str

    def devices(self) -> list[DeviceInfo]:
        """Every device this runtime can use here.

        Raise ``BackendUnavailable`` with the reason (no driver, no device) when
        there is none; an empty list means the same without a reason.
        """
        ...

    def create_server(self, device: int) -> ComputeServer:
        """A server for ``devices()[device]``."""
        ...


@dataclass(frozen=True)
class BackendDescriptor:
    """What a plugin hands the core for one backend it provides.

    ``runtime`` is called lazily, the first time a client of this backend is
    created, so listing backends never touches a device driver it need not.
    ``package`` is the import package whose source files (with the distribution's
    version) make up the backend's half of the build id.
    """

    name: str
    runtime: Callable[[], Runtime]
    store_names: StoreNames
    package: str


class EnvironmentRecorder:
    """Keeps compilation records in the environment's database and hands them to the
    observer hooks; what a client records with when recording is on."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep

    def record(self, record: CompilationRecord) -> None:
        """Keep one kernel's record and broadcast it."""
        if self.keep:
            db = _environment_db()
            if db is not None:
                try:
                    db.add_record(record.backend, record.kernel, record.variant,
                                  record.outcome.value, json.dumps(record.to_dict()))
                except StoreError as e:
                    log.warning("compilation record not kept: %s", e)
        _observe("cubecl_server_compilation_record", record)

    def record_batch(self, batch: CompilationBatchRecord) -> None:
        """Broadcast a batch's record (its kernels' records are already kept)."""
        _observe("cubecl_server_compilation_batch_record", batch)


def _observe(hook: str, record: CompilationRecord | CompilationBatchRecord) -> None:
    # Observers watch a kernel that is already loaded: one that raises must not fail
    # the launch that asked for it (its outputs would be tainted for nothing).
    try:
        getattr(registry().hook, hook)(record=record)
    except Exception as e:
        log.warning("a plugin's %s hook raised %s: %s; ignored, the kernels it was "
                    "told of are loaded", hook, type(e).__name__, e)


def _environment_db() -> SqliteStore | None:
    return environment.open_store(environment_database())


def _recorder() -> Recorder | None:
    keep = config().compilation_record
    hooks = registry().hook
    observed = bool(hooks.cubecl_server_compilation_record.get_hookimpls()
                    or hooks.cubecl_server_compilation_batch_record.get_hookimpls())
    return EnvironmentRecorder(keep) if keep or observed else None


_clients: dict[tuple[str, int], ComputeClient] = {}
_clients_lock = threading.Lock()


def client(backend: str | None = None, device: int | None = None) -> ComputeClient:
    """The client for one device of one backend, created on first use and shared.

    ``backend`` defaults to ``CUBECL_BACKEND`` (or ``backend`` in ``cubecl.toml``),
    then ``"cpu"``; ``device`` to the backend's first device.
    """
    name = backend or config().backend
    index = 0 if device is None else device
    with _clients_lock:
        existing = _clients.get((name, index))
        if existing is not None:
            return existing
        made = _clients[(name, index)] = create_client(name, index)
        return made


def create_client(backend: str | None = None, device: int | None = None, *,
                  compile_only: bool = False) -> ComputeClient:
    """A new client, with its own server and loader, not shared with :func:`client`'s.

    ``compile_only`` asks the backend for a server that compiles without a device
    (``cubecl_server_compile_only_server``): its kernels go through the whole compile
    path and the store, but it cannot hold memory or launch.
    """
    configure_logging()
    name = backend or config().backend
    index = 0 if device is None else device
    reg = registry()
    desc = reg.descriptor(name)
    if compile_only:
        server = reg.call_firstresult("cubecl_server_compile_only_server", backend=name)
        if server is None:
            raise BackendUnavailable(f"backend {name!r} has no compile-only mode")
    else:
        server = desc.runtime().create_server(index)
    compiler = reg.call_firstresult("cubecl_server_compiler", backend=name)
    if compiler is None:
        raise PluginError(f"no plugin provides a Compiler for backend {name!r}")
    artifact_compiler = reg.call_firstresult("cubecl_server_artifact_compiler", backend=name,
                                             compiler=compiler, server=server)
    if artifact_compiler is None:
        raise PluginError(f"no plugin provides an ArtifactCompiler for backend {name!r}")
    target = reg.call_firstresult("cubecl_server_compilation_target", backend=name,
                                  server=server, store_names=desc.store_names,
                                  variant=artifact_compiler.variant)
    if target is None:
        raise PluginError(f"no plugin provides a CompilationTarget for backend {name!r}")
    loader = KernelLoader(name, artifact_compiler, target, build_id_hash(desc.package),
                          _recorder())
    return ComputeClient(server, MemoryManagement(server.storage), loader,
                         config().execution_mode)


class _Collecting(EnvironmentRecorder):
    def __init__(self, records: list[CompilationRecord]) -> None:
        super().__init__(keep=True)
        self.records = records

    def record(self, record: CompilationRecord) -> None:
        super().record(record)
        self.records.append(record)


@contextmanager
def recording(c: ComputeClient) -> Iterator[list[CompilationRecord]]:
    """Record every compilation ``c`` makes inside the block, whatever the config says:
    kept in the environment's database, broadcast, and collected in the list yielded."""
    records: list[CompilationRecord] = []
    before = c.loader.recorder
    c.loader.recorder = _Collecting(records)
    try:
        yield records
    finally:
        c.loader.recorder = before
