"""A TLS listener's ``ssl.SSLContext`` from PEM material, reloaded when its files change.

The same material serves the node's own outgoing connections to that listener on other nodes
(``client=True``; see :mod:`.broker_client_security`): the key store is then the client
certificate (presented when the server asks), the trust store verifies the server (the system's
CAs when none is set), and ``check_hostname`` follows ``ssl.endpoint.identification.algorithm``.

* The key store is a PEM file holding the private key and the certificate chain (leaf first), or
  the inline chain and key (written to a private temporary file only for the moment OpenSSL loads
  them, then removed). ``ssl.key.password`` decrypts an encrypted key.
* ``ssl.client.auth``: ``required`` -> a client without a certificate the trust store verifies
  fails the handshake; ``requested`` -> a certificate is asked for and verified when given;
  ``none`` -> never asked for.
* Versions: the lowest and highest of ``ssl.enabled.protocols`` (TLSv1.2, TLSv1.3).

Reload: :meth:`ListenerSslContext.reload_if_changed` compares the key store's and trust store's
modification times and sizes with those last loaded and, if either changed, loads the new
certificate and key into the same context (OpenSSL replaces the pair), so new connections get the
new certificate without a restart and existing ones are untouched. Newly trusted CAs are added; a
CA removed from the trust store stays trusted until a restart (OpenSSL cannot forget one). A file
that fails to load keeps the old material, with a logged error.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile

from zurau.broker.auth.listener_security import SslSettings
from zurau.config import ConfigError

log = logging.getLogger("zurau.security")

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_VERIFY = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def _stamp(path: str | None) -> tuple[int, int] | None:
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class ListenerSslContext:
    """The server context of one TLS listener (``context``), or with ``client=True`` the
    context a node dials that listener of other nodes with; and its reload check."""

    def __init__(self, settings: SslSettings, *, client: bool = False, check_hostname: bool = True) -> None:
        self.settings = settings
        self.client = client
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT if client else ssl.PROTOCOL_TLS_SERVER)
        versions = sorted(_VERSIONS[p] for p in settings.enabled_protocols)
        ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
        if client:
            ctx.check_hostname = check_hostname
            ctx.verify_mode = ssl.CERT_REQUIRED
        else:
            ctx.verify_mode = _VERIFY[settings.client_auth]
        ctx.options |= ssl.OP_NO_COMPRESSION
        self.context = ctx
        self._stamps = (_stamp(settings.keystore_location), _stamp(settings.truststore_location))
        try:
            self._load_keystore()
            self._load_truststore()
        except (ssl.SSLError, OSError) as e:
            raise ConfigError(
                f"listener {settings.listener}: cannot load its TLS key or trust store: {e}", name="ssl.keystore.location"
            ) from None

    def _load_keystore(self) -> None:
        s = self.settings
        if s.keystore_location:
            self.context.load_cert_chain(s.keystore_location, password=s.key_password)
            return
        if not (s.keystore_chain and s.keystore_key):
            assert self.client, "a server context needs a key store"
            return  # a client without a certificate of its own
        with tempfile.TemporaryDirectory(prefix="zurau-tls-") as tmp:
            path = os.path.join(tmp, "keystore.pem")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(s.keystore_key.strip() + "\n" + s.keystore_chain.strip() + "\n")
            self.context.load_cert_chain(path, password=s.key_password)

    def _load_truststore(self) -> None:
        s = self.settings
        if s.truststore_location:
            self.context.load_verify_locations(cafile=s.truststore_location)
        elif s.truststore_certificates:
            self.context.load_verify_locations(cadata=s.truststore_certificates)
        elif self.client:
            self.context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        elif s.client_auth != "none":
            self.context.load_default_certs(ssl.Purpose.CLIENT_AUTH)

    def reload_if_changed(self) -> bool:
        """Load the key and trust stores again if their files changed; True if reloaded."""
        s = self.settings
        stamps = (_stamp(s.keystore_location), _stamp(s.truststore_location))
        if stamps == self._stamps:
            return False
        self._stamps = stamps
        try:
            self._load_keystore()
            self._load_truststore()
        except (ssl.SSLError, OSError) as e:
            log.error("listener %s: TLS material changed but cannot be loaded (%s); keeping the old one", s.listener, e)
            return False
        log.info("listener %s: reloaded its TLS key and trust stores", s.listener)
        return True
