"""The shared tier against a server that speaks the Redis protocol and misbehaves: a
thread on a loopback port that trickles a reply, sends a line that never ends, or
answers the handshake with what the client library cannot read. Each launch, in a
fresh process and a later one, ends within a bound with NumPy's result and one
warning."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.processes import last_json_line, run_python
from helpers.redis_tier import SECRET, WORKLOAD, launch_scale, machine_client, tier_warnings

from cubecl_server.persistence import remote

BACKENDS = ["cpu", "opencl", "vulkan"]


class HostileRedis:
    """A server on a free loopback port that answers every command ``+OK`` except
    where ``mode`` misbehaves: ``trickle`` answers GET with a 10 MB string sent a byte
    every 0.5 s, ``endless`` with a line that never ends, ``large`` with a 1 MB string
    at once, ``handshake`` answers HELLO with a status where the client expects a map."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port = int(self._listener.getsockname()[1])
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def url(self) -> str:
        """The URL that reaches it (RESP3, so that the client sends HELLO)."""
        return f"redis://127.0.0.1:{self.port}/0?protocol=3"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._conns.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        try:
            while not self._stop.is_set():
                command = _read_command(reader)
                if command is None:
                    return
                self._answer(conn, command[0].upper())
        except OSError:
            return  # the client hung up, or the server is closing

    def _answer(self, conn: socket.socket, name: bytes) -> None:
        if self.mode == "handshake" and name == b"HELLO":
            conn.sendall(b"+OK\r\n")
        elif self.mode == "trickle" and name == b"GET":
            conn.sendall(b"$10000000\r\n")
            while not self._stop.wait(0.5):
                conn.sendall(b"x")
        elif self.mode == "large" and name == b"GET":
            conn.sendall(b"$1000000\r\n" + b"x" * 1_000_000 + b"\r\n")
        elif self.mode == "endless" and name == b"GET":
            conn.sendall(b"+")
            chunk = b"a" * 65536
            while not self._stop.is_set():
                conn.sendall(chunk)
        elif name == b"HELLO":
            conn.sendall(b"%1\r\n+proto\r\n:3\r\n")
        elif name == b"GET":
            conn.sendall(b"_\r\n")
        else:
            conn.sendall(b"+OK\r\n")

    def close(self) -> None:
        """Stop serving: close the listener and every connection, join the threads."""
        self._stop.set()
        self._listener.close()
        for conn in self._conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        for thread in self._threads:
            thread.join(10)


def _read_command(reader: object) -> list[bytes] | None:
    """One command (an array of bulk strings) from ``reader``; None at its end."""
    line = reader.readline()  # type: ignore[attr-defined]
    if not line.startswith(b"*"):
        return None
    args = []
    for _ in range(int(line[1:])):
        size = int(reader.readline()[1:])  # type: ignore[attr-defined]
        args.append(reader.read(size + 2)[:-2])  # type: ignore[attr-defined]
    return args


@pytest.fixture
def hostile(request: pytest.FixtureRequest) -> Iterator[HostileRedis]:
    """A misbehaving server in the mode the test names, closed after the test."""
    server = HostileRedis(request.param)
    yield server
    server.close()


# The bounds of a reply in time and size are the tier's, met before any artifact is
# decoded: cpu shows them (each costs a deadline); every backend meets a bad handshake.
@pytest.mark.parametrize(("backend", "hostile"),
                         [("cpu", "trickle"), ("cpu", "endless"),
                          *((b, "handshake") for b in BACKENDS)], indirect=["hostile"])
def test_a_hostile_server_costs_one_warning_and_the_results_stay_right(
        backend: str, hostile: HostileRedis, tmp_path: Path) -> None:
    env = {"CUBECL_STORE_URL": hostile.url(), "CUBECL_STORE_SECRET": SECRET}
    for machine in ("one", "two"):
        # A machine of its own each, so that every process asks the tier. Generous:
        # a bound that does not hold hangs (trickle) or grows without end.
        proc = run_python(WORKLOAD.format(seed=7, backend=backend),
                          env={**env, "CUBECL_CACHE_DIR": str(tmp_path / machine)},
                          timeout=60)
        report = last_json_line(proc)
        assert report["ok"] and report["outcomes"] == ["compiled"] * 2, (machine, report)
        warnings = [line for line in proc.stderr.splitlines() if "shared tier" in line]
        assert len(warnings) == 1 and "off for this process" in warnings[0], \
            (machine, warnings)


def test_a_reply_larger_than_the_limit_is_cut_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    server = HostileRedis("large")
    try:
        caplog.set_level(logging.WARNING)
        # A limit below the reply, so that the size, not the deadline, ends it.
        monkeypatch.setattr(remote, "MAX_REPLY", 64 << 10)
        monkeypatch.setenv("CUBECL_STORE_URL", server.url())
        monkeypatch.setenv("CUBECL_STORE_SECRET", SECRET)
        c = machine_client(tmp_path / "one", monkeypatch)
        assert [launch_scale(c, d) for d in (32, 64)] == ["compiled"] * 2
        [warning] = tier_warnings(caplog, "off for this process")
        assert f"a reply of more than {64 << 10} bytes" in warning, warning
    finally:
        server.close()
