"""Coordinators: the group coordinator (classic and KIP-848 consumer groups, committed offsets)
and the transaction coordinator.

* :mod:`.group_coordinator`: the pure state machine (requests + ``now_ms`` in; replies, records to
  write and timers out), combining :mod:`.classic_protocol` (JoinGroup/SyncGroup/Heartbeat/
  LeaveGroup) and :mod:`.consumer_protocol` (KIP-848 ConsumerGroupHeartbeat) over the shared
  state of :mod:`.base`; inputs and outputs in :mod:`.results`.
* :mod:`.group_metadata` / :mod:`.consumer_group` / :mod:`.assignors`: group models, member
  reconciliation and the server-side assignors.
* :mod:`.records` and the ``*_record(s)`` modules: Kafka's key/value formats of
  ``__consumer_offsets``; :mod:`.partitioner`: Kafka's group -> partition mapping.
* :mod:`.transaction_coordinator` and :mod:`.transaction_log_records`: the transaction
  coordinator's state machine and the ``__transaction_state`` format.
* :mod:`.coordinator_runtime`: the one shell both state machines run in (partitions of the
  internal topic loaded and unloaded one by one, writes answered once committed, timers), over
  a :mod:`.partition_writer` and a clock; :mod:`.runtime` and :mod:`.transaction_runtime` add
  what is specific to groups and to transactions; :mod:`.internal_topic` reads a partition back.
"""
