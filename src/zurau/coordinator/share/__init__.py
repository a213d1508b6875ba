"""The share coordinator (KIP-932 share-group state persistence): the state of each
share-partition (a share group's view of one topic partition) in ``__share_group_state``.

* :mod:`.share_state_records`: Kafka 4.2's ShareSnapshot/ShareUpdate record formats, batches of
  them, and the key -> ``__share_group_state`` partition mapping (:func:`partition_for_key`).
* :mod:`.share_coordinator_shard`: the pure state machine (Kafka's ``ShareCoordinatorShard``):
  initialize, write, read, read summary and delete of share-partition state, replay of the
  records, snapshot cadence, cold snapshots; it runs on the generic
  :class:`~zurau.coordinator.coordinator_runtime.CoordinatorRuntime` like the other coordinators.
* :mod:`.share_runtime`: that runtime for ``__share_group_state`` (record batches, the topic's
  KIP-932 settings, created on first use).
* :mod:`.service`: the face the broker's handlers see (one async method per API, 83-87).
"""
