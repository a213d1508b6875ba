"""The REST proxy's errors: Confluent's error body and codes, and one wrapper that turns anything a
handler raises into that body.

Every error answer is ``{"error_code": int, "message": str}`` with Confluent's kafka-rest codes
(the HTTP status times 100 plus a detail digit, or the bare status): 40401 topic not found, 40402
partition not found, 40403 consumer instance not found, 40404 leader not available, 40801
(consumer poll) timeout and a record not in the consumer's format, 40601 a read whose Accept
does not match the consumer's format, 40901 already subscribed, 40902 consumer instance already
exists, 40903 illegal consumer state, 40002/40101/40301 a request the brokers refused as invalid,
unauthenticated or unauthorized, 42201-42208 missing or bad schemas and records (42204 an invalid
consumer configuration), 50002 a Kafka error, 50003 a retriable Kafka error, 50301 the cluster
(or the schema registry) is not reachable.

Invariant: :func:`endpoint` never lets an exception escape as a 500 without a body: a
:class:`RestProxyError` keeps its status and code, :class:`~zurau.edge_requests.BadInput` gives
400/413, a Kafka error is mapped by :func:`from_kafka_error`, a client that cannot reach the
cluster gives 503 (the proxy reconnects on the next request), and anything else is logged with
its traceback and answered 500 with code 50002.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from zurau.client.errors import (
    BrokerUnreachableError,
    ClientError,
    ConnectionLostError,
    RequestTimeoutError,
    describe_error,
)
from zurau.edge_requests import BadInput
from zurau.protocol.errors import KafkaError

log = logging.getLogger("zurau.rest_proxy")

# Confluent's kafka-rest error codes (io.confluent.kafkarest.Errors and rest-utils).
TOPIC_NOT_FOUND = 40401
PARTITION_NOT_FOUND = 40402
CONSUMER_INSTANCE_NOT_FOUND = 40403
LEADER_NOT_AVAILABLE = 40404
CONSUMER_POLL_TIMEOUT = 40801
CONSUMER_FORMAT_MISMATCH = 40601  # HTTP 406
CONSUMER_ALREADY_SUBSCRIBED = 40901
CONSUMER_ALREADY_EXISTS = 40902
ILLEGAL_STATE = 40903
KAFKA_BAD_REQUEST = 40002  # a request the brokers refused as malformed or invalid
KAFKA_AUTHENTICATION_ERROR = 40101
KAFKA_AUTHORIZATION_ERROR = 40301
KEY_SCHEMA_MISSING = 42201
VALUE_SCHEMA_MISSING = 42202
JSON_CONVERSION = 42203  # data that does not fit its schema
INVALID_CONSUMER_CONFIG = 42204
INVALID_SCHEMA = 42205
INVALID_PAYLOAD = 42206  # a record that cannot be written or read as asked (no registry, bad format)
SERIALIZATION = 42207
PRODUCE_BATCH = 42208  # bad, repeated or too many entry ids in records:batch
KAFKA_ERROR = 50002
KAFKA_RETRIABLE_ERROR = 50003
CLUSTER_UNREACHABLE = 50301


class RestProxyError(Exception):
    """An answer other than success: HTTP ``status``, Confluent ``error_code`` and ``message``."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message

    def body(self) -> dict[str, Any]:
        return {"error_code": self.error_code, "message": self.message}


def not_found(message: str, error_code: int = 404) -> RestProxyError:
    return RestProxyError(404, error_code, message)


def bad_request(message: str, error_code: int = 400) -> RestProxyError:
    return RestProxyError(400, error_code, message)


def unprocessable(message: str, error_code: int = 422) -> RestProxyError:
    return RestProxyError(422, error_code, message)


# Kafka error codes whose meaning is the client's mistake, with the HTTP status and code
# Confluent's proxy answers them with.
_CLIENT_SIDE: dict[int, tuple[int, int]] = {
    3: (404, TOPIC_NOT_FOUND),  # UNKNOWN_TOPIC_OR_PARTITION
    10: (413, 413),  # MESSAGE_TOO_LARGE
    17: (400, 400),  # INVALID_TOPIC_EXCEPTION
    18: (413, 413),  # RECORD_LIST_TOO_LARGE
    29: (403, KAFKA_AUTHORIZATION_ERROR),  # TOPIC_AUTHORIZATION_FAILED
    32: (400, 400),  # INVALID_TIMESTAMP (a produced record's timestamp out of the broker's range)
    30: (403, KAFKA_AUTHORIZATION_ERROR),  # GROUP_AUTHORIZATION_FAILED
    31: (403, KAFKA_AUTHORIZATION_ERROR),  # CLUSTER_AUTHORIZATION_FAILED
    36: (400, KAFKA_BAD_REQUEST),  # TOPIC_ALREADY_EXISTS
    37: (400, 400),  # INVALID_PARTITIONS
    38: (400, 400),  # INVALID_REPLICATION_FACTOR
    39: (400, 400),  # INVALID_REPLICA_ASSIGNMENT
    40: (400, 400),  # INVALID_CONFIG
    42: (400, 400),  # INVALID_REQUEST
    44: (400, 400),  # POLICY_VIOLATION
    53: (403, KAFKA_AUTHORIZATION_ERROR),  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    54: (400, 400),  # SECURITY_DISABLED
    58: (401, KAFKA_AUTHENTICATION_ERROR),  # SASL_AUTHENTICATION_FAILED
    68: (400, 400),  # NON_EMPTY_GROUP
    69: (404, 404),  # GROUP_ID_NOT_FOUND
    87: (422, 42200),  # INVALID_RECORD
}


def from_kafka_error(e: KafkaError) -> RestProxyError:
    """A Kafka error as Confluent answers it: the client's mistakes as 4xx (above), retriable
    errors as 500/50003 and the rest as 500/50002."""
    message = describe_error(e)
    mapped = _CLIENT_SIDE.get(e.code)
    if mapped is not None:
        return RestProxyError(mapped[0], mapped[1], message)
    if e.retriable:
        return RestProxyError(500, KAFKA_RETRIABLE_ERROR, message)
    return RestProxyError(500, KAFKA_ERROR, message)


def error_response(e: RestProxyError) -> Response:
    return Response(json.dumps(e.body()), status_code=e.status, media_type="application/json")


def to_rest_error(e: BaseException) -> RestProxyError:
    """What any exception from a handler is answered with (see the module docstring)."""
    if isinstance(e, RestProxyError):
        return e
    if isinstance(e, BadInput):
        return RestProxyError(e.status, e.status, e.message)
    if isinstance(e, KafkaError):
        return from_kafka_error(e)
    if isinstance(e, (BrokerUnreachableError, ConnectionLostError, RequestTimeoutError, OSError, TimeoutError)):
        return RestProxyError(503, CLUSTER_UNREACHABLE, f"the Kafka cluster is not reachable: {e}")
    if isinstance(e, ClientError):
        return RestProxyError(500, KAFKA_ERROR, str(e))
    log.exception("unexpected error in the REST proxy", exc_info=e)
    return RestProxyError(500, KAFKA_ERROR, f"internal error: {type(e).__name__}")


Handler = Callable[[Request], Awaitable[Response]]


def endpoint(fn: Handler) -> Handler:
    """Wrap a Starlette handler so that every exception becomes Confluent's error body."""

    @functools.wraps(fn)
    async def wrapped(request: Request) -> Response:
        try:
            return await fn(request)
        except Exception as e:  # noqa: BLE001 - every error gets an answer (module docstring)
            return error_response(to_rest_error(e))

    return wrapped
