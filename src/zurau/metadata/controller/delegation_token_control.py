"""The controller's part of delegation tokens (KIP-48): create, renew, expire, and the periodic
removal of expired tokens, as metadata records (Kafka's ``DelegationTokenControlManager``).

Rules, in the order they are checked (each failure leaves the log unchanged):

* no ``delegation.token.secret.key`` (nor ``delegation.token.master.key``): every operation answers
  DELEGATION_TOKEN_AUTH_DISABLED;
* **create**: a renewer whose principal type is not ``User``: INVALID_PRINCIPAL_TYPE. The max
  lifetime is ``delegation.token.max.lifetime.ms``, or the requested one when positive and shorter;
  ``max = now + max lifetime``, ``expiration = min(max, now + delegation.token.expiry.time.ms)``;
  the token id is a new random UUID. One ``DelegationTokenRecord``; the response carries the HMAC.
* **renew** (the token named by its HMAC): unknown: DELEGATION_TOKEN_NOT_FOUND; expired:
  DELEGATION_TOKEN_EXPIRED; the caller neither owner nor renewer: DELEGATION_TOKEN_OWNER_MISMATCH.
  The period is ``delegation.token.expiry.time.ms``, or the requested one when positive and
  shorter; ``expiration = min(max, now + period)`` (a renewal never passes the max timestamp).
* **expire**: unknown: NOT_FOUND; not owner or renewer: OWNER_MISMATCH; a negative period removes
  the token now (``RemoveDelegationTokenRecord``, expiry = now); else an expired token:
  DELEGATION_TOKEN_EXPIRED; else ``expiration = min(max, now + period)`` (0: expired from now on).
* **sweep**: every token past its expiration or max timestamp is removed.

``caller`` None means the caller was already authorised as owner or renewer by the broker that
forwarded the request over a controller listener (the forwarded request does not carry the
principal; see :mod:`zurau.metadata.raft_controller_channel`). Timestamps are epoch ms from the
caller's clock; failed answers carry expiry -1 (Kafka's ``ErrorTimestamp``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence

from zurau.metadata.controller.result import ControllerResult
from zurau.metadata.delegation_token import (
    USER_TYPE,
    find_by_hmac,
    is_expired,
    owner_or_renewer,
    secret_key,
    split_principal,
    token_hmac,
)
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import DelegationTokenRecord, MetadataRecord, RemoveDelegationTokenRecord
from zurau.protocol.errors import (
    DelegationTokenAuthDisabledError,
    DelegationTokenExpiredError,
    DelegationTokenNotFoundError,
    DelegationTokenOwnerMismatchError,
    InvalidPrincipalTypeError,
)
from zurau.protocol.messages import CreateDelegationTokenResponse

log = logging.getLogger("zurau.controller")

ERROR_TIMESTAMP = -1
_MAX_MS = 2**63 - 1


def _plus(now: int, duration: int) -> int:
    """``now + duration``, saturating at the largest int64 (Kafka's ``sum``)."""
    return _MAX_MS if now > _MAX_MS - duration else now + duration


class DelegationTokenControlManager:
    """See the module docstring. ``config`` is the controller's broker config (read per call, so a
    dynamic change would apply at once); ``new_token_id`` names new tokens (seeded in tests)."""

    def __init__(self, config: object, new_token_id: Callable[[], str] = lambda: str(uuid.uuid4())) -> None:
        self.config = config
        self.new_token_id = new_token_id

    def _get(self, name: str) -> int:
        return int(self.config.get(name))  # type: ignore[attr-defined]

    @property
    def secret(self) -> str | None:
        return secret_key(self.config)

    def create(
        self,
        image: MetadataImage,
        owner: str,
        requester: str,
        renewers: Sequence[str],
        max_lifetime_ms: int,
        now_ms: int,
    ) -> ControllerResult[CreateDelegationTokenResponse]:
        owner_type, owner_name = split_principal(owner)
        requester_type, requester_name = split_principal(requester)
        response: CreateDelegationTokenResponse = {
            "error_code": 0,
            "principal_type": owner_type,
            "principal_name": owner_name,
            "token_requester_principal_type": requester_type,
            "token_requester_principal_name": requester_name,
            "issue_timestamp_ms": ERROR_TIMESTAMP,
            "expiry_timestamp_ms": ERROR_TIMESTAMP,
            "max_timestamp_ms": ERROR_TIMESTAMP,
            "token_id": "",
            "hmac": b"",
            "throttle_time_ms": 0,
        }
        secret = self.secret
        if secret is None:
            response["error_code"] = DelegationTokenAuthDisabledError.code
            return ControllerResult([], response)
        if any(split_principal(r)[0] != USER_TYPE for r in renewers):
            response["error_code"] = InvalidPrincipalTypeError.code
            return ControllerResult([], response)
        max_life = self._get("delegation.token.max.lifetime.ms")
        if max_lifetime_ms > 0:
            max_life = min(max_life, max_lifetime_ms)
        max_ts = _plus(now_ms, max_life)
        expiry = min(max_ts, _plus(now_ms, self._get("delegation.token.expiry.time.ms")))
        token_id = self.new_token_id()
        record = DelegationTokenRecord(token_id, owner, requester, tuple(renewers), now_ms, max_ts, expiry)
        response["issue_timestamp_ms"] = now_ms
        response["expiry_timestamp_ms"] = expiry
        response["max_timestamp_ms"] = max_ts
        response["token_id"] = token_id
        response["hmac"] = token_hmac(secret, token_id)
        return ControllerResult([record], response)

    def renew(
        self, image: MetadataImage, hmac: bytes, renew_period_ms: int, caller: str | None, now_ms: int
    ) -> ControllerResult[tuple[int, int]]:
        """(error code, new expiry timestamp)."""
        secret = self.secret
        if secret is None:
            return ControllerResult([], (DelegationTokenAuthDisabledError.code, ERROR_TIMESTAMP))
        token = find_by_hmac(image.delegation_tokens, secret, hmac)
        if token is None:
            return ControllerResult([], (DelegationTokenNotFoundError.code, ERROR_TIMESTAMP))
        if is_expired(token, now_ms):
            return ControllerResult([], (DelegationTokenExpiredError.code, ERROR_TIMESTAMP))
        if caller is not None and not owner_or_renewer(token, caller):
            return ControllerResult([], (DelegationTokenOwnerMismatchError.code, ERROR_TIMESTAMP))
        period = self._get("delegation.token.expiry.time.ms")
        if renew_period_ms > 0:
            period = min(period, renew_period_ms)
        expiry = min(token.max_timestamp, _plus(now_ms, period))
        record = _with_expiration(token, expiry)
        return ControllerResult([record], (0, expiry))

    def expire(
        self, image: MetadataImage, hmac: bytes, expiry_period_ms: int, caller: str | None, now_ms: int
    ) -> ControllerResult[tuple[int, int]]:
        """(error code, new expiry timestamp)."""
        secret = self.secret
        if secret is None:
            return ControllerResult([], (DelegationTokenAuthDisabledError.code, ERROR_TIMESTAMP))
        token = find_by_hmac(image.delegation_tokens, secret, hmac)
        if token is None:
            return ControllerResult([], (DelegationTokenNotFoundError.code, ERROR_TIMESTAMP))
        if caller is not None and not owner_or_renewer(token, caller):
            return ControllerResult([], (DelegationTokenOwnerMismatchError.code, ERROR_TIMESTAMP))
        if expiry_period_ms < 0:
            log.info("delegation token %s of %s expired by request", token.token_id, token.owner)
            return ControllerResult([RemoveDelegationTokenRecord(token.token_id)], (0, now_ms))
        if is_expired(token, now_ms):
            return ControllerResult([], (DelegationTokenExpiredError.code, ERROR_TIMESTAMP))
        expiry = min(token.max_timestamp, _plus(now_ms, expiry_period_ms))
        return ControllerResult([_with_expiration(token, expiry)], (0, expiry))

    @staticmethod
    def sweep(image: MetadataImage, now_ms: int) -> list[MetadataRecord]:
        """``RemoveDelegationTokenRecord``s of every expired token (the periodic check)."""
        out: list[MetadataRecord] = []
        for token_id in sorted(image.delegation_tokens):
            token = image.delegation_tokens[token_id]
            if is_expired(token, now_ms):
                log.info("delegation token %s of %s expired: removed", token_id, token.owner)
                out.append(RemoveDelegationTokenRecord(token_id))
        return out


def _with_expiration(token: DelegationTokenRecord, expiration: int) -> DelegationTokenRecord:
    return DelegationTokenRecord(
        token.token_id,
        token.owner,
        token.requester,
        token.renewers,
        token.issue_timestamp,
        token.max_timestamp,
        expiration,
    )
