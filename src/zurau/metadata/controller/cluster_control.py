"""Broker registrations and their states (Kafka's ``ClusterControlManager`` with its
``BrokerControlState`` transitions): BrokerRegistration, BrokerHeartbeat, UnregisterBroker and
fencing brokers whose session expired. Sessions themselves are soft state kept by the shell
(:mod:`zurau.metadata.controller.broker_heartbeat_manager`).

Controlled shutdown (Kafka's): a broker that asks to shut down first enters controlled shutdown
(its leaderships move, it leaves every ISR) and is fenced and told to stop only once every other
live broker has reported applying those records. The offsets brokers report in heartbeats and
the offset each shutdown waits for are this manager's only state, soft like the sessions: never
written to the log, rebuilt by a controller that becomes active from the heartbeats it receives.

Invariants: a broker epoch is the offset of its registration record; a record naming a broker
names its current epoch; a broker that stops being live leaves its partitions in the same batch
(:meth:`~zurau.metadata.controller.partition_change.PartitionChanges.leave_partitions`), and one
that becomes unfenced is elected leader of the leaderless partitions whose ISR holds it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable

from zurau.metadata.controller.feature_control import FeatureControlManager
from zurau.metadata.controller.partition_change import PartitionChanges, elr_enabled
from zurau.metadata.controller.result import ControllerResult, PendingRecords
from zurau.metadata.image import BrokerRegistration, MetadataImage
from zurau.metadata.records import (
    CONTROLLED_SHUTDOWN_ENTER,
    CONTROLLED_SHUTDOWN_NONE,
    FENCING_FENCE,
    FENCING_NONE,
    FENCING_UNFENCE,
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    MetadataRecord,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
)
from zurau.protocol.errors import (
    BrokerIdNotRegisteredError,
    DuplicateBrokerRegistrationError,
    InconsistentClusterIdError,
    KafkaError,
    StaleBrokerEpochError,
)
from zurau.protocol.messages import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    UnregisterBrokerResponse,
)

log = logging.getLogger("zurau.controller")

# What a heartbeat moves a registration between (Kafka's BrokerControlState).
_FENCED, _UNFENCED, _CONTROLLED_SHUTDOWN, _SHUTDOWN_NOW = "fenced", "unfenced", "controlled shutdown", "shut down now"


class ClusterControlManager:
    def __init__(self, changes: PartitionChanges, features: FeatureControlManager) -> None:
        self.changes = changes
        self.features = features
        # Soft state of the active controller, never written to the log (Kafka's
        # BrokerHeartbeatManager keeps the same): the metadata offset each broker last reported
        # in a heartbeat, and for a broker in controlled shutdown the offset of the records that
        # moved its leaderships away. A controller that becomes active rebuilds both from the
        # heartbeats it receives.
        self._reported_offsets: dict[int, int] = {}
        self._shutdown_offsets: dict[tuple[int, int], int] = {}

    # ------------------------------------------------------------------ BrokerRegistration
    def register_broker(
        self,
        image: MetadataImage,
        request: BrokerRegistrationRequest,
        next_offset: int,
        cluster_id_ok: bool = True,
        is_alive: Callable[[int], bool] = lambda _: False,
    ) -> ControllerResult[BrokerRegistrationResponse]:
        """BrokerRegistration, checked in the order Kafka's ``ClusterControlManager`` does.

        ``next_offset`` is the metadata offset the first record of this result will get: it
        becomes the broker epoch, so the epoch is the registration's own offset. ``cluster_id_ok``
        says whether the request's cluster id is this cluster's; ``is_alive(id)`` whether the
        broker id has a live session on the active controller.

        * wrong cluster id: INCONSISTENT_CLUSTER_ID;
        * an unfenced registration of the id from another incarnation whose session is alive:
          DUPLICATE_BROKER_REGISTRATION (a fenced one, or an expired session, is replaced);
        * the same incarnation again (a retried request): its current epoch, no records;
        * a ZooKeeper-migration broker: BROKER_ID_NOT_REGISTERED;
        * a listed feature whose finalized level is outside the broker's range: UNSUPPORTED_VERSION;
        * otherwise one RegisterBrokerRecord of a fenced broker with epoch ``next_offset``,
          followed by the records taking a former incarnation out of its ISRs and leaderships;
          with ELR on, a broker whose ``previous_broker_epoch`` is not the epoch of its last
          registration (it did not shut down cleanly, KIP-966) also leaves every ELR.

        Response: the BrokerRegistration response body (``broker_epoch`` -1 on error).
        """
        broker_id: int = request["broker_id"]
        incarnation: uuid.UUID = request["incarnation_id"]
        try:
            if not cluster_id_ok:
                raise InconsistentClusterIdError(
                    f"Expected cluster ID {image.cluster_id}, but got cluster ID {request.get('cluster_id')}"
                )
            existing = image.brokers.get(broker_id)
            if existing is not None:
                if existing.incarnation_id == incarnation:
                    return ControllerResult([], _registration_response(0, existing.epoch))
                if not existing.fenced and is_alive(broker_id):
                    raise DuplicateBrokerRegistrationError("Another broker is registered with that broker id.")
            if request.get("is_migrating_zk_broker"):
                raise BrokerIdNotRegisteredError("Controller does not support registering ZK brokers.")
            features = tuple(
                BrokerFeature(f["name"], f["min_supported_version"], f["max_supported_version"])
                for f in request.get("features") or ()
            )
            self.features.check_broker_features(image, features)
        except KafkaError as e:
            log.info("refused the registration of broker %d: %s", broker_id, e)
            return ControllerResult([], _registration_response(e.code, -1))
        record = RegisterBrokerRecord(
            broker_id,
            incarnation,
            next_offset,
            tuple(
                BrokerEndpoint(lst["name"], lst["host"], lst["port"], lst["security_protocol"])
                for lst in request.get("listeners") or ()
            ),
            features,
            request.get("rack"),
            fenced=True,
            in_controlled_shutdown=False,
            log_dirs=tuple(request.get("log_dirs") or ()),
        )
        log.info("registering broker %d (incarnation %s) with broker epoch %d", broker_id, incarnation, next_offset)
        records: list[MetadataRecord] = [record]
        # KIP-966: the restart was clean only if the broker proves it with the epoch of its last
        # registration (from its clean-shutdown marker); else it leaves every ELR too.
        clean = existing is not None and request.get("previous_broker_epoch", -1) == existing.epoch
        unclean = not clean and elr_enabled(image)
        if existing is not None or unclean:
            # A new incarnation starts fenced: the old one's ISR places and leaderships go.
            if unclean:
                log.info("broker %d restarted without a clean shutdown: it leaves every ISR and ELR", broker_id)
            records += self.changes.leave_partitions(image.apply(records), broker_id, unclean_shutdown=unclean)
        return ControllerResult(records, _registration_response(0, next_offset))

    # ------------------------------------------------------------------ BrokerHeartbeat
    def broker_heartbeat(
        self, image: MetadataImage, request: BrokerHeartbeatRequest, next_offset: int
    ) -> ControllerResult[BrokerHeartbeatResponse]:
        """BrokerHeartbeat: moves the broker's registration along Kafka's broker states.

        The registration named by (``broker_id``, ``broker_epoch``) must be the current one, else
        STALE_BROKER_EPOCH (also for an id that never registered, as Kafka answers). The broker is
        *caught up* when its ``current_metadata_offset`` has reached its registration's offset
        (the epoch). Its state follows from the registration: fenced, unfenced, in controlled
        shutdown, or told to shut down (fenced and in controlled shutdown). Then:

        * fenced: ``want_shut_down`` -> shut down now; caught up and not ``want_fence`` ->
          unfenced; otherwise it stays fenced;
        * unfenced: ``want_fence`` -> fenced (shut down now if it also wants to shut down);
          ``want_shut_down`` -> controlled shutdown: the same batch of records moves every
          leadership it held to another ISR member and takes it out of every ISR;
        * in controlled shutdown: shut down now once it leads no partition and every other
          live broker has reported (in its heartbeats) a metadata offset at or past the records
          that moved its leaderships away, as Kafka's controller grants it; until then it stays
          in controlled shutdown (``should_shut_down`` false). With no other live broker the
          grant comes at once, in the batch that enters controlled shutdown. ``want_fence``
          shuts it down now;
        * shut down now: stays so.

        A state change is one BrokerRegistrationChangeRecord; "shut down now" marks the broker
        fenced and in controlled shutdown, and answers ``should_shut_down``. A broker that stops
        being live also leaves its partitions; one that becomes unfenced is elected leader of the
        leaderless partitions whose ISR holds it. ``next_offset`` is the offset of this result's
        first record (kept for when a controlled shutdown has to wait for leadership to move).
        """
        broker_id: int = request["broker_id"]
        epoch: int = request["broker_epoch"]
        reg = image.brokers.get(broker_id)
        if reg is None:
            return ControllerResult([], _heartbeat_error(StaleBrokerEpochError.code))
        if reg.epoch != epoch:
            log.info("heartbeat of broker %d: expected broker epoch %d, got %d", broker_id, reg.epoch, epoch)
            return ControllerResult([], _heartbeat_error(StaleBrokerEpochError.code))
        reported = request.get("current_metadata_offset", -1)
        self._reported_offsets[broker_id] = reported
        caught_up = reported >= reg.epoch
        current = _broker_state(reg)
        nxt = self._next_state(
            image, broker_id, reg, current, caught_up, bool(request.get("want_fence")),
            bool(request.get("want_shut_down")), next_offset,
        )
        records: list[MetadataRecord] = []
        if nxt == _CONTROLLED_SHUTDOWN and current == _UNFENCED:
            records.append(BrokerRegistrationChangeRecord(broker_id, epoch, FENCING_NONE, CONTROLLED_SHUTDOWN_ENTER))
            records += self.changes.leave_partitions(image.apply(records), broker_id)
            shutdown_offset = next_offset + len(records) - 1
            if self._may_shut_down(image.apply(records), broker_id, shutdown_offset):
                # No other live broker has to learn of the moves first: shut down now.
                records[0] = BrokerRegistrationChangeRecord(broker_id, epoch, FENCING_FENCE, CONTROLLED_SHUTDOWN_ENTER)
                nxt = _SHUTDOWN_NOW
            else:
                self._shutdown_offsets[(broker_id, epoch)] = shutdown_offset
            log.info("broker %d: %s -> %s", broker_id, current, nxt)
        elif nxt != current:
            log.info("broker %d: %s -> %s", broker_id, current, nxt)
            records.append(_state_change(broker_id, reg, nxt))
            after = image.apply(records)
            if nxt == _UNFENCED:
                records += self.changes.elect_leaderless(after, broker_id)
            elif current in (_UNFENCED, _CONTROLLED_SHUTDOWN):
                records += self.changes.leave_partitions(after, broker_id)
        return ControllerResult(
            records,
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "is_caught_up": caught_up,
                "is_fenced": nxt in (_FENCED, _SHUTDOWN_NOW),
                "should_shut_down": nxt == _SHUTDOWN_NOW,
            },
        )

    def _next_state(
        self,
        image: MetadataImage,
        broker_id: int,
        reg: BrokerRegistration,
        current: str,
        caught_up: bool,
        want_fence: bool,
        want_shut_down: bool,
        next_offset: int,
    ) -> str:
        """The state a heartbeat moves ``reg`` to (see :meth:`broker_heartbeat`)."""
        if current == _FENCED:
            if want_shut_down:
                return _SHUTDOWN_NOW
            return _UNFENCED if not want_fence and caught_up else _FENCED
        if current == _UNFENCED:
            if want_fence:
                return _SHUTDOWN_NOW if want_shut_down else _FENCED
            return _CONTROLLED_SHUTDOWN if want_shut_down else _UNFENCED
        if current == _CONTROLLED_SHUTDOWN:
            key = (broker_id, reg.epoch)
            if key not in self._shutdown_offsets:  # entered under another active controller
                self._shutdown_offsets[key] = next_offset - 1
            if want_fence or self._may_shut_down(image, broker_id, self._shutdown_offsets[key]):
                return _SHUTDOWN_NOW
            return _CONTROLLED_SHUTDOWN
        return _SHUTDOWN_NOW

    def _may_shut_down(self, image: MetadataImage, broker_id: int, shutdown_offset: int) -> bool:
        """A broker in controlled shutdown may stop once it leads no partition and every other
        live broker has applied the metadata up to ``shutdown_offset`` (Kafka's lowest active
        offset rule: the new leaders know they lead before the old one goes)."""
        for t in image.all():
            for p in t.partitions.values():
                if p.leader == broker_id:
                    return False
        for b in image.live_brokers():
            if b.id != broker_id and self._reported_offsets.get(b.id, -1) < shutdown_offset:
                return False
        return True

    # ------------------------------------------------------------------ fencing, UnregisterBroker
    def fence_brokers(self, image: MetadataImage, broker_ids: Iterable[int]) -> ControllerResult[None]:
        """Fence brokers whose session expired: a FenceBrokerRecord for each of ``broker_ids``
        that is registered and not fenced yet (in id order), each followed by the records that
        take it out of its partitions' ISRs and leaderships; the others are left alone."""
        pending = PendingRecords(image)
        for b in sorted(set(broker_ids)):
            reg = pending.image.brokers.get(b)
            if reg is not None and not reg.fenced:
                pending.add([FenceBrokerRecord(b, reg.epoch)])
                pending.add(self.changes.leave_partitions(pending.image, b))
        return ControllerResult(pending.records, None)

    def unregister_broker(self, image: MetadataImage, broker_id: int) -> ControllerResult[UnregisterBrokerResponse]:
        """UnregisterBroker: an UnregisterBrokerRecord for the current registration of the id,
        then the records that take it out of its partitions' ISRs and leaderships (as for a
        fenced broker); BROKER_ID_NOT_REGISTERED if there is none. As Kafka's controller, a
        broker that is alive and unfenced may be unregistered too (kafka-cluster.sh unregister is
        meant for brokers that are gone for good; a live one loses its session and must register
        again). Response: the UnregisterBroker response body."""
        reg = image.brokers.get(broker_id)
        if reg is None:
            return ControllerResult(
                [],
                {
                    "throttle_time_ms": 0,
                    "error_code": BrokerIdNotRegisteredError.code,
                    "error_message": f"Broker ID {broker_id} is not currently registered",
                },
            )
        records: list[MetadataRecord] = [UnregisterBrokerRecord(broker_id, reg.epoch)]
        records += self.changes.leave_partitions(image.apply(records), broker_id)
        return ControllerResult(records, {"throttle_time_ms": 0, "error_code": 0, "error_message": None})


def _broker_state(reg: BrokerRegistration) -> str:
    if reg.in_controlled_shutdown:
        return _SHUTDOWN_NOW if reg.fenced else _CONTROLLED_SHUTDOWN
    return _FENCED if reg.fenced else _UNFENCED


def _state_change(broker_id: int, reg: BrokerRegistration, nxt: str) -> BrokerRegistrationChangeRecord:
    """The record moving ``reg`` to ``nxt`` (not for entering controlled shutdown)."""
    if nxt == _UNFENCED:
        return BrokerRegistrationChangeRecord(broker_id, reg.epoch, FENCING_UNFENCE)
    if nxt == _FENCED:
        return BrokerRegistrationChangeRecord(broker_id, reg.epoch, FENCING_FENCE)
    return BrokerRegistrationChangeRecord(
        broker_id,
        reg.epoch,
        FENCING_NONE if reg.fenced else FENCING_FENCE,
        CONTROLLED_SHUTDOWN_NONE if reg.in_controlled_shutdown else CONTROLLED_SHUTDOWN_ENTER,
    )


def _registration_response(code: int, broker_epoch: int) -> BrokerRegistrationResponse:
    return {"throttle_time_ms": 0, "error_code": code, "broker_epoch": broker_epoch}


def _heartbeat_error(code: int) -> BrokerHeartbeatResponse:
    return {"throttle_time_ms": 0, "error_code": code, "is_caught_up": False, "is_fenced": True, "should_shut_down": False}
