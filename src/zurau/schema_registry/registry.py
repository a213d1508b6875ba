"""The schema registry's operations (Confluent's ``KafkaSchemaRegistry``), over a store.

Reads answer from :class:`~zurau.schema_registry.registry_state.RegistryState`; every change is
a ``_schemas`` record written through the store and applied when read back, under one lock so
that ids and versions are assigned from a state that includes every earlier write. Semantics
(Confluent's, checked against its documentation and Karapace):

* registering a schema already live in the subject (same type, canonical text and references)
  returns its id and adds no version; a schema known under another subject reuses that id; a
  new schema gets ``max_id + 1``; the version is one more than the subject's highest version,
  soft-deleted ones included;
* the compatibility level is the subject's, else the global one (``schema.compatibility.level``);
  non-transitive levels check against the latest live version, ``_TRANSITIVE`` against all;
* modes: READONLY refuses writes (42205); IMPORT skips compatibility checks and requires the
  caller's ``id`` and ``version``; READWRITE refuses an explicit id (42205);
* soft delete hides versions (``deleted=true`` shows them); permanent delete needs a soft delete
  first (40405/40407) and writes tombstones; a version referenced by a live schema cannot be
  deleted (42206).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from zurau.schema_formats.references import Reference
from zurau.schema_formats.schema_types import AVRO, PROTOBUF, SUPPORTED_TYPES, ParsedSchema, parse
from zurau.schema_registry import errors
from zurau.schema_registry.registry_config import COMPATIBILITY_LEVELS
from zurau.schema_registry.registry_state import RegistryState, StoredSchema
from zurau.schema_registry.store_records import (
    CONFIG,
    DELETE_SUBJECT,
    MODE,
    SCHEMA,
    RegistryKey,
    SchemaValue,
    encode_config,
    encode_delete_subject,
    encode_mode,
)

MODES = ("READWRITE", "READONLY", "IMPORT")
MAX_VERSION = 2**31 - 1


class Store(Protocol):
    async def put(self, key: bytes, value: bytes | None) -> int: ...


@dataclass(frozen=True)
class NewSchema:
    schema: str
    schema_type: str = AVRO
    references: tuple[Reference, ...] = ()


def parse_version(value: str | int, *, allow_latest: bool = True) -> int:
    """A version path segment: 1..2^31-1, or ``latest``/-1 (returned as -1); else 42202."""
    if isinstance(value, str) and value.lower() == "latest" and allow_latest:
        return -1
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise errors.invalid_version(value) from None
    if n == -1 and allow_latest:
        return -1
    if not 1 <= n <= MAX_VERSION:
        raise errors.invalid_version(value)
    return n


class SchemaRegistry:
    def __init__(self, state: RegistryState, store: Store, default_level: str = "BACKWARD") -> None:
        self.state = state
        self.store = store
        self.default_level = default_level
        self._write_lock = asyncio.Lock()

    # ------------------------------------------------------------------ parsing
    def _parse(self, new: NewSchema, normalize: bool = False, _depth: int = 0) -> ParsedSchema:
        if new.schema_type not in SUPPORTED_TYPES:
            raise errors.RegistryError(
                422, 42201, f"Invalid schema type {new.schema_type}: this registry supports {', '.join(SUPPORTED_TYPES)}"
            )
        if not new.schema.strip():
            raise errors.invalid_schema("Empty schema")
        refs = [self._parse_reference(r, _depth) for r in new.references]
        parsed = parse(new.schema_type, new.schema, refs, new.references)
        if normalize:
            parsed.canonical = parsed.normalized()
        return parsed

    def _parse_reference(self, ref: Reference, depth: int) -> ParsedSchema:
        if depth > 32:
            raise errors.invalid_schema("references nest deeper than 32 levels")
        versions = self.state.versions.get(ref.subject, {})
        version = max((v for v, sv in versions.items() if not sv.deleted), default=None) if ref.version == -1 else ref.version
        sv = versions.get(version) if version is not None else None
        if sv is None:
            raise errors.invalid_schema(f"Invalid reference {ref.name}: subject {ref.subject} version {ref.version} not found")
        return self._parse(NewSchema(sv.schema, sv.schema_type, sv.references), _depth=depth + 1)

    def _stored_parsed(self, sv: SchemaValue | StoredSchema) -> ParsedSchema:
        return self._parse(NewSchema(sv.schema, sv.schema_type, tuple(sv.references)))

    def formatted(self, sv: SchemaValue | StoredSchema, fmt: str | None) -> str:
        """The schema string in a requested ``format``: ``serialized`` gives a PROTOBUF schema as
        base64 of its ``FileDescriptorProto`` (what confluent-kafka's deserializer asks for);
        other formats and types give the stored text."""
        if fmt == "serialized" and sv.schema_type == PROTOBUF:
            return str(self._stored_parsed(sv).parsed.serialized())
        return sv.schema

    # ------------------------------------------------------------------ config and mode
    def level(self, subject: str | None) -> str:
        if subject is not None and subject in self.state.configs:
            return self.state.configs[subject]
        return self.state.configs.get(None, self.default_level)

    def mode(self, subject: str | None) -> str:
        if subject is not None and subject in self.state.modes:
            return self.state.modes[subject]
        return self.state.modes.get(None, "READWRITE")

    def get_config(self, subject: str | None, default_to_global: bool = False) -> str:
        if subject is None:
            return self.level(None)
        if subject in self.state.configs:
            return self.state.configs[subject]
        if default_to_global:
            return self.level(None)
        raise errors.subject_compatibility_not_configured(subject)

    async def set_config(self, subject: str | None, level: Any) -> str:
        if not isinstance(level, str) or level.upper() not in COMPATIBILITY_LEVELS:
            raise errors.invalid_compatibility_level(level)
        level = level.upper()
        async with self._write_lock:
            await self.store.put(RegistryKey(CONFIG, subject).encode(), encode_config(level))
        return level

    async def delete_config(self, subject: str | None) -> str:
        async with self._write_lock:
            if subject is not None and subject not in self.state.configs:
                if subject not in self.state.versions:
                    raise errors.subject_not_found(subject)
                raise errors.subject_compatibility_not_configured(subject)
            previous = self.get_config(subject)
            await self.store.put(RegistryKey(CONFIG, subject).encode(), None)
        return previous

    def get_mode(self, subject: str | None, default_to_global: bool = False) -> str:
        if subject is None:
            return self.mode(None)
        if subject in self.state.modes:
            return self.state.modes[subject]
        if default_to_global:
            return self.mode(None)
        raise errors.subject_mode_not_configured(subject)

    async def set_mode(self, subject: str | None, mode: Any, force: bool = False) -> str:
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise errors.invalid_mode(mode)
        mode = mode.upper()
        async with self._write_lock:
            if mode == "IMPORT" and not force:
                has = self.state.live_versions(subject) if subject is not None else self.state.subjects()
                if has:
                    raise errors.operation_not_permitted(
                        "Cannot import since found existing subjects" if subject is None
                        else f"Cannot import since subject {subject} has versions; use force=true"
                    )
            await self.store.put(RegistryKey(MODE, subject).encode(), encode_mode(mode))
        return mode

    async def delete_mode(self, subject: str) -> str:
        async with self._write_lock:
            if subject not in self.state.modes:
                if subject not in self.state.versions:
                    raise errors.subject_not_found(subject)
                raise errors.subject_mode_not_configured(subject)
            previous = self.state.modes[subject]
            await self.store.put(RegistryKey(MODE, subject).encode(), None)
        return previous

    def _check_writable(self, subject: str) -> None:
        if self.mode(subject) == "READONLY":
            raise errors.operation_not_permitted(f"Subject {subject} is in read-only mode")

    # ------------------------------------------------------------------ compatibility
    def check_compatibility(self, subject: str, new: ParsedSchema, against: list[SchemaValue]) -> list[str]:
        level = self.level(subject)
        if level == "NONE" or not against:
            return []
        if not level.endswith("_TRANSITIVE"):
            against = against[-1:]
        messages: list[str] = []
        for sv in against:
            old = self._stored_parsed(sv)
            if level.startswith(("BACKWARD", "FULL")):
                messages += [f"{m} (new schema reading version {sv.version})" for m in new.can_read(old)]
            if level.startswith(("FORWARD", "FULL")):
                messages += [f"{m} (version {sv.version} reading the new schema)" for m in old.can_read(new)]
        return messages

    def test_compatibility(self, subject: str, version: str | None, new: NewSchema, normalize: bool) -> list[str]:
        parsed = self._parse(new, normalize)
        if version is None:
            return self.check_compatibility(subject, parsed, self.state.live_versions(subject))
        v = parse_version(version)
        if not self.state.versions.get(subject):
            raise errors.subject_not_found(subject)
        if v == -1:
            return self.check_compatibility(subject, parsed, self.state.live_versions(subject))
        sv = self.state.versions[subject].get(v)
        if sv is None or sv.deleted:
            raise errors.version_not_found(version)
        level = self.level(subject).replace("_TRANSITIVE", "")
        old = self._stored_parsed(sv)
        messages: list[str] = []
        if level in ("BACKWARD", "FULL"):
            messages += parsed.can_read(old)
        if level in ("FORWARD", "FULL"):
            messages += old.can_read(parsed)
        return messages

    # ------------------------------------------------------------------ register and look up
    def _same(self, sv: SchemaValue | StoredSchema, parsed: ParsedSchema, refs: tuple[Reference, ...], normalize: bool) -> bool:
        if sv.schema_type != parsed.schema_type or tuple(sv.references) != refs:
            return False
        if sv.schema == parsed.canonical:
            return True
        if parsed.schema_type == PROTOBUF and not normalize:
            # stored text from another registry (Confluent's own formatting) compares by our canonical form
            try:
                return self._stored_parsed(sv).canonical == parsed.canonical
            except errors.RegistryError:
                return False
        if normalize:
            try:
                stored = self._parse(NewSchema(sv.schema, sv.schema_type, tuple(sv.references)), normalize=True)
            except errors.RegistryError:
                return False
            return stored.canonical == parsed.canonical
        return False

    async def register(
        self,
        subject: str,
        new: NewSchema,
        *,
        normalize: bool = False,
        schema_id: int | None = None,
        version: int | None = None,
    ) -> int:
        _check_subject(subject)
        async with self._write_lock:
            self._check_writable(subject)
            mode = self.mode(subject)
            if schema_id is not None and mode != "IMPORT":
                if not (schema_id in self.state.schemas_by_id and schema_id >= 1):
                    raise errors.operation_not_permitted(
                        f"Subject {subject} is not in import mode: a schema id cannot be chosen"
                    )
            parsed = self._parse(new, normalize)
            refs = tuple(new.references)
            live = self.state.live_versions(subject)
            for sv in reversed(live):
                if self._same(sv, parsed, refs, normalize) and (schema_id is None or sv.id == schema_id):
                    return sv.id
            if mode == "IMPORT":
                if schema_id is None:
                    raise errors.operation_not_permitted("In IMPORT mode a schema needs an explicit id")
                existing = self.state.schemas_by_id.get(schema_id)
                if existing is not None and not self._same(existing, parsed, refs, normalize):
                    raise errors.RegistryError(
                        422, 42207, f"Overwrite new schema with id {schema_id} is not permitted."
                    )
                new_id = schema_id
            else:
                messages = self.check_compatibility(subject, parsed, live)
                if messages:
                    raise errors.incompatible_schema(messages)
                new_id = self._id_for(parsed, refs, normalize, schema_id)
            all_versions = self.state.versions.get(subject, {})
            if version is not None and mode == "IMPORT":
                if version in all_versions:
                    raise errors.RegistryError(
                        422, 42202, f"Version {version} already exists in subject {subject}"
                    )
                new_version = version
            else:
                new_version = max(all_versions, default=0) + 1
            value = SchemaValue(subject, new_version, new_id, parsed.canonical, parsed.schema_type, refs, False)
            await self.store.put(RegistryKey(SCHEMA, subject, new_version).encode(), value.encode())
            return new_id

    def _id_for(self, parsed: ParsedSchema, refs: tuple[Reference, ...], normalize: bool, wanted: int | None) -> int:
        if wanted is not None:
            existing = self.state.schemas_by_id[wanted]
            if not self._same(existing, parsed, refs, normalize):
                raise errors.RegistryError(422, 42207, f"Overwrite new schema with id {wanted} is not permitted.")
            return wanted
        for stored in self.state.schemas_by_id.values():
            if self._same(stored, parsed, refs, normalize) and self._id_is_live(stored.id):
                return stored.id
        return self.state.max_id + 1

    def _id_is_live(self, schema_id: int) -> bool:
        return any(sv.id == schema_id for vs in self.state.versions.values() for sv in vs.values())

    def lookup(self, subject: str, new: NewSchema, *, normalize: bool = False, deleted: bool = False) -> SchemaValue:
        versions = self.state.all_versions(subject) if deleted else self.state.live_versions(subject)
        if not versions:
            raise errors.subject_not_found(subject)
        parsed = self._parse(new, normalize)
        refs = tuple(new.references)
        for sv in reversed(versions):
            if self._same(sv, parsed, refs, normalize):
                return sv
        raise errors.schema_not_found("Schema not found")

    # ------------------------------------------------------------------ reads
    def subjects(self, deleted: bool = False, prefix: str = "", deleted_only: bool = False) -> list[str]:
        if deleted_only:
            names = [s for s in self.state.subjects(True) if not self.state.live_versions(s)]
        else:
            names = self.state.subjects(deleted)
        return [s for s in names if s.startswith(prefix)]

    def versions(self, subject: str, deleted: bool = False, deleted_only: bool = False) -> list[int]:
        every = self.state.all_versions(subject)
        if not every or (not deleted and not deleted_only and not self.state.live_versions(subject)):
            raise errors.subject_not_found(subject)
        if deleted_only:
            return [sv.version for sv in every if sv.deleted]
        return [sv.version for sv in every if deleted or not sv.deleted]

    def get_version(self, subject: str, version: str | int, deleted: bool = False) -> SchemaValue:
        v = parse_version(version)
        every = self.state.versions.get(subject)
        if not every or (not deleted and not self.state.live_versions(subject)):
            raise errors.subject_not_found(subject)
        if v == -1:
            candidates = self.state.all_versions(subject) if deleted else self.state.live_versions(subject)
            return candidates[-1]
        sv = every.get(v)
        if sv is None or (sv.deleted and not deleted):
            raise errors.version_not_found(v)
        return sv

    def get_schema(self, schema_id: int) -> StoredSchema:
        stored = self.state.schemas_by_id.get(schema_id)
        if stored is None or not self._id_is_live(schema_id):
            raise errors.schema_not_found(f"Schema {schema_id} not found")
        return stored

    def subject_versions_for_id(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        self.get_schema(schema_id)
        return sorted(
            (sv.subject, sv.version)
            for vs in self.state.versions.values()
            for sv in vs.values()
            if sv.id == schema_id and (deleted or not sv.deleted)
        )

    def referenced_by(self, subject: str, version: str | int) -> list[int]:
        sv = self.get_version(subject, version)
        return self.state.references_to(subject, sv.version)

    # ------------------------------------------------------------------ deletes
    async def delete_version(self, subject: str, version: str | int, permanent: bool = False) -> int:
        v = parse_version(version)
        async with self._write_lock:
            self._check_writable(subject)
            every = self.state.versions.get(subject)
            if not every:
                raise errors.subject_not_found(subject)
            if v == -1:
                live = self.state.live_versions(subject)
                if not live:
                    raise errors.subject_not_found(subject)
                v = live[-1].version
            sv = every.get(v)
            if sv is None:
                raise errors.version_not_found(v)
            if self.state.references_to(subject, v):
                raise errors.reference_exists(
                    f"One or more references exist to the schema {{subject={subject},version={v}}}."
                )
            key = RegistryKey(SCHEMA, subject, v).encode()
            if permanent:
                if not sv.deleted:
                    raise errors.version_not_soft_deleted(subject, v)
                await self.store.put(key, None)
            else:
                if sv.deleted:
                    raise errors.version_soft_deleted(subject, v)
                deleted = SchemaValue(sv.subject, sv.version, sv.id, sv.schema, sv.schema_type, sv.references, True)
                await self.store.put(key, deleted.encode())
            return v

    async def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        async with self._write_lock:
            self._check_writable(subject)
            every = self.state.all_versions(subject)
            if not every:
                raise errors.subject_not_found(subject)
            live = [sv for sv in every if not sv.deleted]
            for sv in live:
                if self.state.references_to(subject, sv.version):
                    raise errors.reference_exists(
                        f"One or more references exist to the schema {{subject={subject},version={sv.version}}}."
                    )
            if permanent:
                if live:
                    raise errors.subject_not_soft_deleted(subject)
                for sv in every:
                    await self.store.put(RegistryKey(SCHEMA, subject, sv.version).encode(), None)
                if subject in self.state.configs:
                    await self.store.put(RegistryKey(CONFIG, subject).encode(), None)
                if subject in self.state.modes:
                    await self.store.put(RegistryKey(MODE, subject).encode(), None)
                return [sv.version for sv in every]
            if not live:
                raise errors.subject_soft_deleted(subject)
            await self.store.put(
                RegistryKey(DELETE_SUBJECT, subject).encode(), encode_delete_subject(subject, live[-1].version)
            )
            return [sv.version for sv in live]


def _check_subject(subject: str) -> None:
    if not subject or any(ord(c) < 0x20 for c in subject):
        raise errors.unprocessable(f"Invalid subject {subject!r}")
