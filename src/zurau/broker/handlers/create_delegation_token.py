"""CreateDelegationToken (KIP-48, KIP-373): a token for the caller or, with CREATE_TOKENS on the
owner's USER resource, for another owner; decided by the controller
(:mod:`zurau.metadata.controller.delegation_token_control`), which writes the token to the
metadata log, as Kafka 4.x forwards it.

Checked here first, in Kafka's order: the connection may ask for tokens
(:func:`~zurau.broker.handlers._tokens.token_requests_allowed`, else
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); an owner other than the caller needs CREATE_TOKENS on
``USER:<owner>`` (else DELEGATION_TOKEN_AUTHORIZATION_FAILED); every renewer must be a ``User``
(else INVALID_PRINCIPAL_TYPE). On a controller listener the request comes from a node that
checked all this: the owner it names is also taken as the requester.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import USER_RESOURCE, Op, allowed
from zurau.broker.handlers._tokens import token_requests_allowed
from zurau.broker.request_context import RequestContext
from zurau.metadata.delegation_token import USER_TYPE, principal, split_principal
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    DelegationTokenAuthorizationFailedError,
    DelegationTokenRequestNotAllowedError,
    InvalidPrincipalTypeError,
)
from zurau.protocol.messages import CreateDelegationTokenRequest, CreateDelegationTokenResponse

API_KEY = ApiKey.CREATE_DELEGATION_TOKEN


def _error(code: int, owner: str, requester: str) -> CreateDelegationTokenResponse:
    owner_type, owner_name = split_principal(owner)
    requester_type, requester_name = split_principal(requester)
    return {
        "error_code": code,
        "principal_type": owner_type,
        "principal_name": owner_name,
        "token_requester_principal_type": requester_type,
        "token_requester_principal_name": requester_name,
        "issue_timestamp_ms": -1,
        "expiry_timestamp_ms": -1,
        "max_timestamp_ms": -1,
        "token_id": "",
        "hmac": b"",
        "throttle_time_ms": 0,
    }


async def handle(ctx: RequestContext, req: CreateDelegationTokenRequest) -> CreateDelegationTokenResponse:
    requester = ctx.principal
    owner_name = req.get("owner_principal_name")
    owner = principal(req.get("owner_principal_type") or USER_TYPE, owner_name) if owner_name else requester
    renewers = [principal(r["principal_type"], r["principal_name"]) for r in req["renewers"]]
    if ctx.on_controller_listener:
        requester = owner
    elif not token_requests_allowed(ctx):
        return _error(DelegationTokenRequestNotAllowedError.code, owner, requester)
    elif owner != requester and not allowed(ctx, Op.CREATE_TOKENS, USER_RESOURCE, owner):
        return _error(DelegationTokenAuthorizationFailedError.code, owner, requester)
    elif any(r["principal_type"] != USER_TYPE for r in req["renewers"]):
        return _error(InvalidPrincipalTypeError.code, owner, requester)
    return await ctx.controller.create_delegation_token(owner, requester, renewers, req["max_lifetime_ms"])
