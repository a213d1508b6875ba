"""InitProducerId: hand an idempotent or transactional producer its producer id and epoch.

* No transactional id (idempotent producers): a fresh producer id with epoch 0, every time, whatever
  the transaction timeout (librdkafka sends -1), even when the request names an existing id and epoch (Kafka's behaviour: the epoch bumps of KIP-360
  apply to transactional producers). Ids come from
  :class:`~zurau.metadata.producer_id_manager.ProducerIdManager`, so they never repeat across
  restarts.
* A transactional id goes to the transaction coordinator
  (:meth:`~zurau.coordinator.txn.transaction_coordinator.TransactionCoordinator.init_producer_id`):
  the id keeps its producer id and gets the next epoch, which fences every older producer of the
  same transactional id; an ongoing transaction of an older producer is aborted first (the
  caller gets the retriable CONCURRENT_TRANSACTIONS meanwhile). v3+ may name the caller's
  current id and epoch to recover after an abortable error. An empty id is INVALID_REQUEST, a
  timeout above ``transaction.max.timeout.ms`` INVALID_TRANSACTION_TIMEOUT.
* Versions: PRODUCER_FENCED exists from v4; older versions get INVALID_PRODUCER_EPOCH instead, as
  from Kafka. v6 (two-phase commit, KIP-939) is not served.
"""

from __future__ import annotations

from collections.abc import Awaitable

from zurau.broker.handlers._authz import TOPIC, Op, allowed_any, cluster_allowed
from zurau.broker.handlers._txn import txn_coordinator, txn_error
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    ClusterAuthorizationFailedError,
    InvalidProducerEpochError,
    KafkaError,
    ProducerFencedError,
)
from zurau.protocol.messages import InitProducerIdRequest, InitProducerIdResponse

API_KEY = ApiKey.INIT_PRODUCER_ID
MAX_VERSION = 5


def _response(code: int, producer_id: int = -1, producer_epoch: int = -1) -> InitProducerIdResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
    }


def handle(ctx: RequestContext, req: InitProducerIdRequest) -> InitProducerIdResponse | Awaitable[InitProducerIdResponse]:
    tid = req.get("transactional_id")
    if tid is not None:
        return _transactional(ctx, req, tid)
    # An idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679).
    if ctx.services.authorizer is not None and not (
        cluster_allowed(ctx, Op.IDEMPOTENT_WRITE, log=False) or allowed_any(ctx, Op.WRITE, TOPIC)
    ):
        return _response(ClusterAuthorizationFailedError.code)
    # Like Kafka, no check of transaction_timeout_ms here: librdkafka's idempotent producer sends -1.
    try:
        producer_id = txn_coordinator(ctx).next_producer_id()
    except KafkaError as e:  # in a cluster: no block of ids at hand yet (retriable)
        return _response(e.code)
    return _response(0, producer_id, 0)


async def _transactional(ctx: RequestContext, req: InitProducerIdRequest, tid: str) -> InitProducerIdResponse:
    err = txn_error(ctx, tid)
    if err is not None:
        return _response(err.code)
    result = await txn_coordinator(ctx).init_producer_id(
        transactional_id=tid,
        timeout_ms=req["transaction_timeout_ms"],
        producer_id=req.get("producer_id", -1),
        producer_epoch=req.get("producer_epoch", -1),
    )
    code = result.error_code
    if code == ProducerFencedError.code and ctx.api_version < 4:
        code = InvalidProducerEpochError.code
    return _response(code, result.producer_id, result.producer_epoch)
