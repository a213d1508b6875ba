"""TxnOffsetCommit: store a group's offsets inside a producer's transaction.

Each partition must exist (else UNKNOWN_TOPIC_OR_PARTITION). The offsets are appended to the
group's ``__consumer_offsets`` partition as one transactional batch of the producer; the log
fences an older epoch (INVALID_PRODUCER_EPOCH) and refuses a partition that AddOffsetsToTxn did
not add to the ongoing transaction (INVALID_TXN_STATE). They become the group's committed offsets
when the transaction commits and are dropped if it aborts. From v3 the member id, instance id and
generation are checked against the group when given (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
FENCED_INSTANCE_ID).

v5 with ``transaction.version`` >= 2 finalized is transactions v2 (KIP-890 part 2): the producer
sent no AddOffsetsToTxn, so the group's ``__consumer_offsets`` partition is first added to its
transaction through the transaction coordinator (Kafka's ``addPartition``); if that fails every
partition gets the error (INVALID_PRODUCER_EPOCH for a fenced producer, COORDINATOR_LOAD_IN_PROGRESS
for a coordinator that cannot answer yet: retried). Below that level v5 behaves as v4.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import TOPIC, Op, allowed_names
from zurau.broker.handlers._groups import coordinator, group_error
from zurau.broker.handlers._txn import txn_denied
from zurau.broker.request_context import RequestContext
from zurau.coordinator.group.results import OffsetCommitEntry
from zurau.coordinator.txn.transaction_version import (
    TXN_OFFSET_COMMIT_TV2_VERSION,
    finalized_transaction_version,
    supports_epoch_bump,
)
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidProducerEpochError,
    NotCoordinatorError,
    NotEnoughReplicasError,
    ProducerFencedError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from zurau.types import TopicPartitionKey

API_KEY = ApiKey.TXN_OFFSET_COMMIT

# The transaction coordinator's answers a TxnOffsetCommit client retries without a lookup.
_RETRIABLE = frozenset(
    e.code
    for e in (
        NotCoordinatorError,
        CoordinatorNotAvailableError,
        CoordinatorLoadInProgressError,
        ConcurrentTransactionsError,
        NotEnoughReplicasError,
    )
)


async def _add_offsets_partition(ctx: RequestContext, req: TxnOffsetCommitRequest) -> int:
    """Transactions v2: add the group's offsets partition to the producer's transaction; the
    error code every partition gets (0: added)."""
    groups = coordinator(ctx)
    tp = (groups.topic, groups.partition_for(req["group_id"]))
    codes = await ctx.txns.add_partitions_implicitly(
        transactional_id=req["transactional_id"],
        producer_id=req["producer_id"],
        producer_epoch=req["producer_epoch"],
        partitions=[tp],
    )
    code = codes.get(tp, CoordinatorNotAvailableError.code)
    if code == ProducerFencedError.code:
        return InvalidProducerEpochError.code
    if code in _RETRIABLE:
        return CoordinatorLoadInProgressError.code
    return code


async def handle(ctx: RequestContext, req: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    version = ctx.api_version
    topics = ctx.image
    groups = coordinator(ctx)
    group_id = req["group_id"]
    err = txn_denied(ctx, req["transactional_id"]) or group_error(ctx, group_id)
    readable = allowed_names(ctx, Op.READ, TOPIC, (t["name"] for t in req["topics"]))
    plan: list[tuple[str, list[tuple[int, int | None]]]] = []
    entries: list[OffsetCommitEntry] = []
    for t in req["topics"]:
        tm = topics.get(t["name"])
        parts: list[tuple[int, int | None]] = []
        for p in t["partitions"]:
            index = p["partition_index"]
            if err is not None:
                parts.append((index, err.code))
            elif t["name"] not in readable:
                parts.append((index, TopicAuthorizationFailedError.code))
            elif tm is None or not 0 <= index < tm.num_partitions:
                parts.append((index, UnknownTopicOrPartitionError.code))
            else:
                parts.append((index, None))
                entries.append(
                    OffsetCommitEntry(
                        t["name"],
                        index,
                        p["committed_offset"],
                        p.get("committed_leader_epoch", -1),
                        p["committed_metadata"],
                    )
                )
        plan.append((t["name"], parts))
    results: dict[TopicPartitionKey, int] = {}
    if entries and version >= TXN_OFFSET_COMMIT_TV2_VERSION and supports_epoch_bump(
        finalized_transaction_version(ctx.image)
    ):
        added = await _add_offsets_partition(ctx, req)
        if added:
            results = {(e.topic, e.partition): added for e in entries}
            entries = []
    if entries:
        results = await groups.txn_offset_commit(
            group_id=group_id,
            producer_id=req["producer_id"],
            producer_epoch=req["producer_epoch"],
            member_id=req.get("member_id", "") if version >= 3 else "",
            generation_id=req.get("generation_id", -1) if version >= 3 else -1,
            group_instance_id=req["group_instance_id"] if version >= 3 else None,
            offsets=entries,
        )
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": name,
                "partitions": [
                    {"partition_index": i, "error_code": code if code is not None else results[(name, i)]}
                    for i, code in parts
                ],
            }
            for name, parts in plan
        ],
    }
