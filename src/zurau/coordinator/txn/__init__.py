"""The transaction coordinator: transactional ids, producer epochs, transactions and markers.

Handlers call :class:`~.service.TxnCoordinatorService` (one async method per Kafka API); it
submits operations to :class:`~.transaction_runtime.TransactionRuntime`, which runs the state
machine :class:`~.transaction_coordinator.TransactionCoordinator` over the ``__transaction_state``
partitions served here and writes the markers (in-process, or through
:mod:`.marker_channel` to other leaders); :mod:`.txn_verification_channel` verifies produce
requests with another broker's coordinator (KIP-890).
"""
