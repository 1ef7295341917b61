"""The fleet's secret, and the HMAC-SHA256 signatures on everything that leaves a machine.

A stored artifact is code, so a value that arrives from elsewhere - the shared tier, a
bundle - is believed only when it carries an HMAC-SHA256 made with the secret the
fleet configured: ``CUBECL_STORE_SECRET`` (the secret itself), else the file named by
``[cache] secret_file`` in ``cubecl.toml``. The signature covers an envelope's signed
bytes (:func:`~.codec.split_signature`: namespace, key, kind, header and payload), so
a signed value moved to another key still fails its binding; a bundle's manifest is
signed too. Whoever lacks the secret can neither make a value a machine accepts nor
alter one without the change being found.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from cubecl_server.config import config
from cubecl_server.errors import StoreError
from cubecl_server.persistence.codec import CorruptEntry, split_signature, with_signature

__all__ = [
    "ENV_SECRET", "MIN_SECRET_BYTES", "SIGNATURE_BYTES", "BadSignature", "Secret",
    "SecretError", "fleet_secret",
]

ENV_SECRET = "CUBECL_STORE_SECRET"
"""The variable holding the fleet's secret itself (it wins over a secret file)."""
MIN_SECRET_BYTES = 16
"""A shorter secret is refused: it could be guessed."""
SIGNATURE_BYTES = 32
"""The length of an HMAC-SHA256."""


class SecretError(StoreError):
    """The configured secret cannot be used: the file is missing, unreadable, open to
    other users, or the secret is too short."""


class BadSignature(CorruptEntry):
    """A value from elsewhere whose signature is missing or was not made with this
    fleet's secret: written by someone without the key, or altered since."""


@dataclass(frozen=True)
class Secret:
    """A fleet's signing secret and where it was configured (``source``, for messages;
    the secret itself is never shown)."""

    key: bytes = field(repr=False)
    source: str

    def sign(self, envelope: bytes) -> bytes:
        """``envelope`` (signed or not) signed with this secret."""
        signed, _ = split_signature(envelope)
        return with_signature(signed, self._mac(signed))

    def verify(self, value: bytes) -> bytes:
        """The unsigned envelope of ``value`` once its signature is found to be this
        secret's; BadSignature when it is missing or another's, CorruptEntry when the
        value is not an envelope."""
        signed, signature = split_signature(value)
        if not signature:
            raise BadSignature("unsigned: a value from elsewhere must be signed with the "
                               "fleet's secret")
        if not hmac.compare_digest(signature, self._mac(signed)):
            raise BadSignature("its signature was not made with this fleet's secret "
                               "(written by someone without the key, or altered)")
        return with_signature(signed, b"")

    def sign_text(self, data: bytes) -> str:
        """The hex HMAC-SHA256 of ``data`` (a bundle's manifest)."""
        return self._mac(data).hex()

    def check_text(self, data: bytes, signature: str) -> bool:
        """Whether ``signature`` is :meth:`sign_text` of ``data``."""
        return hmac.compare_digest(signature.encode(), self.sign_text(data).encode())

    def _mac(self, data: bytes) -> bytes:
        return hmac.new(self.key, data, hashlib.sha256).digest()


def _read_secret_file(path: Path) -> bytes:
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise SecretError(f"secret file {path} is not a regular file")
        if st.st_mode & 0o077:
            raise SecretError(f"secret file {path} is open to other users (mode "
                              f"{stat.S_IMODE(st.st_mode):o}): chmod 600 {path}")
        if st.st_uid != os.geteuid():
            raise SecretError(f"secret file {path} belongs to another user")
        return path.read_bytes().strip()
    except OSError as e:
        raise SecretError(f"secret file {path} cannot be read: {e.strerror or e}") from e


def fleet_secret() -> Secret | None:
    """The configured secret: ``$CUBECL_STORE_SECRET``, else the config's
    ``[cache] secret_file``; None when neither is set. SecretError when the one set
    cannot be used."""
    value = os.environ.get(ENV_SECRET)
    if value:
        key, source = value.encode(), ENV_SECRET
    else:
        path = config().store_secret_file
        if path is None:
            return None
        key, source = _read_secret_file(path), f"secret file {path}"
    if len(key) < MIN_SECRET_BYTES:
        raise SecretError(f"the secret in {source} is {len(key)} bytes; use at least "
                          f"{MIN_SECRET_BYTES} (say, `openssl rand -hex 32`)")
    return Secret(key, source)
