"""Produce: validate each partition's record batches once and append them as received.

Per partition: the topic must exist, the payload must be a valid run of v2 batches (CRC-32C,
sizes, magic), each batch within ``max.message.bytes``; idempotent producers are checked for
epoch and sequence by the log's producer state (a retried batch is answered with its original
offsets). Errors are per partition; the broker never drops the connection for a bad batch.
``acks=0`` gets no response at all, as Kafka clients expect; if any partition failed, the
connection is closed instead (Kafka's way of telling such a client to refresh its metadata).
``acks=1`` is answered right after the leader's write. ``acks=-1`` (all) is answered once the high
watermark of every written partition has passed its last offset (every in-sync replica has the
data): when that is already so after the appends (always, on one node) the answer is immediate
and synchronous; otherwise the request waits in the produce purgatory up to ``timeout_ms``, and a
partition not replicated by then answers REQUEST_TIMED_OUT (its data stays in the log).

Transactions (KIP-890): the first transactional batch of a producer in a partition must belong
to the producer's ongoing transaction. When this broker coordinates the request's
``transactional_id`` the replica manager checks that in-process; when another broker does,
the partitions needing it are verified first with that coordinator
(:class:`~zurau.coordinator.txn.txn_verification_channel.TxnVerificationChannel`, one round trip),
and a partition it refuses gets the coordinator's error without being appended.

Transactions v2 (KIP-890 part 2: Produce v12+ while the cluster finalizes ``transaction.version``
>= 2): the producer sends no AddPartitionsToTxn; a transactional batch whose producer has no
transaction open in the partition at that epoch makes this leader add the partition to the
producer's transaction through its coordinator first (Kafka's ``addPartition``: in-process, or
AddPartitionsToTxn v5 with ``verify_only=false`` to the coordinator's broker), whatever
``transaction.partition.verification.enable`` says. A refused add gets the coordinator's error
as the produce error (INVALID_PRODUCER_EPOCH for a fenced producer, NOT_ENOUGH_REPLICAS, which
producers retry, while the previous transaction is still completing). A v12 request below that
level is verified only, as v11.

Schema ID validation (:mod:`~zurau.broker.schema_validation`): partitions of topics with
``confluent.key/value.schema.validation`` are inspected first; ids the broker's cache cannot vouch
for are looked up in the schema registry (awaited, never blocking the loop), and a refused
partition gets INVALID_RECORD with its ``record_errors`` without being appended.

Authorisation (only with an authorizer configured): WRITE on each topic, else that topic's
partitions get TOPIC_AUTHORIZATION_FAILED before their existence is looked at; a transactional
produce also needs WRITE on its transactional id, else every partition gets
TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING

from zurau.broker.handlers._authz import TOPIC, TRANSACTIONAL_ID, Op, allowed, allowed_names
from zurau.broker.handlers._common import error_of, resolve_topic
from zurau.broker.request_context import CloseConnection, RequestContext
from zurau.broker.schema_validation import PartitionCheck, SchemaValidator, validation_enabled
from zurau.coordinator.txn.transaction_version import (
    PRODUCE_TV2_VERSION,
    finalized_transaction_version,
    supports_epoch_bump,
)
from zurau.coordinator.txn.txn_verification_channel import produce_error
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    CorruptRecordError,
    InvalidRequiredAcksError,
    KafkaError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.messages import (
    ProduceRequest,
    ProduceRequestTopicData,
    ProduceResponse,
    ProduceResponseResponses,
    ProduceResponseResponsesPartitionResponses,
)
from zurau.types import ZERO_UUID

if TYPE_CHECKING:
    from zurau.broker.interfaces import ReplicaManagerService
    from zurau.replication.purgatory import DelayedProduce

API_KEY = ApiKey.PRODUCE


def _partition_error(index: int, code: int, message: str | None) -> ProduceResponseResponsesPartitionResponses:
    return {
        "index": index,
        "error_code": code,
        "base_offset": -1,
        "log_append_time_ms": -1,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": message,
    }


Refusals = Mapping[tuple[str, int], KafkaError]
# acks=all partitions whose high watermark has not reached their last offset yet:
# (topic, partition) -> (offset the high watermark must reach, response entry)
Waiting = dict[tuple[str, int], tuple[int, ProduceResponseResponsesPartitionResponses]]


def handle(
    ctx: RequestContext, req: ProduceRequest
) -> ProduceResponse | Awaitable[ProduceResponse | None] | None:
    denied: dict[tuple[str, int], KafkaError] = {}
    if ctx.services.authorizer is not None:
        denied = _denied(ctx, req)
    validator = ctx.services.schema_validator
    if validator is not None:
        checks = _schema_checks(ctx, req, validator)
        if checks:
            if validator.wanted([c for c in checks.values() if isinstance(c, PartitionCheck)]):
                return _validate_then_produce(ctx, req, validator, checks, denied)
            return _handle(ctx, req, {**_refusals(validator, checks), **denied})  # the cache vouches: no await
    return _handle(ctx, req, denied)


def _denied(ctx: RequestContext, req: ProduceRequest) -> dict[tuple[str, int], KafkaError]:
    """Partitions the principal may not write, keyed by the topic's name (as requested, or
    resolved from its id), with the authorisation error each gets."""
    tid = req.get("transactional_id")
    if tid and not allowed(ctx, Op.WRITE, TRANSACTIONAL_ID, tid):
        error: KafkaError = TransactionalIdAuthorizationFailedError("Transactional id authorization failed.")
        return {
            (key, pd["index"]): error
            for td in req["topic_data"]
            if (key := _topic_key(ctx, td)) is not None
            for pd in td["partition_data"]
        }
    names = {_topic_key(ctx, td) for td in req["topic_data"]}
    ok = allowed_names(ctx, Op.WRITE, TOPIC, (n for n in names if n is not None))
    error = TopicAuthorizationFailedError("Topic authorization failed.")
    return {
        (key, pd["index"]): error
        for td in req["topic_data"]
        if (key := _topic_key(ctx, td)) is not None and key not in ok
        for pd in td["partition_data"]
    }


def _topic_key(ctx: RequestContext, td: ProduceRequestTopicData) -> str | None:
    name = td.get("name")
    if name:
        return str(name)
    topic = ctx.image.by_id(td["topic_id"]) if td.get("topic_id") is not None else None
    return topic.name if topic is not None else None


def _handle(
    ctx: RequestContext, req: ProduceRequest, refusals: Refusals
) -> ProduceResponse | Awaitable[ProduceResponse | None] | None:
    tid = req.get("transactional_id")
    if (
        tid
        and ctx.api_version >= PRODUCE_TV2_VERSION
        and supports_epoch_bump(finalized_transaction_version(ctx.image))
    ):
        pending = _needing_verification(ctx, req, add_partition=True)
        if pending:
            return _add_then_produce(ctx, req, tid, pending, refusals)
        return _produce(ctx, req, {}, refusals)
    if tid and ctx.txns.remote_coordinator(tid):
        pending = _needing_verification(ctx, req)
        if pending:
            return _verify_then_produce(ctx, req, tid, pending, refusals)
    return _produce(ctx, req, {}, refusals)


def _schema_checks(
    ctx: RequestContext, req: ProduceRequest, validator: SchemaValidator
) -> dict[tuple[str, int], PartitionCheck | KafkaError]:
    """The partitions of topics with schema validation on, inspected (or the error doing so)."""
    out: dict[tuple[str, int], PartitionCheck | KafkaError] = {}
    for td in req["topic_data"]:
        try:
            topic = resolve_topic(ctx, td.get("name"), td.get("topic_id"))
        except KafkaError:
            continue  # reported by the append loop
        if not topic.configs or not validation_enabled(topic.configs):
            continue
        for pd in td["partition_data"]:
            if pd["records"]:
                try:
                    out[(topic.name, pd["index"])] = validator.inspect(topic.name, topic.configs, pd["records"])
                except KafkaError as e:
                    out[(topic.name, pd["index"])] = e
                except Exception as e:  # undecodable bytes: the partition's error, never the connection's
                    out[(topic.name, pd["index"])] = CorruptRecordError(f"records cannot be decoded: {e}")
    return out


def _refusals(
    validator: SchemaValidator, checks: dict[tuple[str, int], PartitionCheck | KafkaError]
) -> dict[tuple[str, int], KafkaError]:
    refusals: dict[tuple[str, int], KafkaError] = {}
    for tp, check in checks.items():
        refusal = check if isinstance(check, KafkaError) else validator.verdict(check)
        if refusal is not None:
            refusals[tp] = refusal
    return refusals


async def _validate_then_produce(
    ctx: RequestContext,
    req: ProduceRequest,
    validator: SchemaValidator,
    checks: dict[tuple[str, int], PartitionCheck | KafkaError],
    denied: dict[tuple[str, int], KafkaError],
) -> ProduceResponse | None:
    await validator.resolve([c for c in checks.values() if isinstance(c, PartitionCheck)])
    result = _handle(ctx, req, {**_refusals(validator, checks), **denied})
    if inspect.isawaitable(result):
        return await result
    return result


def _needing_verification(
    ctx: RequestContext, req: ProduceRequest, *, add_partition: bool = False
) -> dict[tuple[str, int], tuple[int, int]]:
    """Partitions whose transactional batches need the remote coordinator's word first
    (``add_partition``: need adding to the transaction, transactions v2)."""
    out: dict[tuple[str, int], tuple[int, int]] = {}
    rm = ctx.replica_manager
    for td in req["topic_data"]:
        try:
            topic = resolve_topic(ctx, td.get("name"), td.get("topic_id"))
        except KafkaError:
            continue  # reported by the append loop
        for pd in td["partition_data"]:
            records = pd["records"]
            if records:
                producer = rm.txn_verification_needed(topic.name, pd["index"], records, add_partition=add_partition)
                if producer is not None:
                    out[(topic.name, pd["index"])] = producer
    return out


async def _verify_then_produce(
    ctx: RequestContext,
    req: ProduceRequest,
    tid: str,
    pending: dict[tuple[str, int], tuple[int, int]],
    refusals: Refusals,
) -> ProduceResponse | None:
    channel = ctx.txns.verification_channel
    assert channel is not None
    by_producer: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for tp, producer in pending.items():
        by_producer.setdefault(producer, []).append(tp)
    verdicts: dict[tuple[str, int], KafkaError | None] = {}
    for (pid, epoch), tps in by_producer.items():
        verdicts.update(await channel.verify(tid, pid, epoch, tps))
    result = _produce(ctx, req, verdicts, refusals)
    if inspect.isawaitable(result):
        return await result
    return result


async def _add_then_produce(
    ctx: RequestContext,
    req: ProduceRequest,
    tid: str,
    pending: dict[tuple[str, int], tuple[int, int]],
    refusals: Refusals,
) -> ProduceResponse | None:
    """Transactions v2: add the partitions to the producer's transaction, then append."""
    by_producer: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for tp, producer in pending.items():
        by_producer.setdefault(producer, []).append(tp)
    verdicts: dict[tuple[str, int], KafkaError | None] = {}
    for (pid, epoch), tps in by_producer.items():
        codes = await ctx.txns.add_partitions_implicitly(
            transactional_id=tid, producer_id=pid, producer_epoch=epoch, partitions=tps
        )
        what = f"producer {pid} ({tid!r})"
        verdicts.update({tp: produce_error(codes.get(tp, -1), what) for tp in tps})
    result = _produce(ctx, req, verdicts, refusals)
    if inspect.isawaitable(result):
        return await result
    return result


def _produce(
    ctx: RequestContext,
    req: ProduceRequest,
    verdicts: dict[tuple[str, int], KafkaError | None],
    refusals: Refusals,
) -> ProduceResponse | Awaitable[ProduceResponse] | None:
    """Append every partition; ``verdicts``: remote KIP-890 outcomes (None: verified);
    ``refusals``: partitions refused before the append (schema validation)."""
    acks = req["acks"]
    rm = ctx.replica_manager
    metrics = ctx.services.metrics
    responses: list[ProduceResponseResponses] = []
    waiting: Waiting | None = None
    for td in req["topic_data"]:
        # A decoded request has both keys, "" or the zero id where its version has no such field.
        name = td.get("name", "")
        topic_id = td.get("topic_id", ZERO_UUID)
        parts_out: list[ProduceResponseResponsesPartitionResponses] = []
        try:
            topic = resolve_topic(ctx, name, topic_id)
            terr: KafkaError | None = None
        except KafkaError as e:
            topic, terr = None, e
        for pd in td["partition_data"]:
            index = pd["index"]
            try:
                if acks not in (-1, 0, 1):
                    raise InvalidRequiredAcksError(f"acks must be -1, 0 or 1, not {acks}")
                if refusals and (refusal := refusals.get((topic.name if topic else name or "", index))) is not None:
                    raise refusal
                if terr is not None:
                    raise terr
                assert topic is not None
                if not 0 <= index < topic.num_partitions:
                    raise UnknownTopicOrPartitionError(f"{topic.name} has no partition {index}")
                records = pd["records"]
                if records is None or len(records) == 0:
                    raise CorruptRecordError("produce request carries no record batches")
                verified = (topic.name, index) in verdicts
                if verified and (refused := verdicts[(topic.name, index)]) is not None:
                    raise refused
                # The request buffer is ours alone (see broker/connection): patch it in place.
                nbytes = len(records)
                r = rm.append_as_leader(
                    topic.name, index, records, required_acks=acks, in_place=True, txn_verified=verified
                )
                if metrics is not None and not r.duplicate:
                    metrics.produced(topic.name, nbytes, r.record_count)
                entry: ProduceResponseResponsesPartitionResponses = {
                    "index": index,
                    "error_code": 0,
                    "base_offset": r.base_offset,
                    "log_append_time_ms": r.log_append_time_ms,
                    "log_start_offset": r.log_start_offset,
                    "record_errors": [],
                    "error_message": None,
                }
                parts_out.append(entry)
                if acks == -1 and rm.high_watermark(topic.name, index) <= r.last_offset:
                    if waiting is None:
                        waiting = {}
                    waiting[(topic.name, index)] = (r.last_offset + 1, entry)
            except Exception as e:  # every failure is this partition's error code
                if metrics is not None and topic is not None:
                    metrics.produce_failed(topic.name)
                code, msg = error_of(e)
                part_error = _partition_error(index, code, msg)
                # INVALID_RECORD from the log validator names the records (Kafka's RecordError)
                for batch_index, message in getattr(e, "record_errors", ()):
                    part_error["record_errors"].append(
                        {"batch_index": batch_index, "batch_index_error_message": message}
                    )
                parts_out.append(part_error)
        responses.append({"name": name, "topic_id": topic_id, "partition_responses": parts_out})
    if acks == 0:
        failed = [p for r in responses for p in r["partition_responses"] if p["error_code"]]
        if failed:
            raise CloseConnection(
                f"acks=0 produce failed for {len(failed)} partition(s) (first error code {failed[0]['error_code']})"
            )
        return None
    response: ProduceResponse = {"responses": responses, "throttle_time_ms": 0}
    if waiting:
        op = rm.delayed_produce({key: offset for key, (offset, _entry) in waiting.items()})
        if op.done:
            _apply_ack_errors(waiting, op.errors)
        else:
            return _await_replication(rm, op, waiting, req.get("timeout_ms", 0), response)
    return response


def _apply_ack_errors(waiting: Waiting, errors: dict[tuple[str, int], int]) -> None:
    """Set the acks=all outcome on each waiting partition's entry (offsets are kept, as Kafka)."""
    for key, code in errors.items():
        if code:
            waiting[key][1]["error_code"] = code


async def _await_replication(
    rm: ReplicaManagerService,
    op: DelayedProduce,
    waiting: Waiting,
    timeout_ms: int,
    response: ProduceResponse,
) -> ProduceResponse:
    _apply_ack_errors(waiting, await rm.wait_for_replication(op, timeout_ms))
    return response
