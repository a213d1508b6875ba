"""Listener, quorum and connection-limit values: ``NAME://host:port``, ``id@host:port``,
``NAME:PROTOCOL`` maps and ``host:count`` overrides.

Invariants: listener names are upper-cased, IPv6 hosts lose their brackets only where Kafka drops
them, and every malformed entry raises :class:`~zurau.config.types.ConfigError` naming the
config and the entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from zurau.config.config_def import INT_RE, LIST_SPLIT, parse_type
from zurau.config.security_configs import SECURITY_PROTOCOLS
from zurau.config.types import ConfigError, ConfigType

__all__ = [
    "LISTENER_PREFIX",
    "Listener",
    "QuorumVoter",
    "parse_connection_overrides",
    "parse_listeners",
    "parse_protocol_map",
    "parse_voters",
]

#: Prefix of a per-listener override: ``listener.name.<listener>.<config>``.
LISTENER_PREFIX = "listener.name."


class Listener(NamedTuple):
    """One ``listeners`` entry: ``NAME://host:port``. An empty host means all interfaces."""

    name: str
    host: str
    port: int


class QuorumVoter(NamedTuple):
    """One ``controller.quorum.voters`` entry: ``id@host:port``."""

    node_id: int
    host: str
    port: int


_LISTENER_RE = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)\Z")
_VOTER_RE = re.compile(r"^(-?\d+)@\[?([0-9a-zA-Z\-%._:]*)\]?:(\d+)\Z")


def parse_listeners(value: Iterable[str] | str, config_name: str = "listeners") -> list[Listener]:
    """Parse ``NAME://host:port`` entries (names upper-cased; IPv6 hosts may be bracketed)."""
    items = parse_type(config_name, ConfigType.LIST, value) if isinstance(value, str) else tuple(value)
    out: list[Listener] = []
    for item in items:
        m = _LISTENER_RE.match(item.strip())
        if not m:
            raise ConfigError.invalid(
                config_name,
                ",".join(items),
                f"Unable to parse {item} to a broker endpoint (expected NAME://host:port)",
            )
        name, host, port = m.group(1).upper(), m.group(2), int(m.group(3))
        if not name:
            raise ConfigError.invalid(config_name, ",".join(items), f"Listener {item} has no name")
        if not 0 <= port <= 65535:
            raise ConfigError.invalid(config_name, ",".join(items), f"Port {port} of {item} is out of range")
        out.append(Listener(name, host, port))
    return out


def parse_protocol_map(raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    s = raw.strip()
    if not s:
        return out
    for entry in LIST_SPLIT.split(s):
        name, sep, proto = entry.partition(":")
        name, proto = name.strip().upper(), proto.strip().upper()
        if not sep or not name or proto not in SECURITY_PROTOCOLS:
            raise ConfigError.invalid(
                "listener.security.protocol.map",
                raw,
                f"Entry '{entry}' must be NAME:PROTOCOL with PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)}",
            )
        if name in out:
            raise ConfigError.invalid(
                "listener.security.protocol.map", raw, f"Listener name {name} appears twice"
            )
        out[name] = proto
    return out


def parse_voters(items: Iterable[str]) -> list[QuorumVoter]:
    out: list[QuorumVoter] = []
    items = tuple(items)
    for item in items:
        m = _VOTER_RE.match(item.strip())
        if not m:
            raise ConfigError.invalid(
                "controller.quorum.voters", ",".join(items), f"Entry {item} is not of the form id@host:port"
            )
        out.append(QuorumVoter(int(m.group(1)), m.group(2), int(m.group(3))))
    return out


def parse_connection_overrides(raw: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count,...`` (an IP address or a host name,
    IPv6 addresses bracketed or not) -> count. Raises :class:`ConfigError` for a malformed entry."""
    out: dict[str, int] = {}
    for entry in (e for e in LIST_SPLIT.split(raw.strip()) if e):
        host, sep, count = entry.rpartition(":")
        host = host.strip().strip("[]")
        if not sep or not host or not INT_RE.match(count.strip()) or int(count) < 0:
            raise ConfigError.invalid(
                "max.connections.per.ip.overrides", raw, f"entry '{entry}' is not of the form host:count"
            )
        out[host] = int(count)
    return out
