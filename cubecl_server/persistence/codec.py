"""The typed envelope stored values travel in: bytes plus a small JSON header, never pickle.

Layout of an encoded artifact (all integers big-endian)::

    b"CCLA"                 magic
    u8                      format version (FORMAT_VERSION)
    u32                     length of the header JSON
    header JSON             UTF-8, sorted keys:
                            {"header": {...}, "key": "...", "kind": "...", "namespace": "..."}
    u64                     length of the payload
    payload                 the artifact's bytes, untouched
    u8                      length of the signature: 0 (unsigned) or 32 (signed)
    signature               that many bytes

Both lengths are checked against the data, so a truncated or padded value is
rejected instead of being handed to a driver.

Every envelope is bound to the namespace and key it was written for: decoding it
under any other (two valid entries swapped between keys, or a value copied to the
wrong place) raises :class:`MisboundEntry`, so a valid artifact of one kernel is never
run as another's. Values of format version 1 carried no binding and no longer decode.

Where a signature goes. The *signed bytes* are the envelope from the magic to the
end of the payload: namespace, key, kind, header and payload, exactly as stored.
Values that leave the machine (bundles, the shared tier) carry an HMAC-SHA256 of the
signed bytes in the trailing signature field (:mod:`.signing`); the receiving side
checks it and keeps the value unsigned (:func:`split_signature`,
:func:`with_signature`). The local store holds unsigned values only, so
:func:`decode_artifact` refuses any signature rather than pass off a value it did
not check as checked.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from typing import Any, TypeAlias

from cubecl_server import bounded
from cubecl_server.errors import StoreError

__all__ = [
    "FORMAT_VERSION", "MAGIC", "MAX_HEADER", "CorruptEntry", "DecodedArtifact", "EnvelopeHead",
    "HeaderValue", "MisboundEntry", "checksum", "decode_artifact", "encode_artifact",
    "peek_envelope", "split_signature", "with_signature",
]

MAGIC = b"CCLA"
FORMAT_VERSION = 2
MAX_HEADER = 4 << 20
"""The longest header JSON an envelope may have: headers name a few strings and
numbers, so anything near this was not written here (and is not decoded)."""
_HEADER_DEPTH = 32  # a header is a flat object of a few lists and maps

HeaderValue: TypeAlias = str | int | float | bool | list[Any] | dict[str, Any] | None

_PREFIX = struct.Struct(">4sBI")
_PAYLOAD_LEN = struct.Struct(">Q")
_SIGNATURE_LEN = struct.Struct(">B")
_FIELDS = {"header", "key", "kind", "namespace"}


class CorruptEntry(StoreError):
    """A stored value that does not decode: bad magic, unknown version, wrong lengths,
    or a header that is not the JSON object this module writes."""


class MisboundEntry(CorruptEntry):
    """A well-formed envelope found under a namespace or key other than the one it
    was written for."""


@dataclass(frozen=True)
class DecodedArtifact:
    """One decoded artifact: what it is (``kind``), its typed header and its payload."""

    kind: str
    header: dict[str, HeaderValue]
    payload: bytes


def checksum(data: bytes) -> str:
    """The hex SHA-256 of ``data``, as stored beside every entry.

    SHA-256 rather than BLAKE2b: hashlib's SHA-256 goes through OpenSSL, which uses
    the CPU's SHA extensions where present (as fast as BLAKE2b or faster), and a
    SHA-256 digest can be checked with standard tools (``sha256sum``) when a bundle
    travels between machines.
    """
    return hashlib.sha256(data).hexdigest()


def _check_binding(namespace: str, key: str) -> None:
    for what, value in (("namespace", namespace), ("key", key)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"artifact {what} must be a non-empty string, not {value!r}")


def encode_artifact(
    kind: str, header: dict[str, HeaderValue], payload: bytes, *, namespace: str, key: str,
) -> bytes:
    """Encode ``payload`` with its ``kind`` and ``header`` into one envelope bound to
    the store ``namespace`` and ``key`` it is written for.

    The header must be JSON-serialisable (tuples come back as lists); NaN and
    infinities are refused. Raises ValueError on an empty kind, namespace or key, or
    a bad header.
    """
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"artifact kind must be a non-empty string, not {kind!r}")
    _check_binding(namespace, key)
    if not isinstance(header, dict) or not all(isinstance(k, str) for k in header):
        raise ValueError("artifact header must be a dict with string keys")
    try:
        text = json.dumps(
            {"header": header, "key": key, "kind": kind, "namespace": namespace},
            sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False,
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"artifact header is not JSON-serialisable: {exc}") from exc
    head = text.encode("utf-8")
    body = bytes(payload)
    return b"".join((
        _PREFIX.pack(MAGIC, FORMAT_VERSION, len(head)), head,
        _PAYLOAD_LEN.pack(len(body)), body, _SIGNATURE_LEN.pack(0),
    ))


@dataclass(frozen=True)
class _Layout:
    """Where the parts of one envelope lie, its lengths checked against the data."""

    head_end: int
    payload_start: int
    payload_end: int
    signature_len: int


def _layout(view: memoryview) -> _Layout:
    if len(view) < _PREFIX.size:
        raise CorruptEntry(f"artifact truncated: {len(view)} bytes, shorter than its prefix")
    magic, version, head_len = _PREFIX.unpack_from(view, 0)
    if magic != MAGIC:
        raise CorruptEntry(f"not an artifact: bad magic {bytes(magic)!r}")
    if version != FORMAT_VERSION:
        raise CorruptEntry(f"artifact format version {version}, expected {FORMAT_VERSION}")
    if head_len > MAX_HEADER:
        raise CorruptEntry(f"artifact header of {head_len} bytes, more than the "
                           f"{MAX_HEADER} allowed")
    head_end = _PREFIX.size + head_len
    if len(view) < head_end + _PAYLOAD_LEN.size:
        raise CorruptEntry("artifact truncated inside its header")
    (payload_len,) = _PAYLOAD_LEN.unpack_from(view, head_end)
    start = head_end + _PAYLOAD_LEN.size
    end = start + payload_len
    if len(view) < end + _SIGNATURE_LEN.size:
        raise CorruptEntry(
            f"artifact payload is {max(len(view) - start - _SIGNATURE_LEN.size, 0)} bytes, "
            f"its header says {payload_len}"
        )
    (signature_len,) = _SIGNATURE_LEN.unpack_from(view, end)
    if len(view) != end + _SIGNATURE_LEN.size + signature_len:
        raise CorruptEntry(
            f"artifact is {len(view)} bytes, its lengths say "
            f"{end + _SIGNATURE_LEN.size + signature_len}"
        )
    return _Layout(head_end, start, end, signature_len)


def split_signature(data: bytes) -> tuple[bytes, bytes]:
    """An envelope's signed bytes (magic to the end of the payload) and its signature
    (empty when unsigned). CorruptEntry when its lengths do not add up."""
    view = memoryview(data)
    layout = _layout(view)
    signed = bytes(view[:layout.payload_end])
    return signed, bytes(view[layout.payload_end + _SIGNATURE_LEN.size:])


def with_signature(signed: bytes, signature: bytes) -> bytes:
    """The envelope made of ``signed`` (as :func:`split_signature` returns it) and
    ``signature`` (empty: an unsigned envelope, as the local store keeps them)."""
    if len(signature) > 255:
        raise ValueError(f"a signature is at most 255 bytes, not {len(signature)}")
    return b"".join((signed, _SIGNATURE_LEN.pack(len(signature)), signature))


def decode_artifact(data: bytes, *, namespace: str, key: str) -> DecodedArtifact:
    """Decode an envelope written by :func:`encode_artifact`, found under the store
    ``namespace`` and ``key``.

    Raises MisboundEntry when it was written for another namespace or key, and
    CorruptEntry on anything malformed or signed (a signed value is checked and
    unsigned by :mod:`.signing` before it is decoded); never returns a partial
    artifact.
    """
    _check_binding(namespace, key)
    view = memoryview(data)
    layout = _layout(view)
    try:
        obj = bounded.loads(bytes(view[_PREFIX.size:layout.head_end]), max_bytes=MAX_HEADER,
                            max_depth=_HEADER_DEPTH)
    except bounded.Unbounded as exc:
        raise CorruptEntry(f"artifact header is not valid JSON: {exc}") from exc
    if not isinstance(obj, dict) or set(obj) != _FIELDS:
        raise CorruptEntry("artifact header has the wrong shape")
    kind, header = obj["kind"], obj["header"]
    if not isinstance(kind, str) or not kind or not isinstance(header, dict) \
            or not isinstance(obj["namespace"], str) or not isinstance(obj["key"], str):
        raise CorruptEntry("artifact header has the wrong shape")
    if layout.signature_len:
        raise CorruptEntry("artifact is signed: a signed value is checked and unsigned "
                           "where it arrives, never stored or decoded signed")
    if (obj["namespace"], obj["key"]) != (namespace, key):
        raise MisboundEntry(
            f"entry written for {obj['namespace']} / {obj['key']}, "
            f"found under {namespace} / {key}"
        )
    return DecodedArtifact(kind=kind, header=header,
                           payload=bytes(view[layout.payload_start:layout.payload_end]))


@dataclass(frozen=True)
class EnvelopeHead:
    """What the start of a stored value tells of it: its kind, its header, the start of
    its payload, and the payload's whole size."""

    kind: str
    header: dict[str, HeaderValue]
    payload_head: bytes
    payload_size: int

    @property
    def payload_complete(self) -> bool:
        """Whether :attr:`payload_head` is the whole payload."""
        return len(self.payload_head) == self.payload_size


def peek_envelope(head: bytes) -> EnvelopeHead | None:
    """What the first bytes of a stored value (``head``, at least up to the end of its
    header) say it holds; None when they are not the start of an envelope of this
    format or its header does not parse.

    For a listing: nothing is checked beyond the header's shape (not the checksum, the
    binding or the lengths past ``head``), so never hand what it says to a driver.
    """
    view = memoryview(head)
    if len(view) < _PREFIX.size:
        return None
    magic, version, head_len = _PREFIX.unpack_from(view, 0)
    head_end = _PREFIX.size + head_len
    if magic != MAGIC or version != FORMAT_VERSION or head_len > MAX_HEADER \
            or len(view) < head_end + _PAYLOAD_LEN.size:
        return None
    try:
        obj = bounded.loads(bytes(view[_PREFIX.size:head_end]), max_bytes=MAX_HEADER,
                            max_depth=_HEADER_DEPTH)
    except bounded.Unbounded:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str) \
            or not isinstance(obj.get("header"), dict):
        return None
    (payload_len,) = _PAYLOAD_LEN.unpack_from(view, head_end)
    start = head_end + _PAYLOAD_LEN.size
    return EnvelopeHead(obj["kind"], obj["header"],
                        bytes(view[start:min(start + payload_len, len(view))]), payload_len)
