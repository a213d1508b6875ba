"""The registry's in-memory state, rebuilt by replaying the ``_schemas`` topic.

Only :meth:`RegistryState.apply` changes it, one topic record at a time, so a registry that
reads the topic from the beginning always ends in the same state (Confluent's
``KafkaStoreMessageHandler`` + ``InMemoryCache``). Invariants:

* ``versions[subject][version]`` holds every stored (live or soft-deleted) version;
* ``schemas_by_id[id]`` holds every schema ever seen under that id, even after its versions were
  permanently deleted, and ``max_id`` is the largest id ever replayed: new ids are ``max_id + 1``
  and therefore never reused while the records stay in the topic;
* a DELETE_SUBJECT record soft-deletes every version up to its version;
* a tombstone for a SCHEMA key permanently deletes that version; for CONFIG/MODE keys it removes
  the subject's setting.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from zurau.schema_registry.store_records import (
    CONFIG,
    DELETE_SUBJECT,
    MODE,
    NOOP,
    SCHEMA,
    RegistryKey,
    SchemaValue,
    StoreRecordError,
    decode_config,
    decode_delete_subject,
    decode_mode,
)

log = logging.getLogger("zurau.schema_registry")


@dataclass
class StoredSchema:
    """What an id names: a schema string, its type and its references."""

    id: int
    schema: str
    schema_type: str
    references: tuple = ()  # tuple[Reference, ...]


@dataclass
class RegistryState:
    versions: dict[str, dict[int, SchemaValue]] = field(default_factory=dict)
    schemas_by_id: dict[int, StoredSchema] = field(default_factory=dict)
    configs: dict[str | None, str] = field(default_factory=dict)  # None: the global level
    modes: dict[str | None, str] = field(default_factory=dict)
    max_id: int = 0
    records_applied: int = 0

    def apply(self, key_bytes: bytes | None, value: bytes | None) -> None:
        """Apply one ``_schemas`` record; a record that cannot be understood is logged and skipped."""
        self.records_applied += 1
        if key_bytes is None:
            log.warning("skipping a _schemas record without a key")
            return
        try:
            key = RegistryKey.decode(key_bytes)
            if key.keytype == NOOP:
                return
            if key.keytype == SCHEMA:
                self._apply_schema(key, value)
            elif key.keytype == CONFIG:
                if value is None or value in (b"", b"null"):
                    self.configs.pop(key.subject, None)
                else:
                    self.configs[key.subject] = decode_config(value)
            elif key.keytype == MODE:
                if value is None or value in (b"", b"null"):
                    self.modes.pop(key.subject, None)
                else:
                    self.modes[key.subject] = decode_mode(value)
            elif key.keytype == DELETE_SUBJECT and value is not None:
                assert key.subject is not None
                upto = decode_delete_subject(value)
                for version, sv in list(self.versions.get(key.subject, {}).items()):
                    if version <= upto and not sv.deleted:
                        self.versions[key.subject][version] = _with_deleted(sv)
        except StoreRecordError as e:
            log.warning("skipping a _schemas record that cannot be read: %s", e)

    def _apply_schema(self, key: RegistryKey, value: bytes | None) -> None:
        assert key.subject is not None and key.version is not None
        if value is None or value in (b"", b"null"):
            versions = self.versions.get(key.subject)
            if versions is not None:
                versions.pop(key.version, None)
                if not versions:
                    del self.versions[key.subject]
            return
        sv = SchemaValue.decode(value)
        if sv.subject != key.subject or sv.version != key.version:
            raise StoreRecordError(f"key {key} and value {sv.subject}/{sv.version} disagree")
        self.versions.setdefault(sv.subject, {})[sv.version] = sv
        if sv.id not in self.schemas_by_id:
            self.schemas_by_id[sv.id] = StoredSchema(sv.id, sv.schema, sv.schema_type, sv.references)
        self.max_id = max(self.max_id, sv.id)

    # ------------------------------------------------------------------ queries
    def live_versions(self, subject: str) -> list[SchemaValue]:
        return [sv for _, sv in sorted(self.versions.get(subject, {}).items()) if not sv.deleted]

    def all_versions(self, subject: str) -> list[SchemaValue]:
        return [sv for _, sv in sorted(self.versions.get(subject, {}).items())]

    def subjects(self, include_deleted: bool = False) -> list[str]:
        return sorted(
            s for s, vs in self.versions.items() if vs and (include_deleted or any(not v.deleted for v in vs.values()))
        )

    def references_to(self, subject: str, version: int) -> list[int]:
        """Ids of live schemas that reference ``subject``/``version``."""
        out = set()
        for vs in self.versions.values():
            for sv in vs.values():
                if not sv.deleted and any(r.subject == subject and r.version == version for r in sv.references):
                    out.add(sv.id)
        return sorted(out)


def _with_deleted(sv: SchemaValue) -> SchemaValue:
    return SchemaValue(sv.subject, sv.version, sv.id, sv.schema, sv.schema_type, sv.references, True)
