"""The broker's configuration: parsed once from ``server.properties`` style strings, typed.

:class:`BrokerConfig` keeps Kafka's three layers (static properties, dynamic cluster-wide
defaults, dynamic per-broker values: per-broker > cluster default > static > built-in default),
resolves what Kafka resolves (``node.id`` from ``broker.id``, listeners and their protocols,
``log.dirs``, retention in hours/minutes/ms ...), and derives the topic config defaults from their
broker synonyms. Invariants: a built :class:`BrokerConfig` is valid (every value parsed and
validated, cross-field rules checked by :mod:`zurau.config.broker_checks`) and immutable (a
dynamic change builds a new one with :meth:`BrokerConfig.with_dynamic`); the typed views of the
coordinators are built once, on first use.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zurau.config.broker_checks import check_broker_config, check_supported
from zurau.config.config_def import LIST_SPLIT, format_value, parse_type
from zurau.config.coordinator_views import (
    GroupCoordinatorConfig,
    ShareCoordinatorConfig,
    TransactionCoordinatorConfig,
)
from zurau.config.definitions import BROKER_CONFIGS, BROKER_DEFINITIONS_BY_SNAKE_NAME, TOPIC_CONFIGS
from zurau.config.describe import ConfigSource
from zurau.config.listeners import (
    LISTENER_PREFIX,
    Listener,
    QuorumVoter,
    parse_listeners,
    parse_protocol_map,
    parse_voters,
)
from zurau.config.properties import load_properties
from zurau.config.remote_log_views import RemoteLogManagerConfig
from zurau.config.shorthand import MS_PER_MINUTE
from zurau.config.topic_validation import check_compaction_lags
from zurau.config.types import ConfigError, Password

__all__ = ["BrokerConfig"]

logger = logging.getLogger("zurau.config")

_MISSING: Any = object()


class BrokerConfig:
    """Broker configuration parsed once from string properties (``server.properties``).

    Three layers are kept, like Kafka: static properties, dynamic cluster-wide defaults and
    dynamic per-broker values (the latter two via :meth:`with_dynamic`); the effective value
    of a config is the first of per-broker > cluster default > static > built-in default.

    Access: ``cfg.get("message.max.bytes")``, or snake_case attributes for any defined config
    (``cfg.message_max_bytes``). Some attributes are resolved, as Kafka resolves them:
    ``listeners``, ``advertised_listeners``, ``log_dirs``, ``node_id``, ``log_retention_ms``,
    ``log_roll_ms``, ``log_roll_jitter_ms``, ``log_flush_interval_ms``, ``offsets_retention_ms``.
    Unknown keys are kept in :attr:`unknown` and logged; keys prefixed ``listener.name.`` are
    kept in :attr:`listener_overrides` without a warning, and keys under the tiered storage
    plugins' prefixes (``rsm.config.``, ``rlmm.config.``) go to :attr:`remote_log_manager`.
    """

    def __init__(
        self,
        props: Mapping[str, Any] | None = None,
        *,
        dynamic_default: Mapping[str, Any] | None = None,
        dynamic_broker: Mapping[str, Any] | None = None,
    ):
        self._static = {k: _to_str(k, v) for k, v in (props or {}).items()}
        self._dyn_default = {k: _to_str(k, v) for k, v in (dynamic_default or {}).items()}
        self._dyn_broker = {k: _to_str(k, v) for k, v in (dynamic_broker or {}).items()}
        for layer in (self._dyn_default, self._dyn_broker):
            _check_dynamic(layer)
        merged: dict[str, str] = {**self._static, **self._dyn_default, **self._dyn_broker}
        self._merged = merged

        self.unknown: dict[str, str] = {}
        self.listener_overrides: dict[str, str] = {}
        plugin_prefixes = tuple(
            merged.get(n) or BROKER_CONFIGS[n].default
            for n in ("remote.log.storage.manager.impl.prefix", "remote.log.metadata.manager.impl.prefix")
        )
        for key, raw in self._static.items():
            if key in BROKER_CONFIGS:
                continue
            if key.startswith(LISTENER_PREFIX):
                self.listener_overrides[key] = raw
            elif key.startswith(plugin_prefixes):
                continue  # a tiered storage plugin's own setting (remote_log_manager)
            else:
                self.unknown[key] = raw
                logger.warning("The configuration '%s' was supplied but isn't a known config.", key)

        values: dict[str, Any] = {}
        for name, d in BROKER_CONFIGS.items():
            values[name] = d.parse(merged[name]) if name in merged else d.default
        self._values = values
        self._resolve_node_id()
        self._listeners = parse_listeners(values["listeners"], "listeners")
        self._protocol_map = self._build_protocol_map()
        self._advertised = self._build_advertised()
        self._voters = parse_voters(values["controller.quorum.voters"])
        check_broker_config(self)
        check_supported(self)
        self._topic_defaults = self._derive_topic_defaults()
        if values["remote.log.storage.system.enable"]:
            self.remote_log_manager  # noqa: B018 - checks the tiered storage settings at start

    # -- construction helpers --------------------------------------------------------------

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> BrokerConfig:
        """Build from a dict of strings (e.g. the result of :func:`load_properties`)."""
        return cls(props)

    @classmethod
    def from_file(cls, path: str | Path, overrides: Mapping[str, str] | None = None) -> BrokerConfig:
        """Load a properties file, apply ``overrides`` (e.g. ``--override k=v``) and build."""
        props = load_properties(path)
        props.update(overrides or {})
        return cls(props)

    def with_dynamic(
        self,
        *,
        dynamic_broker: Mapping[str, Any] | None = None,
        dynamic_default: Mapping[str, Any] | None = None,
    ) -> BrokerConfig:
        """Return a new config with these dynamic layers (replacing the current ones).

        Raises :class:`ConfigError` for unknown or non-dynamic names (Kafka: "Cannot update
        these configs dynamically") and for invalid values.
        """
        return BrokerConfig(
            self._static,
            dynamic_default=self._dyn_default if dynamic_default is None else dynamic_default,
            dynamic_broker=self._dyn_broker if dynamic_broker is None else dynamic_broker,
        )

    def _resolve_node_id(self) -> None:
        m = self._merged
        node_set = "node.id" in m
        broker_set = "broker.id" in m and self._values["broker.id"] >= 0
        if node_set and broker_set and self._values["node.id"] != self._values["broker.id"]:
            raise ConfigError(
                f"node.id ({self._values['node.id']}) and broker.id ({self._values['broker.id']}) "
                "must be equal when both are set",
                name="broker.id",
                value=self._values["broker.id"],
                reason="must equal node.id",
            )
        if not node_set and broker_set:
            self._values["node.id"] = self._values["broker.id"]
        if self._values["node.id"] < 0:
            raise ConfigError.invalid("node.id", self._values["node.id"], "Value must be at least 0")
        self._values["broker.id"] = self._values["node.id"]

    def _build_protocol_map(self) -> dict[str, str]:
        pm = parse_protocol_map(self._values["listener.security.protocol.map"])
        if "listener.security.protocol.map" not in self._merged:
            # KRaft: controller listeners default to PLAINTEXT when no explicit map is given.
            for name in self.controller_listener_names:
                pm.setdefault(name, "PLAINTEXT")
        return pm

    def _build_advertised(self) -> list[Listener]:
        raw = self._values["advertised.listeners"]
        if raw is None:
            ctrl = set(self.controller_listener_names)
            return [lst for lst in self._listeners if lst.name not in ctrl]
        adv = parse_listeners(raw, "advertised.listeners")
        for lst in adv:
            if lst.host == "0.0.0.0":
                raise ConfigError.invalid(
                    "advertised.listeners",
                    ",".join(raw),
                    "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.",
                )
        return adv

    def _derive_topic_defaults(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, d in TOPIC_CONFIGS.items():
            value, source_name = d.default, None
            for syn in d.synonyms:
                broker_value = self._values.get(syn.name)
                if broker_value is not None:
                    value, source_name = (
                        broker_value * syn.factor if syn.factor != 1 else broker_value,
                        syn.name,
                    )
                    break
            if name == "retention.ms" and value < 0:
                value = -1  # Kafka: any negative broker retention means unlimited
            try:
                out[name] = d.parse(value)
            except ConfigError as e:
                bn = source_name or name
                raise ConfigError.invalid(
                    bn,
                    self._merged.get(bn, value),
                    f"invalid as the default of topic config {name}: {e.reason}",
                ) from e
        check_compaction_lags(out)
        return out

    # -- generic access -------------------------------------------------------------------

    def get(self, name: str, default: Any = _MISSING) -> Any:
        """Effective typed value of a defined config; raw string for an unknown supplied key.

        Raises ``KeyError`` for names that are neither defined nor supplied, unless ``default``
        is given.
        """
        if name in self._values:
            return self._values[name]
        if name in self._merged:
            return self._merged[name]
        if default is _MISSING:
            raise KeyError(name)
        return default

    def is_set(self, name: str) -> bool:
        """True when ``name`` was supplied (statically or dynamically) rather than defaulted."""
        return name in self._merged

    def source_of(self, name: str) -> ConfigSource:
        """Which layer supplies ``name``'s value."""
        if name in self._dyn_broker:
            return ConfigSource.DYNAMIC_BROKER_CONFIG
        if name in self._dyn_default:
            return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if name in self._static:
            return ConfigSource.STATIC_BROKER_CONFIG
        return ConfigSource.DEFAULT_CONFIG

    @property
    def originals(self) -> dict[str, str]:
        """The static properties as supplied (copy)."""
        return dict(self._static)

    @property
    def dynamic_broker_configs(self) -> dict[str, str]:
        """Per-broker dynamic overrides (copy)."""
        return dict(self._dyn_broker)

    @property
    def dynamic_default_configs(self) -> dict[str, str]:
        """Cluster-wide dynamic defaults (copy)."""
        return dict(self._dyn_default)

    def values(self) -> dict[str, Any]:
        """All defined configs with their effective typed values (copy)."""
        return dict(self._values)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        name = BROKER_DEFINITIONS_BY_SNAKE_NAME.get(attr)
        if name is None:
            raise AttributeError(f"{type(self).__name__!s} has no config attribute {attr!r}")
        return self._values[name]

    def __repr__(self) -> str:
        shown = {}
        for k, v in sorted(self._merged.items()):
            d = BROKER_CONFIGS.get(k)
            shown[k] = "[hidden]" if d is not None and d.sensitive else v
        return f"BrokerConfig({shown!r})"

    # -- resolved attributes --------------------------------------------------------------

    @property
    def node_id(self) -> int:
        """``node.id``, or ``broker.id`` when only that is set."""
        return self._values["node.id"]

    @property
    def process_roles(self) -> tuple[str, ...]:
        """``process.roles`` as a tuple, e.g. ``("broker", "controller")``."""
        return self._values["process.roles"]

    @property
    def is_broker(self) -> bool:
        """True when this node has the broker role."""
        return "broker" in self.process_roles

    @property
    def is_controller(self) -> bool:
        """True when this node has the controller role."""
        return "controller" in self.process_roles

    @property
    def listeners(self) -> list[Listener]:
        """Parsed ``listeners``: ``Listener(name, host, port)``; empty host = all interfaces."""
        return list(self._listeners)

    @property
    def advertised_listeners(self) -> list[Listener]:
        """Parsed ``advertised.listeners``, defaulting to ``listeners`` without controller
        listeners. Empty hosts are left empty; the server substitutes a reachable host name."""
        return list(self._advertised)

    @property
    def listener_security_protocol_map(self) -> dict[str, str]:
        """Listener name -> security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)."""
        return dict(self._protocol_map)

    def listener_config(self, listener_name: str, name: str) -> Any:
        """Effective typed value of ``name`` for one listener: its ``listener.name.<listener>.<name>``
        override when set (listener names match case-insensitively), else the broker-wide value."""
        raw = self.listener_config_raw(listener_name, name)
        return BROKER_CONFIGS[name].parse(raw) if raw is not None else self.get(name)

    def listener_config_raw(self, listener_name: str, name: str) -> str | None:
        """The string of a listener's ``listener.name.<listener>.<name>`` override, or None."""
        want = f"{LISTENER_PREFIX}{listener_name.lower()}.{name}"
        for key, raw in self.listener_overrides.items():
            if key.lower() == want:
                return raw
        return None

    def security_protocol(self, listener_name: str) -> str:
        """Security protocol of a listener name (case-insensitive)."""
        return self._protocol_map[listener_name.upper()]

    @property
    def inter_broker_listener_name(self) -> str:
        """Listener for broker-to-broker traffic (``inter.broker.listener.name``, else the
        listener named after ``security.inter.broker.protocol``)."""
        explicit = self._values["inter.broker.listener.name"]
        if explicit is not None:
            return explicit.strip().upper()
        return self._values["security.inter.broker.protocol"]

    @property
    def controller_listener_names(self) -> list[str]:
        """``controller.listener.names`` as a list (upper-cased)."""
        raw = self._values["controller.listener.names"]
        if not raw:
            return []
        return [n.upper() for n in LIST_SPLIT.split(raw.strip()) if n]

    @property
    def controller_quorum_voters(self) -> list[QuorumVoter]:
        """Parsed ``controller.quorum.voters``: ``QuorumVoter(node_id, host, port)``."""
        return list(self._voters)

    @property
    def controller_quorum_bootstrap_servers(self) -> list[tuple[str, int]]:
        """Parsed ``controller.quorum.bootstrap.servers``: (host, port) pairs."""
        out = []
        for item in self._values["controller.quorum.bootstrap.servers"]:
            host, sep, port = str(item).strip().rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ConfigError(
                    f"Invalid value {item} for configuration controller.quorum.bootstrap.servers: "
                    "entries must be of the form host:port",
                    name="controller.quorum.bootstrap.servers",
                    value=str(item),
                    reason="entries must be of the form host:port",
                )
            out.append((host.strip("[]"), int(port)))
        return out

    @property
    def dynamic_quorum(self) -> bool:
        """A dynamic controller quorum (KIP-853): voters in the metadata log, found through
        ``controller.quorum.bootstrap.servers`` (``controller.quorum.voters`` unset)."""
        return not self._voters and bool(self._values["controller.quorum.bootstrap.servers"])

    @property
    def log_dirs(self) -> list[Path]:
        """``log.dirs`` (or ``log.dir`` when unset), split on commas, as paths (not resolved)."""
        raw = self._values["log.dirs"]
        if raw is None:
            raw = self._values["log.dir"]
        return [Path(p) for p in LIST_SPLIT.split(raw.strip()) if p]

    @property
    def metadata_log_dir(self) -> Path:
        """``metadata.log.dir``, defaulting to the first log directory."""
        raw = self._values["metadata.log.dir"]
        return Path(raw) if raw else self.log_dirs[0]

    @property
    def log_retention_ms(self) -> int:
        """Effective retention: ``log.retention.ms`` > ``.minutes`` > ``.hours``; -1 = unlimited."""
        return self._topic_defaults["retention.ms"]

    @property
    def log_roll_ms(self) -> int:
        """Effective segment roll age: ``log.roll.ms`` > ``log.roll.hours``."""
        return self._topic_defaults["segment.ms"]

    @property
    def log_roll_jitter_ms(self) -> int:
        """Effective roll jitter: ``log.roll.jitter.ms`` > ``log.roll.jitter.hours``."""
        return self._topic_defaults["segment.jitter.ms"]

    @property
    def log_flush_interval_ms(self) -> int:
        """Effective ``log.flush.interval.ms`` (falls back to ``log.flush.scheduler.interval.ms``)."""
        return self._topic_defaults["flush.ms"]

    @property
    def offsets_retention_ms(self) -> int:
        """``offsets.retention.minutes`` in milliseconds."""
        return self._values["offsets.retention.minutes"] * MS_PER_MINUTE

    @property
    def cluster_id(self) -> str | None:
        """Expected cluster id if configured (Zurau generates and persists one otherwise)."""
        return self._values["cluster.id"]

    def topic_defaults(self) -> dict[str, Any]:
        """Topic config name -> typed default derived from the broker synonyms (copy)."""
        return dict(self._topic_defaults)

    # -- describe helpers -----------------------------------------------------------------

    # -- typed views ----------------------------------------------------------------------

    @functools.cached_property
    def group_coordinator(self) -> GroupCoordinatorConfig:
        """The group coordinator's settings, typed (built once)."""
        return GroupCoordinatorConfig.from_values(self._values)

    @functools.cached_property
    def transaction_coordinator(self) -> TransactionCoordinatorConfig:
        """The transaction coordinator's settings, typed (built once)."""
        return TransactionCoordinatorConfig.from_values(self._values)

    @functools.cached_property
    def remote_log_manager(self) -> RemoteLogManagerConfig:
        """Tiered storage settings, typed, with the plugins' prefixed properties (built once)."""
        return RemoteLogManagerConfig.from_values(self._values, self._merged)

    @functools.cached_property
    def share_coordinator(self) -> ShareCoordinatorConfig:
        """The share coordinator's settings, typed (built once)."""
        return ShareCoordinatorConfig.from_values(self._values)


def _to_str(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Password):
        return value.value
    d = BROKER_CONFIGS.get(name) or TOPIC_CONFIGS.get(name)
    if d is not None:
        s = format_value(d, parse_type(name, d.type, value))
        assert s is not None
        return s
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _check_dynamic(layer: Mapping[str, str]) -> None:
    bad = sorted(k for k in layer if k not in BROKER_CONFIGS or not BROKER_CONFIGS[k].dynamic)
    if bad:
        raise ConfigError(f"Cannot update these configs dynamically: {bad}", name=bad[0], value=layer[bad[0]])
