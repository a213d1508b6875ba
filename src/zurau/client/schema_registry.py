"""A small synchronous client of Confluent's Schema Registry REST API, and the Confluent wire format.

Any registry with Confluent's API works (Zurau's own, Confluent's, Karapace, Redpanda's). Used
where a full client library would be a burden: Spark executors decoding records, tools.

Wire format (Confluent's "framing") of a record key or value written by a registry-aware
serializer::

    byte 0      magic byte, 0
    bytes 1-4   schema id, big-endian signed int32 (the registry's global id)
    bytes 5-    the serialized payload (Avro binary without a container, JSON text, or for
                Protobuf a message-index list then the message)

Schemas are immutable once registered, so the id -> schema cache never expires; subject lookups
("latest") are not cached. The cache is per client and thread-safe.
"""

from __future__ import annotations

import json
import struct
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

MAGIC = 0
_HEADER = struct.Struct(">bi")
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class SchemaRegistryError(Exception):
    """The registry answered with an error (``status``, Confluent's ``error_code``), or could not be
    reached (``status`` 0)."""

    def __init__(self, message: str, status: int = 0, error_code: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code


class FramingError(ValueError):
    """Bytes that are not in the Confluent wire format."""


def frame(schema_id: int, payload: bytes) -> bytes:
    """``payload`` behind the magic byte and ``schema_id``."""
    return _HEADER.pack(MAGIC, schema_id) + payload


def unframe(data: bytes) -> tuple[int, bytes]:
    """(schema id, payload) of Confluent-framed ``data``; FramingError when it is not framed."""
    if len(data) < _HEADER.size:
        raise FramingError(f"{len(data)} bytes: too short for the 5-byte schema header")
    magic, schema_id = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise FramingError(f"magic byte {magic}, expected {MAGIC}")
    return schema_id, bytes(data[_HEADER.size :])


@dataclass(frozen=True)
class RegisteredSchema:
    schema_id: int
    schema: str
    schema_type: str = "AVRO"
    subject: str | None = None
    version: int | None = None


class SchemaRegistryClient:
    """Calls ``url`` (``http://host:8081``, a comma list tries each in turn) with ``timeout`` s."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.urls = [u.strip().rstrip("/") for u in url.split(",") if u.strip()]
        if not self.urls:
            raise ValueError("no schema registry URL given")
        self.timeout = timeout
        self._by_id: dict[int, RegisteredSchema] = {}
        self._lock = threading.Lock()

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        last: SchemaRegistryError | None = None
        for base in self.urls:
            req = urllib.request.Request(
                base + path, data=data, method=method, headers={"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE}
            )
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as r:
                    raw = r.read()
                    return json.loads(raw) if raw else None
            except urllib.error.HTTPError as e:
                raw = e.read()
                try:
                    err = json.loads(raw)
                    message, code = str(err.get("message", raw)), int(err.get("error_code", 0))
                except (ValueError, AttributeError):
                    message, code = raw.decode(errors="replace") or e.reason, 0
                raise SchemaRegistryError(message, e.code, code) from None
            except (urllib.error.URLError, OSError) as e:
                last = SchemaRegistryError(f"schema registry {base} unreachable: {getattr(e, 'reason', e)}")
        assert last is not None
        raise last

    def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """Any call of the REST API: ``path`` (``/subjects/...``) with ``params`` as its query
        (None dropped, booleans as true/false); the answer's JSON, or SchemaRegistryError."""
        query = {k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items() if v is not None}
        return self._call(method, path + (f"?{urllib.parse.urlencode(query)}" if query else ""), body)

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        """The schema with global id ``schema_id`` (cached)."""
        with self._lock:
            hit = self._by_id.get(schema_id)
        if hit is not None:
            return hit
        body = self._call("GET", f"/schemas/ids/{schema_id}")
        found = RegisteredSchema(schema_id, body["schema"], body.get("schemaType", "AVRO"))
        with self._lock:
            self._by_id[schema_id] = found
        return found

    def latest(self, subject: str) -> RegisteredSchema:
        """The subject's latest version (never cached: it moves)."""
        body = self._call("GET", f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/latest")
        return RegisteredSchema(
            int(body["id"]), body["schema"], body.get("schemaType", "AVRO"), body["subject"], int(body["version"])
        )

    def register(self, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        """Register ``schema`` under ``subject`` (the existing id when already there). A schema the
        subject's compatibility level refuses raises SchemaRegistryError with status 409."""
        body: dict[str, Any] = {"schema": schema}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        result = self._call("POST", f"/subjects/{urllib.parse.quote(subject, safe='')}/versions", body)
        schema_id = int(result["id"])
        with self._lock:
            self._by_id.setdefault(schema_id, RegisteredSchema(schema_id, schema, schema_type, subject))
        return schema_id
