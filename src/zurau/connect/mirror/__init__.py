"""MirrorMaker 2 on Connect: :class:`MirrorSourceConnector` copies topics from another cluster
(``<alias>.<topic>``) with their configs and ACLs, :class:`MirrorCheckpointConnector` translates
consumer group offsets, :class:`MirrorHeartbeatConnector` emits heartbeats; :mod:`.maker` runs
them all for several clusters in one process (``zurau mirror-maker mm2.properties``).
Modules: :mod:`.config` (settings, replication policy), :mod:`.formats` (offset sync, checkpoint
and heartbeat records), :mod:`.topics`, :mod:`.topic_configs`, :mod:`.topic_acls`,
:mod:`.scheduler`, :mod:`.bridge`, :mod:`.source`, :mod:`.checkpoint`, :mod:`.heartbeat`,
:mod:`.client` (MM2's ``MirrorClient``/``RemoteClusterUtils``), :mod:`.maker`.
"""

from zurau.connect.mirror.checkpoint import MirrorCheckpointConnector, MirrorCheckpointTask
from zurau.connect.mirror.heartbeat import MirrorHeartbeatConnector, MirrorHeartbeatTask
from zurau.connect.mirror.source import MirrorSourceConnector, MirrorSourceTask

__all__ = [
    "MirrorCheckpointConnector",
    "MirrorCheckpointTask",
    "MirrorHeartbeatConnector",
    "MirrorHeartbeatTask",
    "MirrorSourceConnector",
    "MirrorSourceTask",
]
