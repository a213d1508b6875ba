"""The broker config's cross-field checks, and what Zurau refuses or ignores.

* :func:`check_broker_config` - Kafka's start-up checks across configs: listener names, ports and
  protocols, advertised listeners, the inter-broker and controller listeners, the quorum voters,
  the replica fetch timeouts, the log directories.
* :func:`check_supported` - refuse, with a :class:`~zurau.config.types.ConfigError` naming the
  config, what Zurau would otherwise ignore (a non-default ``unsupported`` value, an unknown
  ``ssl.*``/``sasl.*`` key, a bad ``listener.name.*`` override, SASL mechanisms, group protocols
  and assignors Zurau lacks) and the consumer-group timeout bounds.
* :func:`inert_configs_set` / :func:`warn_inert_configs` - the inert configs a config sets.

Invariant: these read a :class:`~zurau.config.broker_config.BrokerConfig` being built (its typed
values and parsed listeners) and never change it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from zurau.config.definitions import BROKER_CONFIGS
from zurau.config.listeners import LISTENER_PREFIX, Listener, parse_connection_overrides
from zurau.config.security_configs import SASL_MECHANISMS
from zurau.config.support import NO_SASL, NO_TLS, is_default, not_supported
from zurau.config.types import ConfigError

if TYPE_CHECKING:
    from zurau.config.broker_config import BrokerConfig

__all__ = ["check_broker_config", "check_supported", "inert_configs_set", "warn_inert_configs"]

logger = logging.getLogger("zurau.config")


def check_broker_config(cfg: BrokerConfig) -> None:
    """Kafka's cross-field checks of a broker config (see the module docstring)."""
    v = cfg._values
    names = [lst.name for lst in cfg._listeners]
    raw_listeners = ",".join(v["listeners"])
    if len(set(names)) != len(names):
        raise ConfigError.invalid("listeners", raw_listeners, "Each listener must have a different name")
    seen: dict[int, Listener] = {}
    for lst in cfg._listeners:
        other = seen.get(lst.port)
        if other is not None and lst.port != 0 and (":" in other.host) == (":" in lst.host):
            raise ConfigError.invalid(
                "listeners",
                raw_listeners,
                f"Each listener must have a different port unless one is IPv4 and the other IPv6 "
                f"(port {lst.port} is used by {other.name} and {lst.name})",
            )
        seen[lst.port] = lst
    for lst in cfg._listeners:
        if lst.name not in cfg._protocol_map:
            raise ConfigError.invalid(
                "listeners",
                raw_listeners,
                f"No security protocol defined for listener {lst.name} (add it to listener.security.protocol.map)",
            )
    adv_names = {lst.name for lst in cfg._advertised}
    if not adv_names <= set(names):
        raise ConfigError.invalid(
            "advertised.listeners",
            ",".join(v["advertised.listeners"] or ()),
            "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners",
        )
    if v["inter.broker.listener.name"] is not None and "security.inter.broker.protocol" in cfg._merged:
        raise ConfigError(
            "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.",
            name="inter.broker.listener.name",
            value=v["inter.broker.listener.name"],
        )
    ctrl = cfg.controller_listener_names
    if cfg.is_broker and cfg.inter_broker_listener_name not in adv_names:
        raise ConfigError.invalid(
            "inter.broker.listener.name",
            cfg.inter_broker_listener_name,
            "inter.broker.listener.name must be a listener name defined in advertised.listeners. "
            f"The valid options based on currently configured listeners are {','.join(sorted(adv_names))}",
        )
    if ctrl:
        if cfg.is_controller and not set(ctrl) & set(names):
            raise ConfigError.invalid(
                "controller.listener.names",
                v["controller.listener.names"],
                "must contain at least one value appearing in the 'listeners' configuration "
                "when running the KRaft controller role",
            )
        if not cfg.is_controller and set(ctrl) & set(names):
            raise ConfigError.invalid(
                "controller.listener.names",
                v["controller.listener.names"],
                "must not contain a value appearing in the 'listeners' configuration "
                "when running KRaft with just the broker role",
            )
    if cfg._voters and cfg.is_controller and cfg.node_id not in {x.node_id for x in cfg._voters}:
        raise ConfigError.invalid(
            "controller.quorum.voters",
            ",".join(v["controller.quorum.voters"]),
            f"If process.roles contains the 'controller' role, the node id {cfg.node_id} "
            "must be included in the set of voters",
        )
    if v["replica.fetch.wait.max.ms"] > v["replica.socket.timeout.ms"]:
        raise ConfigError.invalid(
            "replica.socket.timeout.ms",
            v["replica.socket.timeout.ms"],
            "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms "
            "to prevent unnecessary socket timeouts",
        )
    if v["replica.fetch.wait.max.ms"] > v["replica.lag.time.max.ms"]:
        raise ConfigError.invalid(
            "replica.fetch.wait.max.ms",
            v["replica.fetch.wait.max.ms"],
            "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms "
            "to prevent frequent changes in ISR",
        )
    if not cfg.log_dirs:
        raise ConfigError.invalid("log.dirs", v["log.dirs"], "At least one log directory must be defined")


_SECURITY_PREFIXES = {"ssl.": NO_TLS, "sasl.": NO_SASL}
_REBALANCE_PROTOCOLS = ("classic", "consumer")
_ASSIGNORS = ("uniform", "range")


_LISTENER_SCOPED = ("connections.max.reauth.ms",)
_JAAS = "sasl.jaas.config"
#: Configs read per SASL mechanism (``listener.name.<listener>.<mechanism>.<config>``).
_MECHANISM_SCOPED = (
    "connections.max.reauth.ms",
    "sasl.server.callback.handler.class",
    "sasl.login.callback.handler.class",
    "sasl.oauthbearer.",
)


def _check_listener_override(cfg: BrokerConfig, key: str, raw: str) -> None:
    """``listener.name.<listener>.<config>``: a known listener and a config a listener may
    override (an ``ssl.*``/``sasl.*`` definition, ``connections.max.reauth.ms``, or a JAAS
    config, optionally prefixed with its lower-case SASL mechanism), with a valid value."""
    rest = key[len(LISTENER_PREFIX) :]
    listener, _, name = rest.partition(".")
    # A broker-only node configures the controller listener it dials (Kafka's rule too).
    if listener.upper() not in {lst.name for lst in cfg._listeners} | set(cfg.controller_listener_names):
        raise ConfigError(
            f"{key} names listener {listener}, which is not in listeners or controller.listener.names",
            name=key,
            reason="unknown listener",
        )
    mech, _, rest = name.partition(".")
    if name == _JAAS or (rest == _JAAS and mech.upper() in SASL_MECHANISMS):
        return
    if mech.upper() in SASL_MECHANISMS and rest:  # listener.name.<l>.<mechanism>.<config>
        if not rest.startswith(_MECHANISM_SCOPED):
            raise ConfigError(
                f"{key} is not supported by Zurau: a SASL mechanism's own configs are "
                f"{', '.join(p + '*' if p.endswith('.') else p for p in _MECHANISM_SCOPED)} and {_JAAS}",
                name=key,
                reason="not a SASL mechanism config",
            )
        name = rest
    d = BROKER_CONFIGS.get(name)
    if d is None or not (name.startswith(("ssl.", "sasl.")) or name in _LISTENER_SCOPED):
        raise ConfigError(
            f"{key} is not supported by Zurau: a listener overrides ssl.*, sasl.* and "
            f"{', '.join(_LISTENER_SCOPED)} configs, also per SASL mechanism (<mechanism>.<config>)",
            name=key,
            reason="not a listener config",
        )
    try:
        value = d.parse(raw)
    except ConfigError as e:
        raise ConfigError.invalid(key, e.value, e.reason or str(e)) from None
    if d.unsupported and not is_default(d, value):
        raise not_supported(key, value, d.unsupported)


def check_supported(cfg: BrokerConfig) -> None:
    """Refuse, with a :class:`ConfigError` naming the config, what Zurau would otherwise ignore:
    a non-default value of an ``unsupported`` config, any other ``ssl.*``/``sasl.*`` key,
    per-listener overrides, a listener whose security protocol is not PLAINTEXT, group protocols
    and assignors Zurau does not implement. Also checks the consumer-group timeouts against their
    bounds, as Kafka's group coordinator does at start-up."""
    for name in sorted(cfg._merged):
        d = BROKER_CONFIGS.get(name)
        if d is not None:
            if d.unsupported and not is_default(d, cfg._values[name]):
                raise not_supported(name, cfg._values[name], d.unsupported)
            continue
        for prefix, reason in _SECURITY_PREFIXES.items():
            if name.startswith(prefix):
                raise ConfigError(f"{name} is not supported by Zurau: {reason}", name=name, reason=reason)
    for name, raw in sorted(cfg.listener_overrides.items()):
        _check_listener_override(cfg, name, raw)
    for lst in cfg._listeners:
        if cfg._protocol_map[lst.name].startswith("SASL_"):
            mechanisms = cfg.listener_config(lst.name, "sasl.enabled.mechanisms")
            bad = [m for m in mechanisms if m.upper() not in SASL_MECHANISMS]
            if bad or not mechanisms:
                raise not_supported(
                    "sasl.enabled.mechanisms",
                    mechanisms,
                    f"listener {lst.name} uses SASL, and Zurau's SASL mechanisms are {', '.join(SASL_MECHANISMS)}",
                )
    v = cfg._values
    protocols = v["group.coordinator.rebalance.protocols"]
    if any(p.lower() not in _REBALANCE_PROTOCOLS for p in protocols):
        raise not_supported(
            "group.coordinator.rebalance.protocols",
            protocols,
            "only the classic and consumer protocols are implemented",
        )
    assignors = v["group.consumer.assignors"]
    if any(a.lower() not in _ASSIGNORS for a in assignors):
        raise not_supported(
            "group.consumer.assignors",
            assignors,
            "only the built-in assignors uniform and range are implemented",
        )
    _check_consumer_group_bounds(v)
    _check_consumer_group_bounds(v, "group.share.")
    _check_consumer_group_bounds(v, "group.streams.")
    _check_share_group_config(v)
    parse_connection_overrides(v["max.connections.per.ip.overrides"])


def _check_consumer_group_bounds(v: Mapping[str, Any], prefix: str = "group.consumer.") -> None:
    """Kafka's start-up checks of the consumer-group (KIP-848) session timeout and heartbeat
    interval against their min/max bounds; the same for share groups (``group.share.``)."""
    rules = (
        ("max.heartbeat.interval.ms", ">=", "min.heartbeat.interval.ms"),
        ("heartbeat.interval.ms", ">=", "min.heartbeat.interval.ms"),
        ("heartbeat.interval.ms", "<=", "max.heartbeat.interval.ms"),
        ("max.session.timeout.ms", ">=", "min.session.timeout.ms"),
        ("session.timeout.ms", ">=", "min.session.timeout.ms"),
        ("session.timeout.ms", "<=", "max.session.timeout.ms"),
        ("heartbeat.interval.ms", "<", "session.timeout.ms"),
    )
    words = {">=": "greater than or equal to", "<=": "less than or equal to", "<": "less than"}
    for left, op, right in rules:
        a, b = v[prefix + left], v[prefix + right]
        ok = a >= b if op == ">=" else a <= b if op == "<=" else a < b
        if not ok:
            raise ConfigError.invalid(
                prefix + left, a, f"{prefix + left} must be {words[op]} {prefix + right} ({b})"
            )


def _check_share_group_config(v: Mapping[str, Any]) -> None:
    """Kafka's ``ShareGroupConfig`` start-up checks: the record lock duration lies within its
    bounds, and a broker allows at least as many share sessions as one share group has members."""
    rules = (
        ("group.share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms"),
        ("group.share.max.record.lock.duration.ms", "group.share.record.lock.duration.ms"),
        ("group.share.max.share.sessions", "group.share.max.size"),
        ("group.streams.max.standby.replicas", "group.streams.num.standby.replicas"),
    )
    for left, right in rules:
        if v[left] < v[right]:
            raise ConfigError.invalid(
                left, v[left], f"{left} must be greater than or equal to {right} ({v[right]})"
            )


def inert_configs_set(cfg: BrokerConfig) -> list[tuple[str, str]]:
    """``(name, reason)`` of every inert broker config ``cfg`` sets explicitly, sorted by name."""
    return sorted(
        (name, BROKER_CONFIGS[name].inert)
        for name in cfg._merged
        if name in BROKER_CONFIGS and BROKER_CONFIGS[name].inert
    )


def warn_inert_configs(cfg: BrokerConfig, log: logging.Logger | None = None) -> list[str]:
    """Log one warning per inert config ``cfg`` sets (the broker calls this once, at start);
    returns their names."""
    out = log or logger
    names = []
    for name, reason in inert_configs_set(cfg):
        out.warning("%s is set but has no effect in Zurau: %s", name, reason)
        names.append(name)
    return names
