"""What every HTTP edge service (schema registry, Connect, console) accepts from a client, checked
once: the request body, its JSON, numbers bound for the Kafka protocol, boolean query
parameters and the methods a path allows.

Invariants (each service turns :class:`BadInput` into its own error body: Confluent's or
Kafka's ``{"error_code": N, "message": "..."}``, the console's ``{"error": ..., "kind": ...}``):

* :func:`read_body` never holds more than ``limit`` bytes: a declared ``Content-Length`` above
  the limit is refused before anything is read, and the size is checked again after every chunk
  while streaming (413). A client that disconnects mid-body is logged at INFO, without a
  traceback, and answered 400 (the answer goes nowhere).
* :func:`parse_json` answers 400 for anything that is not UTF-8 JSON (a string escaping a lone
  surrogate included, since no UTF-8 encoder takes it later; so are ``NaN``/``Infinity`` and a
  number beyond a double's range such as ``1e400``, which would be echoed back as non-JSON) nested at most
  ``max_depth`` arrays/objects deep (:data:`MAX_JSON_DEPTH`); it never lets ``json.loads``'s
  ``RecursionError`` escape: the depth is measured on the text before parsing (a few linear
  passes at C speed, see :func:`nesting_exceeds`), never on the interpreter's stack.
* :func:`kafka_int` / :func:`parse_kafka_int` refuse (400) numbers outside the Kafka protocol's
  ``int16``/``int32``/``int64`` (or a tighter ``minimum``) before they reach a client call or an
  encoder; a string of more than 20 digits is refused without converting it.
* :func:`query_flag` parses a boolean query parameter as JAX-RS does (``Boolean.valueOf``): only
  ``true``, in any case, is true; absent is the default.
* :func:`allowed_methods` lists the methods every route matching a path allows, for the
  ``Allow`` header of a 405 (RFC 9110 §15.5.6).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

log = logging.getLogger("zurau.edge")

MAX_JSON_DEPTH = 64
"""Arrays/objects nested deeper than this in a request body are refused with 400. No edge API
takes bodies nested more than a few levels (a produced JSON message value included)."""

INT16 = (-(2**15), 2**15 - 1)
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
RANGES = {"int16": INT16, "int32": INT32, "int64": INT64}


class BadInput(Exception):
    """Input the service refuses before acting on it: ``status`` is 400 or 413 (or 422 where the
    service says so); ``disconnected`` when the client went away mid-body."""

    def __init__(self, status: int, message: str, disconnected: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.disconnected = disconnected


def too_large(limit: int) -> BadInput:
    return BadInput(413, f"Request body larger than {limit} bytes")


async def read_body(request: Any, limit: int) -> bytes:
    """The body of a Starlette ``request``, at most ``limit`` bytes (see the module docstring).
    Read once: a second call returns the same bytes (kept on ``request.state``)."""
    from starlette.requests import ClientDisconnect

    cached = getattr(request.state, "edge_body", None)
    if cached is not None:
        return bytes(cached)
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise too_large(limit)
            chunks.append(chunk)
    except ClientDisconnect:
        log.info("client disconnected while sending %s %s (after %d bytes)", request.method, request.url.path, size)
        raise BadInput(400, "the client disconnected before sending the whole request body", True) from None
    raw = b"".join(chunks)
    request.state.edge_body = raw
    return raw


# A JSON string with its escapes: removed before brackets are counted, so brackets in strings do not count.
_STRING = re.compile(rb'"(?:[^"\\]+|\\.)*"', re.DOTALL)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")  # the depth does not depend on the kind of bracket
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def nesting_exceeds(raw: bytes, max_depth: int) -> bool:
    """Whether the JSON text ``raw`` nests arrays/objects more than ``max_depth`` deep.

    Linear passes at C speed, never recursion: strings are removed, everything but brackets is
    dropped (braces become square brackets), then each pass removes the innermost (empty)
    pairs; the number of passes is the depth. Malformed text is left for the parser to refuse."""
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return False
    brackets = _STRING.sub(b"", raw).translate(_AS_SQUARE, _NOT_BRACKETS)
    for _ in range(max_depth):
        shorter = brackets.replace(b"[]", b"")  # exactly one level per pass
        if not shorter or shorter == brackets:
            return False
        brackets = shorter
    return True


def parse_json(raw: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``raw`` parsed as JSON, or :class:`BadInput` 400 (not UTF-8, not JSON, nested too deep)."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(400, f"not UTF-8: {e}") from None
    if nesting_exceeds(data, max_depth):
        raise BadInput(400, f"the JSON is nested more than {max_depth} levels deep")
    try:
        value = json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise BadInput(400, f"the JSON is nested more than {max_depth} levels deep") from None
    except ValueError as e:
        raise BadInput(400, f"not JSON: {e}") from None
    if _SURROGATE_ESCAPE.search(data):  # "\ud800" alone parses to a str no UTF-8 encoder takes
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise BadInput(400, "not UTF-8: the JSON escapes a lone surrogate (\\ud800-\\udfff)") from None
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is out of a double's range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def kafka_int(value: Any, kind: str, name: str, minimum: int | None = None) -> int:
    """``value`` (a JSON number, not a boolean) checked against the Kafka type ``kind``
    (``int16``, ``int32``, ``int64``) and ``minimum``; :class:`BadInput` 400 otherwise."""
    low, high = RANGES[kind]
    if minimum is not None:
        low = max(low, minimum)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(400, f"{name} must be an integer, not {_short(value)}")
    if not low <= value <= high:
        raise BadInput(400, f"{name} must be between {low} and {high} (Kafka's {kind}), not {_short(value)}")
    return value


def parse_kafka_int(text: str, kind: str, name: str, minimum: int | None = None) -> int:
    """A decimal string as :func:`kafka_int` (at most 20 digits are converted)."""
    s = text.strip()
    digits = s[1:] if s[:1] in "+-" else s
    if not digits.isascii() or not digits.isdigit():
        raise BadInput(400, f"{name} must be a whole number, not {_short(text)}")
    if len(digits.lstrip("0")) > 20:
        low, high = RANGES[kind]
        raise BadInput(400, f"{name} must be between {low} and {high} (Kafka's {kind}), not a {len(digits)}-digit number")
    return kafka_int(int(s), kind, name, minimum)


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 256 else f"a {value.bit_length()}-bit number"
    return text if len(text) <= 60 else text[:57] + "..."


def query_flag(params: Mapping[str, str], name: str, default: bool = False) -> bool:
    """A boolean query parameter as JAX-RS parses it: only ``true`` (any case) is true."""
    raw = params.get(name)
    if raw is None:
        return default
    return raw.lower() == "true"


def allowed_methods(routes: Sequence[Any], scope: Mapping[str, Any]) -> list[str]:
    """The methods of every Starlette route whose path matches ``scope``'s (HEAD with GET)."""
    from starlette.routing import Match

    methods: set[str] = set()
    for route in routes:
        route_methods = getattr(route, "methods", None)
        if not route_methods:
            continue
        match, _ = route.matches({**scope, "type": "http"})
        if match != Match.NONE:
            methods.update(route_methods)
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)
