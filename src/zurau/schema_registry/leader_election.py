"""Primary election among registry instances through the Kafka group protocol (Confluent's
``KafkaGroupLeaderElector``), on the project's group member (:class:`zurau.client.group.GroupMember`).

Every instance joins the group ``schema.registry.group.id`` (default ``schema-registry``) with
protocol type ``sr`` and one protocol, ``v0``. The bytes are Confluent's JSON, so Confluent's
registry and ours can share a group:

* member metadata, Confluent's ``SchemaRegistryIdentity``::

    {"version":1,"host":"h","port":8081,"master_eligibility":true,"scheme":"http","leader":false}

  (``master_eligibility`` is the name on the wire; ``leader_eligibility`` is read as well;
  ``leader`` says whether the member is the primary now, read only by sticky elections);
* assignment, the same for every member, Confluent's ``SchemaRegistryProtocol.Assignment``::

    {"version":1,"error":0,"master":"<member id>","master_identity":{...identity...}}

  ``master`` and ``master_identity`` are left out when no member is eligible; ``error`` 1
  (DUPLICATE_URLS) says two members advertise the same URL (nobody can forward to the right one).

The group leader (the coordinator's choice, not necessarily the primary) picks the primary as
Confluent does: the eligible member whose URL (``scheme://host:port``) sorts first; with
``leader.election.sticky=true`` an eligible member that says it is already the primary keeps the
role (unless several say so).

:class:`LeaderElector` keeps the membership alive: it joins, rejoins whenever a heartbeat learns of
a rebalance (a member joined, left or timed out), and publishes the outcome. Invariants: while a
rebalance is under way :attr:`LeaderElector.settled` is false and, unless sticky, no instance
considers itself primary; :meth:`LeaderElector.wait_settled` returns the election of the last
completed generation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from zurau.client.cluster import Cluster
from zurau.client.group import GroupMember
from zurau.client.types import TopicPartition
from zurau.protocol.messages import (
    JoinGroupRequestProtocols,
    JoinGroupResponseMembers,
    SyncGroupRequestAssignments,
)

log = logging.getLogger("zurau.schema_registry.leader_election")

PROTOCOL_TYPE = "sr"
PROTOCOL_V0 = "v0"
IDENTITY_VERSION = 1
ASSIGNMENT_VERSION = 1
NO_ERROR, DUPLICATE_URLS = 0, 1


@dataclass(frozen=True)
class RegistryIdentity:
    """One instance as the others reach it (Confluent's ``SchemaRegistryIdentity``)."""

    host: str
    port: int
    scheme: str = "http"
    leader_eligibility: bool = True
    leader: bool = False

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def same_instance(self, other: RegistryIdentity | None) -> bool:
        """Confluent's ``equals``: host, port, scheme and eligibility (not the ``leader`` flag)."""
        return other is not None and replace(other, leader=self.leader) == self

    def to_json(self) -> dict[str, Any]:
        return {
            "version": IDENTITY_VERSION,
            "host": self.host,
            "port": self.port,
            "master_eligibility": self.leader_eligibility,
            "scheme": self.scheme,
            "leader": self.leader,
        }

    @classmethod
    def from_json(cls, data: Any) -> RegistryIdentity:
        if not isinstance(data, dict) or not isinstance(data.get("host"), str):
            raise ValueError(f"not a schema registry identity: {data!r}")
        port = data.get("port")
        if not isinstance(port, int) or isinstance(port, bool):
            raise ValueError(f"identity without a port: {data!r}")
        eligible = data.get("master_eligibility", data.get("leader_eligibility", False))
        return cls(
            host=data["host"],
            port=port,
            scheme=str(data.get("scheme") or "http"),
            leader_eligibility=eligible is True,
            leader=data.get("leader") is True,
        )


def encode_identity(identity: RegistryIdentity) -> bytes:
    return json.dumps(identity.to_json(), separators=(",", ":")).encode()


def decode_identity(data: bytes) -> RegistryIdentity:
    return RegistryIdentity.from_json(json.loads(data))


@dataclass(frozen=True)
class Election:
    """The assignment every member receives: the primary's member id and identity, or none."""

    error: int = NO_ERROR
    primary_member: str | None = None
    primary: RegistryIdentity | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"version": ASSIGNMENT_VERSION, "error": self.error}
        if self.primary_member is not None:
            body["master"] = self.primary_member
        if self.primary is not None:
            body["master_identity"] = self.primary.to_json()
        return body


def encode_election(election: Election) -> bytes:
    return json.dumps(election.to_json(), separators=(",", ":")).encode()


def decode_election(data: bytes) -> Election:
    body = json.loads(data)
    if not isinstance(body, dict):
        raise ValueError(f"not a schema registry assignment: {body!r}")
    identity = body.get("master_identity")
    member = body.get("master")
    return Election(
        error=int(body.get("error") or 0),
        primary_member=member if isinstance(member, str) else None,
        primary=RegistryIdentity.from_json(identity) if identity is not None else None,
    )


def elect(members: dict[str, RegistryIdentity], sticky: bool = False) -> Election:
    """Confluent's choice over ``{member id: identity}`` (see the module docstring)."""
    best: tuple[str, RegistryIdentity] | None = None
    current: list[tuple[str, RegistryIdentity]] = []
    for member_id, identity in members.items():
        if not identity.leader_eligibility:
            continue
        if best is None or identity.url < best[1].url:
            best = (member_id, identity)
        if identity.leader:
            current.append((member_id, identity))
    if sticky and len(current) == 1:
        best = current[0]
    urls = {identity.url for identity in members.values()}
    error = DUPLICATE_URLS if len(urls) != len(members) else NO_ERROR
    if best is None:
        return Election(error)
    return Election(error, best[0], best[1])


class RegistryGroupMember(GroupMember):
    """A registry instance in the ``sr`` group; after :meth:`join`, :attr:`election` holds the
    assignment this generation received."""

    PROTOCOL_TYPE = PROTOCOL_TYPE

    def __init__(self, cluster: Cluster, group_id: str, identity: Callable[[], RegistryIdentity],
                 sticky: bool = False, **kw: Any) -> None:
        super().__init__(cluster, group_id, **kw)
        self.identity = identity
        self.sticky = sticky
        self.election = Election()

    def _protocols(self) -> list[JoinGroupRequestProtocols]:
        return [{"name": PROTOCOL_V0, "metadata": encode_identity(self.identity())}]

    async def _assign(self, members: list[JoinGroupResponseMembers]) -> list[SyncGroupRequestAssignments]:
        identities: dict[str, RegistryIdentity] = {}
        for m in members:
            try:
                identities[m["member_id"]] = decode_identity(bytes(m["metadata"]))
            except (ValueError, UnicodeDecodeError):
                log.warning("member %s sent unreadable schema registry metadata", m["member_id"])
        election = elect(identities, self.sticky)
        log.debug("schema registry group %s: %d members, election %s", self.group_id, len(members), election)
        data = encode_election(election)
        return [{"member_id": m["member_id"], "assignment": data} for m in members]

    def _decode_assignment(self, data: bytes) -> list[TopicPartition]:
        try:
            self.election = decode_election(data) if data else Election()
        except (ValueError, TypeError, UnicodeDecodeError):
            log.warning("unreadable schema registry assignment %r", data[:200])
            self.election = Election()
        return []


class LeaderElector:
    """Keeps this instance in the group and tells who the primary is (module docstring).

    ``on_elected`` runs after every completed election with (primary identity or None, whether
    this instance is the primary), before :meth:`wait_settled` callers wake up.
    """

    def __init__(self, member: RegistryGroupMember, identity: RegistryIdentity,
                 on_elected: Callable[[RegistryIdentity | None, bool], Awaitable[None]] | None = None) -> None:
        self.member = member
        self._identity = identity
        self.on_elected = on_elected
        self.primary: RegistryIdentity | None = None
        self.is_primary = False
        self.generation = -1
        self.settled = False
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        member.identity = self.identity

    def identity(self) -> RegistryIdentity:
        """This instance's metadata for the next join (``leader`` says whether it is primary)."""
        return replace(self._identity, leader=self.is_primary)

    @property
    def primary_url(self) -> str | None:
        return self.primary.url if self.primary is not None else None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"zurau-registry-election-{self.member.group_id}")

    async def stop(self, kill: bool = False) -> None:
        """Stop taking part; leave the group unless ``kill`` (the coordinator then notices only
        when the session times out, as when the process dies)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if kill:
            await self.member.stop_heartbeat()
        else:
            await self.member.leave()
        await self._publish(None, settled=False)

    async def wait_settled(self, timeout: float) -> bool:
        """Wait until an election completed (True) or ``timeout`` passed (False)."""
        async def settled() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: self.settled)

        try:
            await asyncio.wait_for(settled(), timeout)
        except TimeoutError:
            return False
        return True

    async def _publish(self, primary: RegistryIdentity | None, *, settled: bool) -> None:
        async with self._changed:
            self.primary = primary
            self.is_primary = self._identity.same_instance(primary)
            self.settled = settled
            self._changed.notify_all()

    async def _run(self) -> None:
        member = self.member
        while True:
            try:
                if not member.sticky:
                    await self._publish(None, settled=False)
                else:
                    async with self._changed:
                        self.settled = False
                await member.join([])
                election = member.election
                if election.error == DUPLICATE_URLS:
                    log.error(
                        "schema registry group %s: several members advertise the same URL; set host.name "
                        "to a name every instance can reach (no primary until this is fixed)",
                        member.group_id,
                    )
                    primary = None
                else:
                    primary = election.primary
                if primary is None and election.error == NO_ERROR:
                    log.warning(
                        "schema registry group %s: no leader-eligible instance; reads are served, "
                        "writes fail until one joins", member.group_id,
                    )
                self.generation = member.generation_id
                is_primary = self._identity.same_instance(primary)
                log.info(
                    "schema registry group %s generation %d: primary %s%s", member.group_id,
                    self.generation, primary.url if primary else None, " (this instance)" if is_primary else "",
                )
                if self.on_elected is not None:
                    await self.on_elected(primary, is_primary)
                await self._publish(primary, settled=True)
                while not member.needs_rejoin:
                    await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the coordinator moved or the cluster is unreachable: retry
                log.warning("schema registry group %s: %s; rejoining", member.group_id, e)
                await asyncio.sleep(member.retry_backoff * 5)
