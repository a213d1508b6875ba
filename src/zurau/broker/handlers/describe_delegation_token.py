"""DescribeDelegationToken (KIP-48): the tokens of the broker's metadata image that the caller may
see, with their HMACs (as Kafka's ``DelegationTokenManager.filterToken``):

* refused on connections that may not ask for tokens
  (:func:`~zurau.broker.handlers._tokens.token_requests_allowed`):
  DELEGATION_TOKEN_REQUEST_NOT_ALLOWED; without a secret key: DELEGATION_TOKEN_AUTH_DISABLED;
* ``owners`` empty: no token; null: every token; else only the tokens one of the named principals
  owns or renews;
* of those, a token is shown to its owner and renewers, and to a principal allowed DESCRIBE on
  ``DELEGATION_TOKEN:<token id>`` or DESCRIBE_TOKENS on ``USER:<owner>``.

Tokens that have expired but that the controller's periodic check has not removed yet are still
described (their expiry timestamp says so), as in Kafka. Tokens come in token id order.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import USER_RESOURCE, Op, allowed
from zurau.broker.handlers._tokens import token_requests_allowed
from zurau.broker.request_context import RequestContext
from zurau.metadata.delegation_token import (
    owner_or_renewer,
    principal,
    secret_key,
    split_principal,
    token_hmac,
)
from zurau.protocol.acl import ResourceType
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import DelegationTokenAuthDisabledError, DelegationTokenRequestNotAllowedError
from zurau.protocol.messages import (
    DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse,
    DescribeDelegationTokenResponseTokens,
)

API_KEY = ApiKey.DESCRIBE_DELEGATION_TOKEN


def handle(ctx: RequestContext, req: DescribeDelegationTokenRequest) -> DescribeDelegationTokenResponse:
    trusted = ctx.on_controller_listener  # a cluster node (see connection.py): every token
    if not trusted and not token_requests_allowed(ctx):
        return {"error_code": DelegationTokenRequestNotAllowedError.code, "tokens": [], "throttle_time_ms": 0}
    secret = secret_key(ctx.config)
    if secret is None:
        return {"error_code": DelegationTokenAuthDisabledError.code, "tokens": [], "throttle_time_ms": 0}
    wanted = req["owners"]
    owners = None if wanted is None else [principal(o["principal_type"], o["principal_name"]) for o in wanted]
    caller = ctx.principal
    out: list[DescribeDelegationTokenResponseTokens] = []
    tokens = ctx.image.delegation_tokens
    for token_id in sorted(tokens):
        token = tokens[token_id]
        if owners is not None and not any(owner_or_renewer(token, o) for o in owners):
            continue
        if not (
            trusted
            or owner_or_renewer(token, caller)
            or allowed(ctx, Op.DESCRIBE, ResourceType.DELEGATION_TOKEN, token_id)
            or allowed(ctx, Op.DESCRIBE_TOKENS, USER_RESOURCE, token.owner)
        ):
            continue
        owner_type, owner_name = split_principal(token.owner)
        requester_type, requester_name = split_principal(token.requester)
        out.append(
            {
                "principal_type": owner_type,
                "principal_name": owner_name,
                "token_requester_principal_type": requester_type,
                "token_requester_principal_name": requester_name,
                "issue_timestamp": token.issue_timestamp,
                "expiry_timestamp": token.expiration_timestamp,
                "max_timestamp": token.max_timestamp,
                "token_id": token_id,
                "hmac": token_hmac(secret, token_id),
                "renewers": [
                    {"principal_type": t, "principal_name": n}
                    for t, n in map(split_principal, token.renewers)
                ],
            }
        )
    return {"error_code": 0, "tokens": out, "throttle_time_ms": 0}
