"""The records of the ``_schemas`` topic, byte-compatible with Confluent's and Karapace's.

The topic is compacted and has one partition. Keys are JSON objects written with a fixed field
order and no spaces, because compaction compares key *bytes*: the same logical key must always
serialize identically or old values survive. Key forms (``magic`` is 1 for schema keys, else 0)::

    {"keytype":"SCHEMA","subject":"s","version":1,"magic":1}
    {"keytype":"CONFIG","subject":null,"magic":0}           (null subject: the global config)
    {"keytype":"MODE","subject":"s","magic":0}
    {"keytype":"DELETE_SUBJECT","subject":"s","magic":0}
    {"keytype":"NOOP","magic":0}

Values::

    SCHEMA          {"subject":"s","version":1,"id":1,"schema":"...","deleted":false}
                    plus "schemaType" (omitted for AVRO) and "references" (omitted when empty)
    CONFIG          {"compatibilityLevel":"BACKWARD"}
    MODE            {"mode":"READONLY"}
    DELETE_SUBJECT  {"subject":"s","version":3}     (versions <= 3 become soft-deleted)
    NOOP            no value

A null value (tombstone) permanently deletes a schema version, or removes a subject's config or
mode. Readers accept keys in any field order and ignore unknown fields, as Confluent's do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from zurau.schema_formats.references import Reference

SCHEMA, CONFIG, MODE, DELETE_SUBJECT, NOOP = "SCHEMA", "CONFIG", "MODE", "DELETE_SUBJECT", "NOOP"
KEY_TYPES = (SCHEMA, CONFIG, MODE, DELETE_SUBJECT, NOOP)


class StoreRecordError(ValueError):
    """A ``_schemas`` record that cannot be understood (the reader logs and skips it)."""


@dataclass(frozen=True)
class RegistryKey:
    """A ``_schemas`` key. ``subject`` is None for the global CONFIG/MODE and for NOOP."""

    keytype: str
    subject: str | None = None
    version: int | None = None

    def encode(self) -> bytes:
        if self.keytype == SCHEMA:
            obj: dict[str, Any] = {"keytype": SCHEMA, "subject": self.subject, "version": self.version, "magic": 1}
        elif self.keytype == NOOP:
            obj = {"keytype": NOOP, "magic": 0}
        else:
            obj = {"keytype": self.keytype, "subject": self.subject, "magic": 0}
        return _compact(obj)

    @staticmethod
    def decode(data: bytes) -> RegistryKey:
        obj = _load(data, "key")
        keytype = obj.get("keytype")
        if keytype not in KEY_TYPES:
            raise StoreRecordError(f"unknown keytype {keytype!r}")
        subject = obj.get("subject")
        if subject is not None and not isinstance(subject, str):
            raise StoreRecordError(f"subject must be a string, not {subject!r}")
        if keytype == SCHEMA:
            version = obj.get("version")
            if not isinstance(version, int) or isinstance(version, bool) or subject is None:
                raise StoreRecordError(f"a SCHEMA key needs a subject and an integer version: {obj}")
            return RegistryKey(SCHEMA, subject, version)
        if keytype == DELETE_SUBJECT and subject is None:
            raise StoreRecordError("a DELETE_SUBJECT key needs a subject")
        return RegistryKey(keytype, subject if keytype != NOOP else None)


@dataclass(frozen=True)
class SchemaValue:
    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = field(default_factory=tuple)
    deleted: bool = False

    def encode(self) -> bytes:
        obj: dict[str, Any] = {"subject": self.subject, "version": self.version, "id": self.id}
        if self.schema_type != "AVRO":
            obj["schemaType"] = self.schema_type
        if self.references:
            obj["references"] = [r.to_json() for r in self.references]
        obj["schema"] = self.schema
        obj["deleted"] = self.deleted
        return _compact(obj)

    @staticmethod
    def decode(data: bytes) -> SchemaValue:
        obj = _load(data, "schema value")
        try:
            refs = tuple(
                Reference(str(r["name"]), str(r["subject"]), int(r["version"])) for r in obj.get("references") or ()
            )
            return SchemaValue(
                subject=str(obj["subject"]),
                version=int(obj["version"]),
                id=int(obj["id"]),
                schema=str(obj["schema"]),
                schema_type=str(obj.get("schemaType") or "AVRO"),
                references=refs,
                deleted=bool(obj.get("deleted", False)),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise StoreRecordError(f"bad schema value {obj}: {e}") from e


def encode_config(level: str) -> bytes:
    return _compact({"compatibilityLevel": level})


def decode_config(data: bytes) -> str:
    obj = _load(data, "config value")
    level = obj.get("compatibilityLevel")
    if not isinstance(level, str):
        raise StoreRecordError(f"a config value needs compatibilityLevel: {obj}")
    return level


def encode_mode(mode: str) -> bytes:
    return _compact({"mode": mode})


def decode_mode(data: bytes) -> str:
    obj = _load(data, "mode value")
    mode = obj.get("mode")
    if not isinstance(mode, str):
        raise StoreRecordError(f"a mode value needs mode: {obj}")
    return mode


def encode_delete_subject(subject: str, version: int) -> bytes:
    return _compact({"subject": subject, "version": version})


def decode_delete_subject(data: bytes) -> int:
    obj = _load(data, "delete-subject value")
    version = obj.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise StoreRecordError(f"a DELETE_SUBJECT value needs an integer version: {obj}")
    return version


def _compact(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _load(data: bytes, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise StoreRecordError(f"{what} is not JSON: {e}") from e
    if not isinstance(obj, dict):
        raise StoreRecordError(f"{what} is not a JSON object: {obj!r}")
    return obj
