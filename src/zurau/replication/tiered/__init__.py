"""The remote log manager's package (tiered storage, KIP-405): what runs on the brokers to move
closed segments to the remote tier and to serve them back.

Modules:

* ``topic_based_metadata_manager``  the RemoteLogMetadataManager over ``__remote_log_metadata``
                                    (Kafka's TopicBasedRemoteLogMetadataManager): events written
                                    with Zurau's own client, read back into a cache per hosted
                                    partition (:mod:`zurau.storage.remote.remote_log_metadata_cache`)
* ``remote_log_manager``            copies, remote retention, remote reads (Kafka's RemoteLogManager)

The data model, the storage plugins and the metadata's record format live below, in
:mod:`zurau.storage.remote`.
"""
