"""What the REST proxy's endpoints accept in a JSON request body, checked in one place on top of
:mod:`zurau.edge_requests` (which bounds the body's size and its JSON's nesting, and holds
numbers to Kafka's ranges).

Accepted, and refused (always with Confluent's error body; 400 with code 400 unless the caller
passes its own ``error``, as the v2 consumer API does for Jackson's 422):

* :func:`read_json`: the body as any JSON value. Refused: more than ``max.request.bytes`` (413,
  before reading when ``Content-Length`` says so), not UTF-8, not JSON, ``NaN``/``Infinity``,
  nested deeper than :data:`~zurau.edge_requests.MAX_JSON_DEPTH` (400, by
  :func:`~zurau.edge_requests.parse_json`); an empty or blank body is refused with
  ``if_empty()`` (by default :func:`empty_body`: 400 "Null input provided. Data is required", as
  Confluent answers), or read as ``None`` when ``if_empty`` is ``None``.
* :func:`json_object`: as :func:`read_json`, and the value must be a JSON object.
* :func:`text`: a value bound for a string field, read as Jackson reads it into a ``String``:
  a string or null as it is, a number or boolean as its JSON text (``7`` -> ``"7"``, ``true``
  -> ``"true"``); an object or array is refused.
* :func:`required_text`: a non-empty JSON string; absent, null, another type or ``""`` refused.
* :func:`optional_bool`: absent or null is false, a JSON boolean is itself; with ``from_text``
  also ``"true"``/``"false"`` in any case (Jackson's coercion of scalars); anything else refused.
* :func:`optional_int`: absent or null is ``None``; otherwise a JSON integer (not a boolean)
  within the Kafka type's range (:func:`~zurau.edge_requests.kafka_int`, 400 otherwise).
* :func:`query_int` (a query parameter rather than a body field, kept with its body twin):
  absent or empty is ``None``; otherwise a decimal within the Kafka type's range and
  ``minimum`` (:func:`~zurau.edge_requests.parse_kafka_int`, 400 otherwise).

The helpers read only the fields they are given, so unknown fields are ignored, as Confluent's
proxy ignores them. Messages name the field as the caller spells it (``data[2].value``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.requests import Request

from zurau.edge_requests import kafka_int, parse_json, parse_kafka_int, read_body
from zurau.rest_proxy.errors import RestProxyError, bad_request
from zurau.rest_proxy.proxy_api import ProxyApi

ErrorFactory = Callable[[str], RestProxyError]

EMPTY_BODY = "Null input provided. Data is required (the request body is empty)."
"""Confluent's message for a request without the body it needs, saying why."""



def empty_body() -> RestProxyError:
    """Confluent's answer to a request without the body it needs (400)."""
    return bad_request(EMPTY_BODY)


def json_type(value: Any) -> str:
    """How an error message names the JSON type of ``value``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


async def read_json(
    api: ProxyApi, request: Request, *, if_empty: Callable[[], RestProxyError] | None = empty_body
) -> Any:
    """The request body's JSON value (see the module docstring for what is refused); an empty
    body raises ``if_empty()``, or is ``None`` when ``if_empty`` is ``None``."""
    raw = await read_body(request, api.config.max_request_bytes)
    if not raw.strip():
        if if_empty is None:
            return None
        raise if_empty()
    return parse_json(raw)


async def json_object(api: ProxyApi, request: Request) -> dict[str, Any]:
    """The request body, which must be a JSON object (400 otherwise)."""
    body = await read_json(api, request)
    if not isinstance(body, dict):
        raise bad_request(f"The request body must be a JSON object, not {json_type(body)}.")
    return body


def text(value: Any, field: str, *, error: ErrorFactory = bad_request) -> str | None:
    """``value`` bound for a string field, as Jackson coerces scalars (module docstring)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return json.dumps(value)
    raise error(f"{field} must be a string or null, not {json_type(value)}.")


def required_text(value: Any, field: str, *, error: ErrorFactory = bad_request) -> str:
    """``value``, which must be a non-empty JSON string."""
    if value is None:
        raise error(f"{field} is required")
    if not isinstance(value, str):
        raise error(f"{field} must be a string, not {json_type(value)}")
    if not value:
        raise error(f"{field} must not be empty")
    return value


def optional_bool(value: Any, field: str, *, from_text: bool = False, error: ErrorFactory = bad_request) -> bool:
    """``value`` as a boolean field: absent is false; ``from_text`` takes "true"/"false" too."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if from_text and isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise error(f"{field} must be a boolean, not {json_type(value)}.")


def optional_int(value: Any, kind: str, field: str) -> int | None:
    """``value`` as an optional Kafka ``int16``/``int32``/``int64`` field."""
    return None if value is None else kafka_int(value, kind, field)


def query_int(request: Request, name: str, kind: str = "int64", minimum: int | None = None) -> int | None:
    """The query parameter ``name`` as an optional Kafka ``int16``/``int32``/``int64``."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    return parse_kafka_int(raw, kind, name, minimum)
