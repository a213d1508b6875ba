"""Output formats of ``zurau consume``: kcat-style format strings, Kafka's console properties, JSON.

Format strings (``--format``), as kcat's ``-f``:

=====  =====================================================
token  expands to
=====  =====================================================
%t     topic
%p     partition
%o     offset
%T     timestamp (ms since the epoch)
%k     key (empty for a null key)
%K     key length in bytes (-1 for a null key)
%s     value (empty for a null value)
%S     value length in bytes (-1 for a null value)
%h     headers as ``k=v`` joined by ``,`` (a null value prints as ``k``)
%%     a percent sign
=====  =====================================================

and the escapes ``\\n``, ``\\t``, ``\\r``, ``\\0``, ``\\\\``. The default is ``%s\\n``.

``--format json`` writes one JSON object per record and line: ``topic``, ``partition``, ``offset``,
``timestamp``, ``timestamp_type`` (``CreateTime``/``LogAppendTime``), ``key``, ``value`` and
``headers`` (a list of ``[name, value]``). Keys and values are UTF-8 text when they decode as such,
else base64 with ``key_encoding``/``value_encoding`` set to ``"base64"``.

Kafka's console-consumer properties (``--property print.key=true`` ...) build the equivalent of
Kafka's ``DefaultMessageFormatter``: optional ``CreateTime:<ts>``, ``Partition:<p>``,
``Offset:<o>``, headers (``k:v`` joined by ``,``, or ``NO_HEADERS``), key, then value, separated by
``key.separator`` (tab) and ended by ``line.separator`` (newline); nulls print as ``null``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

from zurau.client.types import ConsumerRecord

Formatter = Callable[[ConsumerRecord], bytes]

_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "0": b"\0", "\\": b"\\"}


def _headers_text(r: ConsumerRecord, sep: bytes = b",", kv: bytes = b"=", null: bytes | None = None) -> bytes:
    parts = []
    for k, v in r.headers:
        name = k.encode("utf-8", "surrogateescape")
        if v is None:
            parts.append(name if null is None else name + kv + null)
        else:
            parts.append(name + kv + bytes(v))
    return sep.join(parts)


_TOKENS: dict[str, Callable[[ConsumerRecord], bytes]] = {
    "t": lambda r: r.topic.encode(),
    "p": lambda r: str(r.partition).encode(),
    "o": lambda r: str(r.offset).encode(),
    "T": lambda r: str(r.timestamp).encode(),
    "k": lambda r: b"" if r.key is None else bytes(r.key),
    "K": lambda r: b"-1" if r.key is None else str(len(r.key)).encode(),
    "s": lambda r: b"" if r.value is None else bytes(r.value),
    "S": lambda r: b"-1" if r.value is None else str(len(r.value)).encode(),
    "h": _headers_text,
}


def compile_format(fmt: str) -> Formatter:
    """Compile a kcat-style format string; ValueError for an unknown ``%`` token."""
    parts: list[bytes | Callable[[ConsumerRecord], bytes]] = []
    lit = bytearray()
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c == "%" and i + 1 < len(fmt):
            tok = fmt[i + 1]
            i += 2
            if tok == "%":
                lit += b"%"
                continue
            getter = _TOKENS.get(tok)
            if getter is None:
                raise ValueError(f"unknown format token %{tok} (known: %t %p %o %T %k %K %s %S %h %%)")
            if lit:
                parts.append(bytes(lit))
                lit.clear()
            parts.append(getter)
            continue
        if c == "\\" and i + 1 < len(fmt) and fmt[i + 1] in _ESCAPES:
            lit += _ESCAPES[fmt[i + 1]]
            i += 2
            continue
        lit += c.encode()
        i += 1
    if lit:
        parts.append(bytes(lit))
    frozen = tuple(parts)

    def render(r: ConsumerRecord) -> bytes:
        return b"".join(p if isinstance(p, bytes) else p(r) for p in frozen)

    return render


def _text_or_base64(data: bytes | None) -> tuple[str | None, bool]:
    if data is None:
        return None, False
    try:
        return bytes(data).decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(bytes(data)).decode("ascii"), True


def record_json(r: ConsumerRecord) -> dict[str, Any]:
    key, key_b64 = _text_or_base64(r.key)
    value, value_b64 = _text_or_base64(r.value)
    doc: dict[str, Any] = {
        "topic": r.topic,
        "partition": r.partition,
        "offset": r.offset,
        "timestamp": r.timestamp,
        "timestamp_type": "LogAppendTime" if r.timestamp_type == 1 else "CreateTime",
        "key": key,
        "value": value,
        "headers": [[k, _text_or_base64(v)[0]] for k, v in r.headers],
    }
    if key_b64:
        doc["key_encoding"] = "base64"
    if value_b64:
        doc["value_encoding"] = "base64"
    return doc


def json_formatter(r: ConsumerRecord) -> bytes:
    return json.dumps(record_json(r), ensure_ascii=False).encode() + b"\n"


def _unescape(text: str) -> bytes:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in _ESCAPES:
            out += _ESCAPES[text[i + 1]]
            i += 2
        else:
            out += text[i].encode()
            i += 1
    return bytes(out)


KAFKA_PROPERTIES = (
    "print.timestamp", "print.partition", "print.offset", "print.headers", "print.key", "print.value",
    "key.separator", "line.separator", "headers.separator", "headers.key.separator", "null.literal",
)  # fmt: skip


def kafka_formatter(props: Mapping[str, str]) -> Formatter:
    """Kafka's DefaultMessageFormatter from console-consumer ``--property`` values."""
    unknown = sorted(set(props) - set(KAFKA_PROPERTIES))
    if unknown:
        raise ValueError(f"unknown --property {', '.join(unknown)} (known: {', '.join(KAFKA_PROPERTIES)})")

    def flag(name: str, default: bool) -> bool:
        v = props.get(name)
        return default if v is None else v.strip().lower() == "true"

    sep = _unescape(props.get("key.separator", "\\t"))
    end = _unescape(props.get("line.separator", "\\n"))
    hsep = _unescape(props.get("headers.separator", ","))
    hkv = _unescape(props.get("headers.key.separator", ":"))
    null = _unescape(props.get("null.literal", "null"))
    show = [flag(n, d) for n, d in (("print.timestamp", False), ("print.partition", False), ("print.offset", False),
                                    ("print.headers", False), ("print.key", False), ("print.value", True))]  # fmt: skip

    def render(r: ConsumerRecord) -> bytes:
        fields = []
        if show[0]:
            kind = "LogAppendTime" if r.timestamp_type == 1 else "CreateTime"
            fields.append(f"{kind}:{r.timestamp}".encode() if r.timestamp >= 0 else b"NO_TIMESTAMP")
        if show[1]:
            fields.append(f"Partition:{r.partition}".encode())
        if show[2]:
            fields.append(f"Offset:{r.offset}".encode())
        if show[3]:
            fields.append(_headers_text(r, hsep, hkv, null) if r.headers else b"NO_HEADERS")
        if show[4]:
            fields.append(null if r.key is None else bytes(r.key))
        if show[5]:
            fields.append(null if r.value is None else bytes(r.value))
        return sep.join(fields) + end

    return render


def make_formatter(fmt: str | None, properties: Mapping[str, str]) -> Formatter:
    """``--format`` (a format string or ``json``) or Kafka ``--property`` values; default ``%s\\n``."""
    if fmt is not None and properties:
        raise ValueError("give either --format or --property, not both")
    if properties:
        return kafka_formatter(properties)
    if fmt is None:
        return compile_format("%s\\n")
    if fmt.strip().lower() == "json":
        return json_formatter
    return compile_format(fmt)
