"""The controller's part of client quotas: AlterClientQuotas as metadata records, and
DescribeClientQuotas from an image.

**Entities** are Kafka's: ``user``, ``client-id`` (alone or together) or ``ip`` (alone); a null
name is the type's default entity (``<default>`` in the CLI). **Keys** per entity kind, with
Kafka's value types:

* user / client-id / both: ``producer_byte_rate`` and ``consumer_byte_rate`` (whole numbers),
  ``request_percentage`` and ``controller_mutation_rate`` (any number);
* ip: ``connection_creation_rate`` (a whole number).

AlterClientQuotas, Kafka's ``ClientQuotaControlManager`` rules, per entity (an entity's
operations all apply or none; one entity failing does not stop the others), every failure
INVALID_REQUEST:

* an empty entity: "Invalid empty client quota entity"; an entity type twice: "... duplicate
  entity entry <type>"; an unknown type: "Unhandled client quota entity type: <type>"; an empty
  (not null) name: "Empty <type> not supported";
* ``ip`` combined with another type: "Invalid empty client quota entity" (Kafka's message); an
  ip name that is not an IP address: "<name> is not a valid IP or resolvable host." (host names
  are not resolved here: the controller never blocks on DNS);
* a key set twice in one entry: "Duplicate quota key <key> not updating quota for this entity
  <entity>"; the same entity in two entries: "Ignoring duplicate entity <entity>" (and neither
  entry is applied; Kafka applies the first);
* a key the entity kind does not have: "Invalid configuration key <key>"; a fractional value for
  a whole-number key: "Configuration <key> must be a Long value".

Removing a key the entity does not have is a success that writes nothing; setting a key to its
current value writes nothing either. With ``validate_only`` no records are returned.
Results come one per distinct entity, in the order entities first appear in the request.
"""

from __future__ import annotations

import ipaddress

from zurau.metadata.controller.result import ControllerResult
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import ClientQuotaEntity, ClientQuotaRecord, MetadataRecord, quota_entity
from zurau.protocol.errors import InvalidRequestError, KafkaError, UnsupportedVersionError
from zurau.protocol.messages import (
    AlterClientQuotasRequestEntries,
    AlterClientQuotasRequestEntriesEntity,
    AlterClientQuotasResponseEntries,
    DescribeClientQuotasRequestComponents,
    DescribeClientQuotasResponse,
    DescribeClientQuotasResponseEntries,
)

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

# key -> True when its value must be a whole number (Kafka's LONG / INT quota configs).
CLIENT_KEYS = {PRODUCER_BYTE_RATE: True, CONSUMER_BYTE_RATE: True, REQUEST_PERCENTAGE: False,
               CONTROLLER_MUTATION_RATE: False}
IP_KEYS = {CONNECTION_CREATION_RATE: True}

# DescribeClientQuotas match types.
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2


def entity_text(entity: ClientQuotaEntity | list[tuple[str, str | None]]) -> str:
    """An entity as Kafka prints it: ``ClientQuotaEntity(entries={user=alice, client-id=null})``."""
    inner = ", ".join(f"{t}={'null' if n is None else n}" for t, n in entity)
    return f"ClientQuotaEntity(entries={{{inner}}})"


def _valid_keys(pairs: list[tuple[str, str | None]]) -> dict[str, bool]:
    """The keys the entity may have; raises InvalidRequestError for a bad entity."""
    if not pairs:
        raise InvalidRequestError("Invalid empty client quota entity")
    types: dict[str, str | None] = {}
    for etype, name in pairs:
        if etype in types:
            raise InvalidRequestError(f"Invalid empty client quota entity, duplicate entity entry {etype}")
        if etype not in ENTITY_TYPES:
            raise InvalidRequestError(f"Unhandled client quota entity type: {etype}")
        if name is not None and not name:
            raise InvalidRequestError(f"Empty {etype} not supported")
        types[etype] = name
    if IP in types:
        if len(types) > 1:
            raise InvalidRequestError("Invalid empty client quota entity")
        ip = types[IP]
        if ip is not None:
            try:
                ipaddress.ip_address(ip)
            except ValueError:
                raise InvalidRequestError(f"{ip} is not a valid IP or resolvable host.") from None
        return IP_KEYS
    return CLIENT_KEYS


def _check_value(keys: dict[str, bool], key: str, value: float) -> None:
    whole = keys.get(key)
    if whole is None:
        raise InvalidRequestError(f"Invalid configuration key {key}")
    if whole and abs(float(int(value + 1e-6)) - value) > 1e-6:
        raise InvalidRequestError(f"Configuration {key} must be a Long value")


def alter_client_quotas(
    image: MetadataImage, entries: list[AlterClientQuotasRequestEntries], validate_only: bool
) -> ControllerResult[list[AlterClientQuotasResponseEntries]]:
    """The records and per-entity results of one AlterClientQuotas request."""
    order: list[ClientQuotaEntity] = []
    raw: dict[ClientQuotaEntity, list[AlterClientQuotasRequestEntriesEntity]] = {}  # as the request spelled it
    errors: dict[ClientQuotaEntity, KafkaError] = {}
    records: dict[ClientQuotaEntity, list[MetadataRecord]] = {}
    for entry in entries:
        pairs = [(e["entity_type"], e["entity_name"]) for e in entry["entity"]]
        entity = quota_entity(pairs)
        if entity in raw:
            errors[entity] = InvalidRequestError(f"Ignoring duplicate entity {entity_text(pairs)}")
            continue
        order.append(entity)
        raw[entity] = entry["entity"]
        try:
            keys = _valid_keys(pairs)
            ops: dict[str, float | None] = {}
            for op in entry["ops"]:
                if op["key"] in ops:
                    raise InvalidRequestError(
                        f"Duplicate quota key {op['key']} not updating quota for this entity {entity_text(pairs)}"
                    )
                ops[op["key"]] = None if op["remove"] else float(op["value"])
            current = image.client_quotas.get(entity, {})
            out: list[MetadataRecord] = []
            for key, value in ops.items():
                if value is None:
                    if key in current:
                        out.append(ClientQuotaRecord(entity, key, 0.0, True))
                    continue
                _check_value(keys, key, value)
                if current.get(key) != value:
                    out.append(ClientQuotaRecord(entity, key, value))
            records[entity] = out
        except KafkaError as failure:
            errors[entity] = failure
    results: list[AlterClientQuotasResponseEntries] = []
    applied: list[MetadataRecord] = []
    for entity in order:
        error = errors.get(entity)
        if error is None and not validate_only:
            applied += records[entity]
        results.append({
            "error_code": error.code if error else 0,
            "error_message": str(error) if error else None,
            "entity": raw[entity],
        })
    return ControllerResult(applied, results)


def entity_matches(
    entity: ClientQuotaEntity, exact: dict[str, str | None], any_of: set[str], strict: bool
) -> bool:
    """Kafka's filter rule: every exact component names the entity's name of that type (None:
    the default), every "any" component a type the entity has; ``strict``: and nothing else."""
    names = dict(entity)
    if strict and len(names) != len(exact) + len(any_of):
        return False
    for etype, name in exact.items():
        if etype not in names or names[etype] != name:
            return False
    return all(etype in names for etype in any_of)


def parse_filter(
    components: list[DescribeClientQuotasRequestComponents],
) -> tuple[dict[str, str | None], set[str]]:
    """``(exact, any)`` from DescribeClientQuotas components; raises Kafka's errors for a bad
    filter (INVALID_REQUEST, or UNSUPPORTED_VERSION for an unknown entity or match type)."""
    exact: dict[str, str | None] = {}
    any_of: set[str] = set()
    for c in components:
        etype, match_type, match = c["entity_type"], c["match_type"], c["match"]
        if not etype:
            raise InvalidRequestError("Invalid empty entity type.")
        if etype in exact or etype in any_of:
            raise InvalidRequestError(f"Entity type {etype} cannot appear more than once in the filter.")
        if etype not in ENTITY_TYPES:
            raise UnsupportedVersionError(f"Unsupported entity type {etype}")
        if match_type == MATCH_EXACT:
            if match is None:
                raise InvalidRequestError("Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[etype] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise InvalidRequestError("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[etype] = None
        elif match_type == MATCH_ANY:
            if match is not None:
                raise InvalidRequestError("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            any_of.add(etype)
        else:
            raise UnsupportedVersionError(f"Unknown match type {match_type}")
    if (IP in exact or IP in any_of) and ({USER, CLIENT_ID} & (set(exact) | any_of)):
        raise InvalidRequestError(
            "Invalid entity filter component combination. IP filter component should not be used "
            "with user or clientId filter component."
        )
    return exact, any_of


def _order(entity: ClientQuotaEntity) -> tuple[tuple[str, bool, str], ...]:
    return tuple((t, n is not None, n or "") for t, n in entity)


def describe_client_quotas(
    image: MetadataImage, components: list[DescribeClientQuotasRequestComponents], strict: bool
) -> DescribeClientQuotasResponse:
    """The DescribeClientQuotas response from an image (entities sorted, defaults first)."""
    try:
        exact, any_of = parse_filter(components)
    except KafkaError as e:
        return {"throttle_time_ms": 0, "error_code": e.code, "error_message": str(e), "entries": None}
    entries: list[DescribeClientQuotasResponseEntries] = []
    for entity in sorted(image.client_quotas, key=_order):
        if entity_matches(entity, exact, any_of, strict):
            values = image.client_quotas[entity]
            entries.append({
                "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                "values": [{"key": k, "value": values[k]} for k in sorted(values)],
            })
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": entries}
