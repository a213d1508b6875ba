"""Client quotas over Kafka's DescribeClientQuotas and AlterClientQuotas (what
``kafka-configs.sh --entity-type users|clients|ips`` and ``kafka-client-quotas.sh`` use).

An entity is a mapping of entity type (``user``, ``client-id``, ``ip``) to name, ``None`` being
the type's default entity (``<default>``): ``{"user": "alice", "client-id": None}``. Any broker
accepts the requests (changes go to the active controller, which writes them to the metadata
log); the principal needs ALTER_CONFIGS on the cluster to change quotas and DESCRIBE_CONFIGS to
list them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig
from zurau.client.typed_api import ALTER_CLIENT_QUOTAS, DESCRIBE_CLIENT_QUOTAS
from zurau.protocol.errors import KafkaError, for_code
from zurau.protocol.messages import (
    AlterClientQuotasRequestEntries,
    AlterClientQuotasRequestEntriesEntity,
    AlterClientQuotasResponseEntriesEntity,
    DescribeClientQuotasRequestComponents,
    DescribeClientQuotasResponseEntriesEntity,
)

QuotaEntity = Mapping[str, str | None]

MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2


class _AnyName:
    """Filter value matching any name of a type, default included (Kafka's MATCH_TYPE_SPECIFIED)."""

    def __repr__(self) -> str:
        return "ANY"


ANY = _AnyName()


@dataclass(frozen=True)
class QuotaAlteration:
    """Changes to one entity's quotas: key -> new value, or None to remove the key."""

    entity: QuotaEntity
    ops: Mapping[str, float | None] = field(default_factory=dict)


def _entity_body(entity: QuotaEntity) -> list[AlterClientQuotasRequestEntriesEntity]:
    return [{"entity_type": t, "entity_name": n} for t, n in entity.items()]


def _entity(
    pairs: list[DescribeClientQuotasResponseEntriesEntity] | list[AlterClientQuotasResponseEntriesEntity],
) -> dict[str, str | None]:
    return {p["entity_type"]: p["entity_name"] for p in pairs}


class QuotaAdmin:
    """``async with QuotaAdmin(config) as admin``: describe and alter client quotas."""

    def __init__(self, config: ClientConfig | Cluster) -> None:
        self.cluster, self._owns = Cluster.of(config)

    async def __aenter__(self) -> QuotaAdmin:
        await self.cluster.bootstrap()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._owns:
            await self.cluster.close()

    async def describe(
        self, components: Mapping[str, str | None | _AnyName] | None = None, strict: bool = False
    ) -> list[tuple[dict[str, str | None], dict[str, float]]]:
        """(entity, values) of every entity matching the filter: per entity type a name (exact),
        None (the default entity) or :data:`ANY`; no components: every entity. Raises the
        broker's error for a refused filter."""
        body: list[DescribeClientQuotasRequestComponents] = []
        for etype, match in (components or {}).items():
            if isinstance(match, _AnyName):
                body.append({"entity_type": etype, "match_type": MATCH_ANY, "match": None})
            elif match is None:
                body.append({"entity_type": etype, "match_type": MATCH_DEFAULT, "match": None})
            else:
                body.append({"entity_type": etype, "match_type": MATCH_EXACT, "match": match})
        conn = await self.cluster.any_connection()
        resp = await conn.call(DESCRIBE_CLIENT_QUOTAS({"components": body, "strict": strict}))
        if resp["error_code"]:
            raise for_code(resp["error_code"])(resp["error_message"] or "DescribeClientQuotas failed")
        return [
            (_entity(e["entity"]), {v["key"]: v["value"] for v in e["values"]})
            for e in resp["entries"] or []
        ]

    async def alter(
        self, alterations: Iterable[QuotaAlteration], validate_only: bool = False
    ) -> list[tuple[dict[str, str | None], KafkaError | None]]:
        """Per distinct entity, in request order: (entity, None when applied, else its error)."""
        entries: list[AlterClientQuotasRequestEntries] = [
            {
                "entity": _entity_body(a.entity),
                "ops": [
                    {"key": k, "value": 0.0 if v is None else float(v), "remove": v is None}
                    for k, v in a.ops.items()
                ],
            }
            for a in alterations
        ]
        conn = await self.cluster.any_connection()
        resp = await conn.call(ALTER_CLIENT_QUOTAS({"entries": entries, "validate_only": validate_only}))
        return [
            (
                _entity(r["entity"]),
                for_code(r["error_code"])(r["error_message"] or "AlterClientQuotas failed") if r["error_code"] else None,
            )
            for r in resp["entries"]
        ]


__all__ = ["ANY", "QuotaAdmin", "QuotaAlteration", "QuotaEntity"]
