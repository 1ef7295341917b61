"""Program builds in worker processes, for drivers that build one program at a time.

PoCL 3.1 holds a process-wide lock around its compiler, so the loader's threads
building a batch's misses wait for each other however many cores there are. Builds in
separate processes do not: :class:`BuildWorkers` keeps a few worker processes (this
module run as ``python -m cubecl_opencl.build_workers``), each with a context on the
same device, and hands each one a program to build while this process builds another
itself. A worker answers with the program's binary or its build log; the binary is
loaded here like any stored one.

Requests and answers are frames of a JSON header and raw bytes on the worker's stdin
and stdout (no pickle: nothing but source text and binaries cross). A worker that dies
mid-build fails that one kernel's compile with its exit status; the next build starts
a fresh worker, and the rest of the batch is untouched.
"""

from __future__ import annotations

import atexit
import json
import os
import struct
import subprocess
import sys
import threading
from contextlib import nullcontext
from dataclasses import dataclass
from typing import IO, Any

__all__ = ["BuildResult", "BuildWorkers", "WorkerDied", "serve", "workers_for"]

_HEADER = struct.Struct(">I")


@dataclass(frozen=True)
class BuildResult:
    """What a worker made of one program: its binary, or the build log of a failure."""

    binary: bytes | None
    log: str


class WorkerDied(Exception):
    """The worker process ended (crashed, was killed) before it answered."""


def _send(stream: IO[bytes], header: dict[str, Any], payload: bytes = b"") -> None:
    head = json.dumps({**header, "payload": len(payload)}).encode()
    stream.write(_HEADER.pack(len(head)) + head + payload)
    stream.flush()


def _exactly(stream: IO[bytes], n: int) -> bytes:
    data = stream.read(n)
    if data is None or len(data) != n:
        raise EOFError(f"stream ended after {0 if data is None else len(data)} of {n} bytes")
    return data


def _receive(stream: IO[bytes]) -> tuple[dict[str, Any], bytes]:
    (size,) = _HEADER.unpack(_exactly(stream, _HEADER.size))
    header = json.loads(_exactly(stream, size))
    return header, _exactly(stream, header["payload"])


class _Worker:
    def __init__(self, platform: str, device: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, platform, device],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def build(self, kernel: str, source: str, options: str, program: str) -> BuildResult:
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            _send(self.process.stdin, {"kernel": kernel, "options": options,
                                       "program": program}, source.encode())
            header, payload = _receive(self.process.stdout)
        except (OSError, EOFError, ValueError) as e:
            code = self.process.wait()
            raise WorkerDied(f"the build worker (pid {self.process.pid}) ended with status "
                             f"{code} while building {kernel}") from e
        return BuildResult(payload if header["ok"] else None, header["log"])

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()  # the worker's loop ends at end of input
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class BuildWorkers:
    """Worker processes that build programs for one device, started on demand and
    kept for the process's lifetime (at most ``limit`` of them)."""

    def __init__(self, platform: str, device: str, limit: int) -> None:
        self._platform, self._device, self._limit = platform, device, limit
        self._idle: list[_Worker] = []
        self._started = 0
        self._cond = threading.Condition()

    def build(self, kernel: str, source: str, options: str, program: str) -> BuildResult:
        """Build ``source`` with ``options`` in a worker, holding PoCL's lock for the
        program named ``program`` (``artifact.program_key``); :class:`WorkerDied` if
        the worker ended first."""
        worker = self._take()
        try:
            result = worker.build(kernel, source, options, program)
        except WorkerDied:
            with self._cond:
                self._started -= 1
                self._cond.notify()
            raise
        with self._cond:
            self._idle.append(worker)
            self._cond.notify()
        return result

    def _take(self) -> _Worker:
        with self._cond:
            while not self._idle and self._started >= self._limit:
                self._cond.wait()
            if self._idle:
                return self._idle.pop()
            self._started += 1
        try:
            return _Worker(self._platform, self._device)
        except OSError:
            with self._cond:
                self._started -= 1
                self._cond.notify()
            raise

    def close(self) -> None:
        """End the idle workers (those building finish first and are then dropped)."""
        with self._cond:
            idle, self._idle = self._idle, []
            self._limit = 0
        for w in idle:
            w.close()


_pools: dict[tuple[str, str], BuildWorkers] = {}
_pools_lock = threading.Lock()


def workers_for(platform: str, device: str) -> BuildWorkers:
    """The process's build workers for one device: one pool per device however many
    clients there are, at most one worker per core but one, ended at exit."""
    with _pools_lock:
        if not _pools:
            atexit.register(_close_all)
        pool = _pools.get((platform, device))
        if pool is None:
            pool = _pools[platform, device] = BuildWorkers(
                platform, device, limit=max(1, (os.cpu_count() or 2) - 1))
        return pool


def _close_all() -> None:
    for pool in _pools.values():
        pool.close()


def serve(platform: str, device: str) -> None:
    """A worker's loop: build each program read from stdin for the named device and
    answer on stdout, until stdin ends."""
    import pyopencl as cl
    from pyopencl import _cl

    from . import pocl

    with pocl.initializing():
        platforms = cl.get_platforms()
    found = [d for p in platforms if p.name == platform
             for d in p.get_devices() if d.name == device]
    if not found:
        sys.exit(f"cubecl_opencl build worker: no device {device!r} on platform {platform!r}")
    dev = found[0]
    context = cl.Context([dev])
    on_pocl = pocl.is_pocl(platform)
    stdin = sys.stdin.buffer
    # Answers go to the original stdout; anything the driver prints goes to stderr,
    # never into the answer stream.
    stdout = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    while True:
        try:
            request, source = _receive(stdin)
        except EOFError:
            return
        text, options = source.decode(), request["options"]
        with pocl.program_lock(request["program"]) if on_pocl else nullcontext():
            program = _cl._Program(context, text)
            try:
                program.build(options.encode(), [dev])
            except cl.Error as e:
                try:
                    log = program.get_build_info(dev, cl.program_build_info.LOG)
                except cl.Error:
                    log = str(e)
                _send(stdout, {"ok": False, "log": log or str(e)})
                continue
            (binary,) = program.get_info(cl.program_info.BINARIES)
            del program
        _send(stdout, {"ok": True, "log": ""}, bytes(binary))


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
