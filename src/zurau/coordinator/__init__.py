"""Coordinators: the group coordinator (classic and KIP-848 consumer groups, committed offsets).

* :mod:`.group_coordinator`: the pure state machine (requests + ``now_ms`` in; replies, records to
  write and timers out), combining :mod:`.classic_protocol` (JoinGroup/SyncGroup/Heartbeat/
  LeaveGroup) and :mod:`.consumer_protocol` (KIP-848 ConsumerGroupHeartbeat) over the shared
  state of :mod:`.base`; inputs and outputs in :mod:`.results`.
* :mod:`.group_metadata` / :mod:`.consumer_group` / :mod:`.assignors`: group models, member
  reconciliation and the server-side assignors.
* :mod:`.records` and the ``*_record(s)`` modules: Kafka's key/value formats of
  ``__consumer_offsets``; :mod:`.partitioner`: Kafka's group -> partition mapping.
* :mod:`.runtime`: the async shell wired into the broker (writes, timers, loading at start-up).
"""
