"""Client-side errors: what goes wrong before or around a broker's answer.

Broker answers carry Kafka error codes, raised as the :mod:`zurau.protocol.errors` classes
(``UnknownTopicOrPartitionError``, ``InvalidConfigError``, ...). The classes here cover what no
error code describes: no broker reachable, a connection lost, a request that got no answer in
time, a configuration this client refuses. Each has a one-line message fit for a command line.
"""

from __future__ import annotations


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
