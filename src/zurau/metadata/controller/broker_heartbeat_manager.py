"""Broker sessions on the active controller: when each broker was last heard from.

This is soft state, never written to the metadata log: only the active controller keeps it, and a
controller that becomes active starts every registered broker on a fresh session
(:meth:`BrokerHeartbeatManager.reset`), as Kafka's controller does on activation, so a broker is
not fenced for heartbeats the previous controller received.

The manager holds no clock: every question takes ``now_ms``. Invariants:

* a broker has a session from its first :meth:`~BrokerHeartbeatManager.touch` (or
  :meth:`~BrokerHeartbeatManager.reset`) until :meth:`~BrokerHeartbeatManager.remove`;
* a session is alive while ``now_ms - last_contact <= session_timeout_ms`` (at exactly the timeout
  it is still alive; one millisecond later it has expired);
* a broker without a session is never alive, and never reported as expired (there is no session
  to expire; whether to fence an unknown broker is the caller's decision).
"""

from __future__ import annotations

from collections.abc import Iterable


class BrokerHeartbeatManager:
    def __init__(self, session_timeout_ms: int) -> None:
        if session_timeout_ms <= 0:
            raise ValueError(f"session timeout must be positive, not {session_timeout_ms}")
        self.session_timeout_ms = session_timeout_ms
        self._last_contact: dict[int, int] = {}

    def touch(self, broker_id: int, now_ms: int) -> None:
        """The broker was heard from at ``now_ms`` (a heartbeat, a registration)."""
        last = self._last_contact.get(broker_id)
        # A late-arriving touch never moves a session back in time.
        self._last_contact[broker_id] = now_ms if last is None else max(last, now_ms)

    def remove(self, broker_id: int) -> None:
        """Forget the broker's session (unregistered, or replaced by a new incarnation)."""
        self._last_contact.pop(broker_id, None)

    def has_session(self, broker_id: int) -> bool:
        return broker_id in self._last_contact

    def last_contact_ms(self, broker_id: int) -> int | None:
        return self._last_contact.get(broker_id)

    def is_alive(self, broker_id: int, now_ms: int) -> bool:
        """True while the broker has a session that has not timed out at ``now_ms``."""
        last = self._last_contact.get(broker_id)
        return last is not None and now_ms - last <= self.session_timeout_ms

    def expired(self, now_ms: int, candidates: Iterable[int]) -> list[int]:
        """The ``candidates`` whose session has timed out at ``now_ms``, by id (brokers without
        a session are not included)."""
        out = []
        for b in set(candidates):
            last = self._last_contact.get(b)
            if last is not None and now_ms - last > self.session_timeout_ms:
                out.append(b)
        return sorted(out)

    def reset(self, broker_ids: Iterable[int], now_ms: int) -> None:
        """Start over with a fresh session at ``now_ms`` for exactly ``broker_ids`` (a controller
        has just become active: the registered brokers get a full session to reach it)."""
        self._last_contact = dict.fromkeys(broker_ids, now_ms)

    def next_expiry_ms(self) -> int | None:
        """When the oldest session expires if not touched again (None: no sessions)."""
        if not self._last_contact:
            return None
        return min(self._last_contact.values()) + self.session_timeout_ms + 1
