"""The Raft quorum state on disk: Kafka's ``quorum-state`` file, a
:class:`~zurau.raft.quorum_state.QuorumStateStore`.

Location: ``<metadata_dir>/__cluster_metadata-0/quorum-state`` (:func:`quorum_state_path`). Format:
one JSON object, Kafka's ``QuorumStateData`` at data version 0::

    {"clusterId":"","leaderId":2,"leaderEpoch":7,"votedId":-1,"appliedOffset":0,
     "currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}

``leaderId``/``votedId`` are -1 when unknown / not voted (None in
:class:`~zurau.raft.quorum_state.ElectionState`); voters are written sorted.

Invariants:

* a write replaces the file atomically and durably (tmp file, fsync, rename, directory fsync:
  :func:`zurau.storage.checkpoint.atomic_write`), so a crash leaves the old or the new state, and
  :meth:`FileQuorumStateStore.write` returns only once the new state would survive one;
* a missing file means a fresh node (``read()`` is None); a file that cannot be parsed raises
  KafkaStorageError naming it: guessing would risk a second vote in an epoch;
* this object is the file's only writer, so the last state read or written is kept in memory and
  ``read()`` touches the disk only the first time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zurau.metadata.metadata_log import METADATA_TOPIC
from zurau.protocol.errors import KafkaStorageError
from zurau.raft.quorum_state import ElectionState
from zurau.storage.checkpoint import atomic_write, fsync_dir

__all__ = ["QUORUM_STATE_FILE", "QUORUM_STATE_VERSION", "FileQuorumStateStore", "quorum_state_path"]

QUORUM_STATE_FILE = "quorum-state"
QUORUM_STATE_VERSION = 0
_NONE = -1


def quorum_state_path(metadata_dir: Path) -> Path:
    """``<metadata_dir>/__cluster_metadata-0/quorum-state``."""
    return metadata_dir / f"{METADATA_TOPIC}-0" / QUORUM_STATE_FILE


def encode_quorum_state(state: ElectionState) -> bytes:
    doc = {
        "clusterId": "",
        "leaderId": _NONE if state.leader_id is None else state.leader_id,
        "leaderEpoch": state.epoch,
        "votedId": _NONE if state.voted_id is None else state.voted_id,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": v} for v in sorted(state.voters)],
        "data_version": QUORUM_STATE_VERSION,
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def _int(doc: dict[str, Any], key: str) -> int:
    value = doc[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{key} is not an integer")
    return value


def decode_quorum_state(data: bytes) -> ElectionState:
    """Parse the file's bytes; ValueError/KeyError/TypeError if they are not a valid v0 state."""
    doc = json.loads(data.decode("utf-8"))
    if not isinstance(doc, dict):
        raise TypeError("not a JSON object")
    version = _int(doc, "data_version")
    if version != QUORUM_STATE_VERSION:
        raise ValueError(f"unsupported data_version {version}")
    epoch = _int(doc, "leaderEpoch")
    leader = _int(doc, "leaderId")
    voted = _int(doc, "votedId")
    if epoch < 0:
        raise ValueError(f"negative leaderEpoch {epoch}")
    voters = doc["currentVoters"]
    if not isinstance(voters, list) or not all(isinstance(v, dict) for v in voters):
        raise TypeError("currentVoters is not a list of objects")
    return ElectionState(
        epoch=epoch,
        voted_id=None if voted == _NONE else voted,
        leader_id=None if leader == _NONE else leader,
        voters=frozenset(_int(v, "voterId") for v in voters),
    )


class FileQuorumStateStore:
    """A :class:`~zurau.raft.quorum_state.QuorumStateStore` in the ``quorum-state`` file at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._state: ElectionState | None = None
        self._loaded = False

    def read(self) -> ElectionState | None:
        if not self._loaded:
            self._state = self._read_file()
            self._loaded = True
        return self._state

    def _read_file(self) -> ElectionState | None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise KafkaStorageError(f"cannot read quorum state file {self.path}: {e}") from None
        try:
            return decode_quorum_state(data)
        except (ValueError, KeyError, TypeError) as e:  # JSONDecodeError, UnicodeDecodeError are ValueErrors
            raise KafkaStorageError(f"malformed quorum state file {self.path}: {e!r}") from None

    def write(self, state: ElectionState) -> None:
        parent = self.path.parent
        if not parent.is_dir():
            parent.mkdir(parents=True)
            fsync_dir(parent.parent)
        atomic_write(self.path, encode_quorum_state(state))
        self._state = state
        self._loaded = True
