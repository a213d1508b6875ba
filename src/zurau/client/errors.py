"""Client-side errors: what goes wrong before or around a broker's answer.

Broker answers carry Kafka error codes, raised as the :mod:`zurau.protocol.errors` classes
(``UnknownTopicOrPartitionError``, ``InvalidConfigError``, ...). The classes here cover what no
error code describes: no broker reachable, a connection lost, a request that got no answer in
time, a configuration this client refuses. Each has a one-line message fit for a command line.

:func:`kafka_error_name` and :func:`describe_error` word any error for a person: the command line,
the console's web API and the other edge services show a Kafka error as
``<message> [<KAFKA_ERROR_NAME>]`` (Kafka's ``Errors`` names).
"""

from __future__ import annotations

import re

from zurau.protocol.errors import KafkaError


class ClientError(Exception):
    """Base for errors raised by the client itself (not by a broker's error code)."""


class ClientConfigError(ClientError):
    """A client property is missing, unknown or has a value this client does not support."""


class BrokerUnreachableError(ClientError):
    """No connection could be made to a broker (or to any bootstrap server)."""


class ConnectionLostError(ClientError):
    """The connection closed while requests were waiting for their answers."""


class RequestTimeoutError(ClientError):
    """A request got no answer within its timeout (``request.timeout.ms``)."""


class UnsupportedApiError(ClientError):
    """The broker does not serve the API, or no version both sides speak."""


class AuthenticationError(ClientError):
    """The broker refused this client's SASL credentials or mechanism."""


# Kafka's ``Errors`` names that do not follow from the exception class name.
_ERROR_NAMES = {
    -1: "UNKNOWN_SERVER_ERROR",
    2: "CORRUPT_MESSAGE",
    17: "INVALID_TOPIC_EXCEPTION",
    56: "KAFKA_STORAGE_ERROR",
}


def kafka_error_name(err: KafkaError) -> str:
    """``UnknownTopicOrPartitionError`` -> ``UNKNOWN_TOPIC_OR_PARTITION`` (Kafka's ``Errors`` name)."""
    if type(err) is KafkaError:
        return "KAFKA_ERROR"
    if err.code in _ERROR_NAMES:
        return _ERROR_NAMES[err.code]
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(err).__name__.removesuffix("Error")).upper()


def describe_error(e: BaseException) -> str:
    """``<message> [<KAFKA_ERROR_NAME>]`` for a Kafka error, else the exception's text."""
    if isinstance(e, KafkaError):
        msg = e.message or ""
        name = kafka_error_name(e)
        return f"{msg} [{name}]" if msg and msg != type(e).__name__ else name
    return str(e) or type(e).__name__
