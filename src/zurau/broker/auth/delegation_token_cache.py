"""The SCRAM credentials of delegation tokens, for logins with a token (KIP-48).

A client authenticated with a token logs in with SCRAM-SHA-256 or SCRAM-SHA-512, user name = the
token id, password = the token's HMAC in base64 (:func:`zurau.metadata.delegation_token.hmac_password`).
The broker derives the credential it checks such a login against as Kafka's
``DelegationTokenCache`` does: from that password, with a random salt and the mechanism's minimum
iterations (4096), per token and mechanism.

Invariants: a lookup answers only for a token that is in the current metadata image and not
expired at the lookup's clock (:func:`~zurau.metadata.delegation_token.is_expired`), and only
while a secret key is configured; its answer carries the token's owner (the principal the login
becomes) and expiration (which bounds the session, see :mod:`zurau.broker.auth.session`).
Derived credentials are cached per (token id, mechanism) and dropped once the token is gone or
the secret key changed; nothing here is ever written anywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from zurau.metadata.delegation_token import hmac_password, is_expired, secret_key, token_hmac
from zurau.metadata.image import MetadataImage
from zurau.protocol.sasl import ScramCredential, ScramMechanism
from zurau.protocol.sasl.scram import MIN_ITERATIONS, scram_credential


@dataclass(frozen=True, slots=True)
class TokenCredential:
    """What a token login is checked against, and what it becomes."""

    credential: ScramCredential
    owner: str  # ``Type:name``: the principal of the authenticated connection
    expiration_ms: int


class DelegationTokenCache:
    """See the module docstring. ``image()`` is the broker's current metadata image,
    ``config()`` its effective config, ``now_ms()`` its clock."""

    def __init__(
        self,
        image: Callable[[], MetadataImage],
        config: Callable[[], object],
        now_ms: Callable[[], int],
    ) -> None:
        self._image = image
        self._config = config
        self._now_ms = now_ms
        # (token id, mechanism) -> (the HMAC it was derived from, the credential)
        self._derived: dict[tuple[str, ScramMechanism], tuple[bytes, ScramCredential]] = {}

    def lookup(self, token_id: str, mechanism: ScramMechanism) -> TokenCredential | None:
        """The credential of a live token named ``token_id``, or None (unknown, expired, disabled)."""
        secret = secret_key(self._config())
        if secret is None:
            return None
        tokens = self._image().delegation_tokens
        token = tokens.get(token_id)
        if token is None or is_expired(token, self._now_ms()):
            return None
        mac = token_hmac(secret, token_id)
        key = (token_id, mechanism)
        cached = self._derived.get(key)
        if cached is None or cached[0] != mac:
            if len(self._derived) > 2 * len(tokens) + 16:
                self._derived = {k: v for k, v in self._derived.items() if k[0] in tokens}
            cached = (mac, scram_credential(mechanism, hmac_password(mac), iterations=MIN_ITERATIONS))
            self._derived[key] = cached
        return TokenCredential(cached[1], token.owner, token.expiration_timestamp)
