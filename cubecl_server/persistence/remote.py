"""The shared tier: one Redis server (or Redis Cluster) behind every machine's local store.

``CUBECL_STORE_URL`` (or ``[cache] url``) names it: ``redis://[user:password@]host:port/db``,
``rediss://`` for TLS, and ``redis+cluster://`` / ``rediss+cluster://`` for a Redis
Cluster. The artifact store asks it on a local miss and gives it what it compiles
(:mod:`cubecl_server.compiler.store`); this module moves signed bytes.

Values are envelopes signed with the fleet's secret (:mod:`.signing`); the tier does not
start without one. A value that is not an envelope, or whose signature fails, is
ignored, reported once, and overwritten by the next value stored under its key; a
good one is never overwritten (``SET NX``: the first writer wins, as locally). Keys
are ``<prefix>{<tag>}<namespace>:<key>``: the hash tag, a digest of namespace and key,
decides the Cluster slot, so entries spread evenly over the nodes whatever the
namespace holds. Every request has a deadline for the whole of it (connecting, the
handshake, the command and its entire reply: a server that trickles a reply a byte at
a time is as late as one that sends nothing), its reply a size limit (a line that
never ends is cut off), and no retry: the first failure of any kind (server down,
slow, refusing the password, answering what the client library cannot parse) turns
the tier off for the process with one warning, and kernels go on from the local store.
"""

from __future__ import annotations

import hashlib
import math
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, TypeVar

from cubecl_server.config import config
from cubecl_server.logging import logger
from cubecl_server.persistence.codec import CorruptEntry
from cubecl_server.persistence.signing import Secret, SecretError, fleet_secret

__all__ = ["ENV_URL", "MAX_REPLY", "REQUEST_S", "TIMEOUT_S", "RemoteTier", "ReplyTooLarge",
           "redacted", "shared_tier"]

log = logger("persistence")

ENV_URL = "CUBECL_STORE_URL"
"""The variable naming the shared tier's URL (over ``[cache] url``)."""
TIMEOUT_S = 1.0
"""Seconds connecting, or any one read or write, may take before the tier is turned off."""
REQUEST_S = 2.0
"""Seconds one request may take in all, from connecting to the last byte of its reply."""
MAX_REPLY = 32 << 20
"""Bytes one request may read: more than any artifact, far less than would hurt."""

_CLUSTER = "+cluster"
_R = TypeVar("_R")


class ReplyTooLarge(OSError):
    """A server that sent more bytes for one request than :data:`MAX_REPLY`."""


class _Request(threading.local):
    """The bounds of the request this thread is making (none outside a request)."""

    deadline = math.inf
    left = MAX_REPLY


_request = _Request()


class _BoundedSocket:
    """A connected socket (plain or TLS) whose reads and writes end by the deadline of
    the current request, and whose reads stop at its byte budget.

    The client library's own timeout applies to each read, so it alone never bounds
    a reply that arrives slowly enough; here each read waits at most what is left of
    the request. Everything else is the socket's.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._timeout = sock.gettimeout()

    def settimeout(self, timeout: float | None) -> None:
        """Set the timeout of each read or write (the library's), within the deadline."""
        self._timeout = timeout
        self._sock.settimeout(timeout)

    def gettimeout(self) -> float | None:
        """The timeout of each read or write, as last set."""
        return self._timeout

    def _arm(self) -> None:
        left = _request.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the request took more than {REQUEST_S} s")
        self._sock.settimeout(left if self._timeout is None else min(self._timeout, left))

    def _spend(self, n: int) -> None:
        _request.left -= n
        if _request.left < 0:
            raise ReplyTooLarge(f"a reply of more than {MAX_REPLY} bytes")

    def recv(self, size: int, *flags: int) -> bytes:
        """Read at most ``size`` bytes, by the deadline and within the budget."""
        self._arm()
        data = self._sock.recv(size, *flags)
        self._spend(len(data))
        return data

    def recv_into(self, buffer: Any, *args: Any) -> int:
        """Read into ``buffer``, by the deadline and within the budget (``args``: the
        socket's size and flags, as given: a TLS socket reads their defaults its own way)."""
        self._arm()
        n = self._sock.recv_into(buffer, *args)
        self._spend(n)
        return n

    def sendall(self, data: Any, *flags: int) -> None:
        """Send all of ``data`` by the deadline."""
        self._arm()
        self._sock.sendall(data, *flags)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def _bounded(command: Callable[[], _R]) -> _R:
    """Run one request of the client library within :data:`REQUEST_S` and
    :data:`MAX_REPLY`."""
    _request.deadline, _request.left = time.monotonic() + REQUEST_S, MAX_REPLY
    try:
        return command()
    finally:
        _request.deadline = math.inf


def redacted(url: str) -> str:
    """``url`` with its password replaced by ``***``, fit for a message."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


class RemoteTier:
    """The shared tier of one process: signed envelopes in Redis, under namespaced keys.

    ``client`` is a connected-on-demand ``redis`` client whose connections are
    bounded (:func:`_connect`); ``where`` names the server in messages (no
    password). Thread-safe; never raises on a failure of the server or the client
    library, whatever it is.
    """

    def __init__(self, client: Any, where: str, secret: Secret, prefix: str) -> None:
        self.where = where
        self.prefix = prefix
        self._client = client
        self._secret = secret
        self._off = False
        self._lock = threading.Lock()
        self._bad: set[str] = set()

    @property
    def on(self) -> bool:
        """Whether the tier is still in use (no failure has turned it off)."""
        return not self._off

    def redis_key(self, namespace: str, key: str) -> str:
        """The Redis key of the entry (namespace, key)."""
        tag = hashlib.sha256(f"{namespace}\0{key}".encode()).hexdigest()[:16]
        return f"{self.prefix}{{{tag}}}{namespace}:{key}"

    def fetch(self, namespace: str, key: str) -> bytes | None:
        """The unsigned envelope stored for (namespace, key), its signature checked;
        None when absent, when the tier is off, or when the value is bad (then it is
        reported and the next :meth:`store` overwrites it)."""
        if self._off:
            return None
        rkey = self.redis_key(namespace, key)
        try:
            value = _bounded(lambda: self._client.get(rkey))
        except Exception as e:  # the library's own bugs included: an odd answer
            self._fail("read", e)
            return None
        if value is None:
            return None
        if not isinstance(value, bytes):
            self.reject(namespace, key, f"a {type(value).__name__}, not a string")
            return None
        try:
            return self._secret.verify(value)
        except CorruptEntry as e:
            self.reject(namespace, key, str(e))
            return None

    def reject(self, namespace: str, key: str, reason: str, *, quiet: bool = False) -> None:
        """Report the value under (namespace, key) as bad, never to be loaded; the next
        :meth:`store` under that key overwrites it. ``quiet``: the caller has said so
        already."""
        rkey = self.redis_key(namespace, key)
        with self._lock:
            first = rkey not in self._bad
            self._bad.add(rkey)
        if first and not quiet:
            log.warning("shared tier %s: value %s rejected (%s); ignored, and overwritten "
                        "by this machine's own", self.where, rkey, reason)

    def store(self, namespace: str, key: str, envelope: bytes) -> bool:
        """Sign ``envelope`` and store it under (namespace, key) unless a good value is
        there already; whether it was written."""
        if self._off:
            return False
        rkey = self.redis_key(namespace, key)
        value = self._secret.sign(envelope)
        with self._lock:
            replace = rkey in self._bad
        try:
            written = _bounded(lambda: self._client.set(rkey, value) if replace
                               else self._client.set(rkey, value, nx=True))
        except Exception as e:  # as in fetch
            self._fail("write", e)
            return False
        with self._lock:
            self._bad.discard(rkey)
        return bool(written)

    def _fail(self, what: str, err: Exception) -> None:
        with self._lock:
            announce, self._off = not self._off, True
        if announce:
            log.warning("shared tier %s off for this process (%s failed: %s: %s); kernels "
                        "go on from the local store", self.where, what,
                        type(err).__name__, err)


_tiers: dict[tuple[str, str, bytes], RemoteTier | None] = {}
_refused: set[tuple[str, str]] = set()
_tiers_lock = threading.Lock()


def _refuse(url: str, why: str) -> None:
    with _tiers_lock:
        first = (url, why) not in _refused
        _refused.add((url, why))
    if first:
        log.warning("shared tier %s not started: %s; kernels use the local store only",
                    redacted(url), why)


def _connect(url: str) -> Any:
    """A client of ``url`` whose every connection is bounded (:class:`_BoundedSocket`)."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    class Bounded(redis.Connection):
        """A TCP connection whose requests keep to their deadline and size."""

        def _connect(self) -> Any:
            return _BoundedSocket(super()._connect())

    class BoundedSSL(redis.SSLConnection):
        """A TLS connection whose requests keep to their deadline and size."""

        def _connect(self) -> Any:
            return _BoundedSocket(super()._connect())

    class BoundedPool(redis.ConnectionPool):
        """A pool of bounded connections, TLS where the URL asked for it (a cluster
        client makes one per node from the URL's options, connection class included)."""

        def __init__(self, connection_class: type = redis.Connection, **kwargs: Any) -> None:
            tls = issubclass(connection_class, redis.SSLConnection)
            super().__init__(connection_class=BoundedSSL if tls else Bounded, **kwargs)

    options: dict[str, Any] = {"socket_timeout": TIMEOUT_S,
                               "socket_connect_timeout": TIMEOUT_S,
                               "retry": Retry(NoBackoff(), 0)}
    scheme, sep, rest = url.partition("://")
    if scheme.endswith(_CLUSTER):
        from redis.cluster import RedisCluster
        return RedisCluster.from_url(scheme[:-len(_CLUSTER)] + sep + rest, **options,
                                     connection_pool_class=BoundedPool)
    return redis.Redis.from_url(url, **options, connection_class=BoundedSSL
                                if scheme == "rediss" else Bounded)


def shared_tier() -> RemoteTier | None:
    """The shared tier the configuration names, one per URL, prefix and secret per
    process; None when none is named or it cannot start (a missing secret, the
    ``redis`` library absent, a bad URL, a cluster that does not answer: one warning
    each)."""
    cfg = config()
    url = cfg.store_url
    if not url:
        return None
    scheme = url.partition("://")[0].removesuffix(_CLUSTER)
    if scheme not in ("redis", "rediss"):
        _refuse(url, f"{ENV_URL} must start with redis://, rediss:// or their +cluster "
                     f"forms, not {scheme}://")
        return None
    try:
        secret = fleet_secret()
    except SecretError as e:
        _refuse(url, str(e))
        return None
    if secret is None:
        _refuse(url, "no secret to sign with: set CUBECL_STORE_SECRET or [cache] "
                     "secret_file (what is shared is code, so it is signed)")
        return None
    memo = (url, cfg.store_prefix, secret.key)
    with _tiers_lock:
        if memo in _tiers:
            return _tiers[memo]
    try:
        # A cluster client asks its nodes for the slots as it is made.
        client = _bounded(lambda: _connect(url))
    except ImportError:
        _refuse(url, "the redis library is not installed (pip install 'cubecl-server[redis]')")
        return None
    except Exception as e:  # a malformed URL, or a cluster that cannot be reached
        _refuse(url, f"{type(e).__name__}: {e}")
        tier = None
    else:
        tier = RemoteTier(client, redacted(url), secret, cfg.store_prefix)
    with _tiers_lock:
        return _tiers.setdefault(memo, tier)
