"""The group coordinator: classic groups, KIP-848 consumer groups and committed offsets.

Handlers call :class:`~.service.GroupCoordinatorService` (one async method per Kafka API); it
submits operations to :class:`~.group_runtime.GroupCoordinatorRuntime`, which runs the state
machine :class:`~.group_coordinator_shard.GroupCoordinatorShard` over the ``__consumer_offsets``
partitions served here. The shard composes :class:`~.classic_groups.ClassicGroupManager`,
:class:`~.consumer_groups.ConsumerGroupManager` and :class:`~.offset_manager.OffsetManager`,
which share only a :class:`~.shard_context.GroupShardContext`.
"""
