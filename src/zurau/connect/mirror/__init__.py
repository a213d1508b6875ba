"""MirrorMaker 2 on Connect: :class:`MirrorSourceConnector` copies topics from another cluster
(``<alias>.<topic>``), :class:`MirrorCheckpointConnector` translates consumer group offsets.
Modules: :mod:`.config` (settings, replication policy), :mod:`.formats` (offset sync and
checkpoint records), :mod:`.topics`, :mod:`.bridge`, :mod:`.source`, :mod:`.checkpoint`.
"""

from zurau.connect.mirror.checkpoint import MirrorCheckpointConnector, MirrorCheckpointTask
from zurau.connect.mirror.source import MirrorSourceConnector, MirrorSourceTask

__all__ = ["MirrorCheckpointConnector", "MirrorCheckpointTask", "MirrorSourceConnector", "MirrorSourceTask"]
