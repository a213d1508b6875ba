"""Cluster metadata: a pure core and the shells that drive it.

The pure core (no event loop, no sockets, no files; import contracts in pyproject.toml keep it so):

* :mod:`~zurau.metadata.records` (the record dataclasses) and :mod:`~zurau.metadata.record_codec`
  (their bytes in Kafka's ``__cluster_metadata`` format);
* :mod:`~zurau.metadata.image` (the immutable image and the delta records replay into);
* :mod:`~zurau.metadata.controller` (``QuorumController`` and its control managers: records and
  responses from an image and a request), :mod:`~zurau.metadata.snapshot`,
  :mod:`~zurau.metadata.topic_names`, :mod:`~zurau.metadata.scram_parser`.

The shells, which append the core's records, replay them and answer once they are committed:
:mod:`~zurau.metadata.local_controller` (one node, over :mod:`~zurau.metadata.metadata_log`),
:mod:`~zurau.metadata.raft_controller_channel` with :mod:`~zurau.metadata.raft_client`,
:mod:`~zurau.metadata.kraft_log`, :mod:`~zurau.metadata.quorum_state_file` and
:mod:`~zurau.metadata.kraft_manager` (a cluster, over the Raft quorum), and on the broker side
:mod:`~zurau.metadata.broker_lifecycle_manager`, :mod:`~zurau.metadata.producer_id_manager` and
:mod:`~zurau.metadata.bootstrap_metadata`.
"""
