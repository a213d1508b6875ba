"""The fetcher's side of a fetch session (KIP-227; Kafka's ``FetchSessionHandler``), for one
connection to one broker, one request at a time.

:meth:`FetchSessionHandler.build` turns the partitions to fetch now into what the request
carries: with no session, all of them, ``session_id`` 0 and epoch 0 (asking for a session);
within a session, only the partitions that are new or whose parameters changed since they were
last sent, the partitions that left as ``forgotten``, the session id and its next epoch.
:meth:`FetchSessionHandler.handle_response` then takes the answer: a session id starts or
continues the session (the epoch moves on), id 0 means none was granted (the next fetch is full
again), and a top-level error -- or :meth:`reset` after a failed request -- drops the session so
the next fetch is full. An incremental answer carries only the partitions with news, so
partitions missing from it simply had none.

A partition's parameters are what the request says of it (a ``FetchRequestTopicsPartitions`` of
:mod:`zurau.protocol.messages`, or any mapping the caller builds); the handler only compares
them for equality, so it takes them as read-only mappings and never copies their contents.
"""

from __future__ import annotations

from collections.abc import Mapping

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0

#: A partition's key in the session: (topic name, partition index).
Key = tuple[str, int]

#: A partition's fetch parameters as the request names them (offset, max bytes, epochs ...).
PartitionParams = Mapping[str, object]


class FetchSessionHandler:
    """See the module docstring. ``sent`` maps each partition of the session to the parameters
    the broker has for it (what the last requests said)."""

    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.sent: dict[Key, PartitionParams] = {}
        self._pending: Mapping[Key, PartitionParams] | None = None

    def reset(self) -> None:
        """Forget the session (a failed request or connection): the next fetch is full."""
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.sent = {}
        self._pending = None

    def build(self, wanted: Mapping[Key, PartitionParams]) -> tuple[int, int, list[Key], list[Key]]:
        """(session id, epoch, keys of ``wanted`` to name in the request, keys to forget)."""
        self._pending = wanted
        if self.session_id == INVALID_SESSION_ID:
            return INVALID_SESSION_ID, INITIAL_EPOCH, list(wanted), []
        sent = self.sent
        named = [k for k, fp in wanted.items() if sent.get(k) != fp]
        forgotten = [k for k in sent if k not in wanted]
        return self.session_id, self.epoch, named, forgotten

    def handle_response(self, error_code: int, session_id: int) -> None:
        """Take the answer to the request :meth:`build` made."""
        wanted, self._pending = self._pending, None
        if error_code or wanted is None:
            self.reset()
            return
        if session_id == INVALID_SESSION_ID:
            self.reset()
            return
        if session_id != self.session_id:  # a new session (our full fetch created it)
            self.session_id = session_id
            self.epoch = INITIAL_EPOCH
        self.epoch = 1 if self.epoch == 2**31 - 1 else self.epoch + 1
        self.sent = dict(wanted)
