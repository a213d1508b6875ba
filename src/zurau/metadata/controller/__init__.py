"""The KRaft controller's pure core: requests in, metadata records and responses out.

:class:`~zurau.metadata.controller.quorum_controller.QuorumController` dispatches each request to
the control manager of its area (one module each, named after Kafka's: ``replication_control``,
``config_control``, ``cluster_control``, ...), which reads the current
:class:`~zurau.metadata.image.MetadataImage` and returns a
:class:`~zurau.metadata.controller.result.ControllerResult`.

Invariant (an import contract keeps it): nothing in this package does I/O, knows the event loop
or imports the shells that drive it (``local_controller``, ``raft_controller_channel``,
``kraft_manager``, the logs); they append the records and answer once they are committed.
"""
