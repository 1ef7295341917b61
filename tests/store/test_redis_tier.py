"""The shared tier against a real ``redis-server`` on a loopback port: machines (cache
directories; real processes where it matters) sharing one server, and every way the
server or what it holds can go wrong, with kernels checked against NumPy throughout."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from helpers.processes import last_json_line, run_python
from helpers.redis_tier import SECRET, WORKLOAD, launch_scale, machine_client, tier_warnings

from cubecl_server.config import reload_config
from cubecl_server.persistence import decode_artifact, encode_artifact
from cubecl_server.persistence.remote import shared_tier
from cubecl_server.persistence.signing import Secret

PASSWORD = "redis-password-for-the-tests"


@dataclass
class RedisServer:
    """A redis-server this test started, on a free loopback port."""

    port: int
    proc: subprocess.Popen[bytes]

    def url(self, password: str = PASSWORD) -> str:
        """The URL to reach it with ``password``."""
        return f"redis://:{password}@127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        """A client of it, for the test to look and meddle."""
        return redis.Redis(port=self.port, password=PASSWORD, socket_timeout=5)


def _free_port(bus: bool = False) -> int:
    """A free loopback port; with ``bus``, one whose cluster bus port (+10000) is free too."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if not bus:
            return port
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 10000))
            return port
        except (OSError, OverflowError):  # taken, or past 65535
            continue


def _start(home: Path, *options: str) -> RedisServer:
    """A redis-server without persistence in ``home``, listening on a free port."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed: the shared tier is tested against a real "
                    "one (`make test` installs it through scripts/system-deps.sh; or "
                    "apt-get install redis-server)", pytrace=False)
    home.mkdir()
    port = _free_port(bus="--cluster-enabled" in options)
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(home), *options],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return RedisServer(port, proc)
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"redis-server did not start on port {port}", pytrace=False)
            time.sleep(0.05)


def _stop(server: RedisServer) -> None:
    if server.proc.poll() is None:
        os.kill(server.proc.pid, signal.SIGCONT)
        server.proc.terminate()
    server.proc.wait(10)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server with a password, stopped after the test."""
    server = _start(tmp_path / "redis", "--requirepass", PASSWORD)
    yield server
    _stop(server)


@pytest.fixture
def shared(redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> RedisServer:
    """This process configured to use ``redis_server`` as its shared tier."""
    monkeypatch.setenv("CUBECL_STORE_URL", redis_server.url())
    monkeypatch.setenv("CUBECL_STORE_SECRET", SECRET)
    reload_config()
    return redis_server


@pytest.mark.parametrize("backend", ["cpu", "opencl", "vulkan"])
def test_second_machine_compiles_nothing(backend: str, redis_server: RedisServer,
                                         tmp_path: Path) -> None:
    env = {"CUBECL_STORE_URL": redis_server.url(), "CUBECL_STORE_SECRET": SECRET,
           "CUBECL_STORE_PREFIX": "fleet-a:"}
    reports = [last_json_line(run_python(
        WORKLOAD.format(seed=seed, backend=backend),
        env={**env, "CUBECL_CACHE_DIR": str(tmp_path / f"machine{seed}")}))
        for seed in (1, 2)]
    assert all(r["ok"] for r in reports), reports
    assert [r["outcomes"] for r in reports] == [["compiled"] * 2, ["loaded"] * 2], reports
    keys = redis_server.client().keys("*")
    assert len(keys) == 2 and all(k.startswith(b"fleet-a:{") for k in keys), keys


def test_remote_hit_is_kept_locally_and_values_are_signed_envelopes(
        shared: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = machine_client(tmp_path / "one", monkeypatch)
    assert launch_scale(first, 64) == "compiled"
    [key] = shared.client().keys("*")
    value = shared.client().get(key)
    assert value is not None
    envelope = Secret(SECRET.encode(), "test").verify(value)
    store = first.loader.target.store
    assert store is not None
    digest = key.decode().rsplit(":", 1)[1]
    assert decode_artifact(envelope, namespace=store.kernels_namespace, key=digest).payload
    second = machine_client(tmp_path / "two", monkeypatch)
    assert launch_scale(second, 64) == "loaded"
    # The remote hit went into the local store: with Redis gone, a third client of
    # this machine still loads it.
    shared.proc.kill()
    shared.proc.wait()
    assert launch_scale(machine_client(tmp_path / "two", monkeypatch), 64) == "loaded"


def test_redis_killed_mid_run_turns_the_tier_off_once(
        shared: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    c = machine_client(tmp_path / "one", monkeypatch)
    assert launch_scale(c, 64) == "compiled"
    shared.proc.kill()
    shared.proc.wait()
    assert [launch_scale(c, d) for d in (32, 128, 256)] == ["compiled"] * 3
    assert [launch_scale(c, d) for d in (32, 64)] == ["held", "held"]
    assert len(tier_warnings(caplog, "off for this process")) == 1, caplog.text


def test_a_server_that_stops_answering_times_out_once(
        shared: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    c = machine_client(tmp_path / "one", monkeypatch)
    os.kill(shared.proc.pid, signal.SIGSTOP)
    assert [launch_scale(c, d) for d in (32, 64, 128)] == ["compiled"] * 3
    [warning] = tier_warnings(caplog, "off for this process")
    assert "Timeout" in warning, warning


def test_a_wrong_password_turns_the_tier_off_once(
        redis_server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    monkeypatch.setenv("CUBECL_STORE_URL", redis_server.url("not-the-password"))
    monkeypatch.setenv("CUBECL_STORE_SECRET", SECRET)
    c = machine_client(tmp_path / "one", monkeypatch)
    assert [launch_scale(c, d) for d in (32, 64)] == ["compiled"] * 2
    [warning] = tier_warnings(caplog, "off for this process")
    assert "not-the-password" not in caplog.text and ":***@" in warning, warning
    assert redis_server.client().dbsize() == 0


def test_no_secret_no_tier(redis_server: RedisServer, tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch,
                           caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    monkeypatch.setenv("CUBECL_STORE_URL", redis_server.url())
    monkeypatch.delenv("CUBECL_STORE_SECRET", raising=False)
    c = machine_client(tmp_path / "one", monkeypatch)
    assert launch_scale(c, 32) == "compiled"
    assert launch_scale(machine_client(tmp_path / "two", monkeypatch), 64) == "compiled"
    [warning] = tier_warnings(caplog, "not started")
    assert "no secret to sign with" in warning, warning
    assert redis_server.client().dbsize() == 0


def test_garbage_truncated_and_unsigned_values_are_ignored_and_overwritten(
        shared: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    dims = (32, 64, 128, 256)
    first = machine_client(tmp_path / "one", monkeypatch)
    assert [launch_scale(first, d) for d in dims] == ["compiled"] * 4
    r = shared.client()
    store = first.loader.target.store
    assert store is not None
    ns = store.kernels_namespace
    keys = sorted(r.keys("*"))
    good = {k: r.get(k) for k in keys}
    digest = keys[2].decode().rsplit(":", 1)[1]
    # Code that computes the wrong thing, bound to its place: unsigned, and signed by
    # someone without the fleet's key.
    wrong = encode_artifact("py-code", {}, b"def run(*a):\n    pass\n", namespace=ns,
                            key=digest)
    r.set(keys[0], b"\x00garbage" * 50)
    r.set(keys[1], good[keys[1]][: len(good[keys[1]]) // 2])
    r.set(keys[2], wrong)
    r.set(keys[3], Secret(b"somebody-else-without-the-key", "x").sign(wrong))
    second = machine_client(tmp_path / "two", monkeypatch)
    assert [launch_scale(second, d) for d in dims] == ["compiled"] * 4
    rejected = tier_warnings(caplog, "rejected")
    assert len(rejected) == 4, rejected
    assert sum("unsigned" in w for w in rejected) == 1
    assert sum("not made with this fleet's secret" in w for w in rejected) == 1
    # Each bad value was overwritten by the second machine's own, signed.
    secret = Secret(SECRET.encode(), "test")
    for k in keys:
        env = secret.verify(r.get(k))
        decode_artifact(env, namespace=ns, key=k.decode().rsplit(":", 1)[1])
    assert [launch_scale(machine_client(tmp_path / "three", monkeypatch), d) for d in dims] \
        == ["loaded"] * 4


def test_a_redis_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One node holding every slot: a real cluster, which only a cluster client reaches.
    server = _start(tmp_path / "cluster", "--cluster-enabled", "yes")
    try:
        admin = redis.Redis(port=server.port, socket_timeout=5)
        admin.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        deadline = time.monotonic() + 10
        while b"cluster_state:ok" not in admin.execute_command("CLUSTER", "INFO"):
            assert time.monotonic() < deadline, "the one-node cluster did not come up"
            time.sleep(0.05)
        monkeypatch.setenv("CUBECL_STORE_URL", f"redis+cluster://127.0.0.1:{server.port}/0")
        monkeypatch.setenv("CUBECL_STORE_SECRET", SECRET)
        assert launch_scale(machine_client(tmp_path / "one", monkeypatch), 64) == "compiled"
        assert launch_scale(machine_client(tmp_path / "two", monkeypatch), 64) == "loaded"
        assert len(admin.keys("*")) == 1
        # Each node's connections keep to the request's deadline and size, as a
        # single server's do.
        tier = shared_tier()
        assert tier is not None
        node = tier._client.get_default_node().redis_connection
        assert node.connection_pool.connection_class.__name__ == "Bounded"
    finally:
        _stop(server)


def test_the_config_file_names_the_tier_and_a_private_secret_file(
        redis_server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    for var in ("CUBECL_STORE_URL", "CUBECL_STORE_SECRET", "CUBECL_STORE_PREFIX"):
        monkeypatch.delenv(var, raising=False)
    project = tmp_path / "project"
    project.mkdir()
    secret = project / "fleet.secret"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o644)
    (project / "cubecl.toml").write_text(
        f'[cache]\nurl = "{redis_server.url()}"\nprefix = "team-b:"\n'
        'secret_file = "fleet.secret"\n')
    monkeypatch.chdir(project)
    assert launch_scale(machine_client(tmp_path / "one", monkeypatch), 32) == "compiled"
    [warning] = tier_warnings(caplog, "not started")
    assert f"chmod 600 {secret}" in warning, warning
    assert redis_server.client().dbsize() == 0
    secret.chmod(0o600)
    assert launch_scale(machine_client(tmp_path / "two", monkeypatch), 64) == "compiled"
    assert launch_scale(machine_client(tmp_path / "three", monkeypatch), 64) == "loaded"
    assert [k.split(b"{")[0] for k in redis_server.client().keys("*")] == [b"team-b:"]


def test_a_signed_value_that_does_not_load_is_replaced(
        shared: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    first = machine_client(tmp_path / "one", monkeypatch)
    assert launch_scale(first, 64) == "compiled"
    store = first.loader.target.store
    assert store is not None
    r = shared.client()
    [key] = r.keys("*")
    digest = key.decode().rsplit(":", 1)[1]
    # Signed by the fleet (a machine with a bug, another version's output), bound to
    # its place, and refused by the cpu backend's validation at load.
    refused = encode_artifact("py-code", {}, b"import os\n", namespace=store.kernels_namespace,
                              key=digest)
    secret = Secret(SECRET.encode(), "test")
    r.set(key, secret.sign(refused))
    assert launch_scale(machine_client(tmp_path / "two", monkeypatch), 64) == "compiled"
    assert len(tier_warnings(caplog, "does not load")) == 1, caplog.text
    # The second machine put its own artifact in its place: the next one loads it.
    assert decode_artifact(secret.verify(r.get(key)), namespace=store.kernels_namespace,
                           key=digest).payload != b"import os\n"
    assert launch_scale(machine_client(tmp_path / "three", monkeypatch), 64) == "loaded"
