"""The storage layer under the compilation cache: namespaces, keys and bytes, and a log.

It keeps two things and interprets neither. Entries (:mod:`.entries`) are opaque
byte values under a namespace and a key; the layer never reads a kernel, a backend
or an artifact out of them (the compiler, the IR cache and the tuner do, each in its
own namespaces). Compilation records (:mod:`.records`) are a bounded history of
JSON objects filed under a few plain columns (backend, kernel, variant, outcome),
which is as much as this layer knows of kernels: what a record means is
:mod:`cubecl_server.compiler.record`'s. :mod:`.codec` is the typed envelope values
travel in, :mod:`.sqlite` the embedded store of both on :mod:`.database` (the file's
connections, schema and self-repair), :mod:`.files` its files on disk (private,
checked before use, moved aside when damaged), :mod:`.environment` where it lives.
What leaves the machine: :mod:`.signing` (the fleet's secret, HMAC-SHA256),
:mod:`.remote` (the shared tier on Redis), :mod:`.bundle` (bundles).
"""

from cubecl_server.persistence.codec import (
    CorruptEntry,
    DecodedArtifact,
    HeaderValue,
    MisboundEntry,
    checksum,
    decode_artifact,
    encode_artifact,
)
from cubecl_server.persistence.environment import (
    cache_root,
    database_path,
    environment_name,
    environment_path,
    generation,
    open_store,
    switch_environment,
    validate_environment_name,
)
from cubecl_server.persistence.sqlite import (
    BadEntry,
    CompilationRecordRow,
    Entry,
    EntryInfo,
    NamespaceInfo,
    Origin,
    PutResult,
    SqliteStore,
    UntrustedStore,
)

__all__ = [
    "BadEntry", "CompilationRecordRow", "CorruptEntry", "DecodedArtifact", "Entry",
    "EntryInfo", "HeaderValue", "MisboundEntry", "NamespaceInfo", "Origin", "PutResult",
    "SqliteStore", "UntrustedStore", "cache_root", "checksum", "database_path",
    "decode_artifact", "encode_artifact", "environment_name", "environment_path",
    "generation", "open_store", "switch_environment", "validate_environment_name",
]
