"""Coordinators: the group coordinator (classic and KIP-848 consumer groups, committed offsets)
and the transaction coordinator, each behind a service face, over one generic runtime.

Generic (this package):

* :mod:`.coordinator_runtime`: Kafka's ``CoordinatorRuntime``, the one shell every coordinator's
  state machine runs in (partitions of the internal topic loaded and unloaded one by one, writes
  answered once committed, timers), over a :mod:`.partition_writer` and a clock;
  :mod:`.internal_topic` reads a partition back.
* :mod:`.timers` (timers that carry their callback), :mod:`.partitioner` (Kafka's key ->
  partition mapping), :mod:`.topics` (the read-only view of topics), :mod:`.write_errors`
  (append failure -> coordinator error).

Settings: each runtime takes its coordinator's typed view, built once by the broker config
(``BrokerConfig.group_coordinator``: :class:`~zurau.config.coordinator_views.GroupCoordinatorConfig`,
which is also the group state machine's config; ``BrokerConfig.transaction_coordinator``:
:class:`~zurau.config.coordinator_views.TransactionCoordinatorConfig`, from which the transaction
state machine's ``TransactionConfig`` is derived), never the whole broker config.

Per coordinator (a subpackage each):

* :mod:`.group`: ``service.py`` (``GroupCoordinatorService``, what handlers call),
  ``group_runtime.py`` (the runtime for ``__consumer_offsets``), ``group_coordinator_shard.py``
  (the state machine) composing ``classic_groups.py``, ``consumer_groups.py`` and
  ``offset_manager.py``; group models, assignors and the ``__consumer_offsets`` record formats.
* :mod:`.txn`: ``service.py`` (``TxnCoordinatorService``), ``transaction_runtime.py`` (the runtime
  for ``__transaction_state``, markers), ``transaction_coordinator.py`` (the state machine), the
  record format and the inter-broker channels (markers, KIP-890 verification).
"""
