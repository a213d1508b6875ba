"""Dynamic broker configs (Kafka's ``DynamicBrokerConfig``): which broker configs may change at
runtime, at which level, and the effective config of a broker given its dynamic overrides.

Two levels, as in Kafka: a broker's own overrides (the BROKER config resource named by its id)
and the cluster-wide default (the resource named ``""``, Kafka's ``<default>``). The effective
value of a config is the first of: per-broker override > cluster default > static
``server.properties`` > built-in default (:class:`~zurau.config.broker_config.BrokerConfig` keeps
the layers).

Which names may be set:

* Kafka's dynamic configs are the definitions marked ``dynamic`` (Kafka's
  ``DynamicBrokerConfig.AllDynamicConfigs``), plus the replication throttle rates of Kafka's
  ``DynamicConfig.Broker`` when they are defined (:data:`THROTTLE_RATE_CONFIGS`).
* Zurau applies at runtime only :func:`applied_dynamically`: the broker defaults of topic
  configs (``log.retention.ms``, ``min.insync.replicas``, ``compression.type``,
  ``message.max.bytes`` ...; every topic without an override of its own follows them), the
  throttle rates, the remote copy and fetch quota rates (KIP-956, read at each use), the log
  cleaner's and the replica fetchers' pools (:data:`RECONFIGURED_CONFIGS`:
  ``log.cleaner.threads``, ``num.replica.fetchers`` ...; the broker restarts the cleaner's
  workers or moves partitions between fetchers, zurau.broker.broker_reconfigurables), and the
  dynamic configs that have no effect in Zurau anyway (inert ones, e.g. the SASL Kerberos
  settings). Any other config Kafka can change dynamically (``listeners``, ``ssl.*``,
  ``max.connections`` ...) is read only at start-up here and is refused, saying so.
* As Kafka's ``LogCleaner`` and ``DynamicThreadPool`` validate them, a dynamic
  ``log.cleaner.threads`` or ``num.replica.fetchers`` must be at least 1. (Kafka also refuses
  less than half or more than double the broker's current value; that needs the receiving
  broker's current value, and the controller that checks here has no such thing, so Zurau does
  not.)
* Kafka's per-broker-only configs (listeners and their security settings:
  :func:`per_broker_only`) cannot be set at the cluster-default level.

Errors, as Kafka's brokers answer them (KAFKA-13609: INVALID_REQUEST even for a bad value):
:class:`DynamicConfigError` with ``invalid_request`` True for a read-only config ("Cannot update
these configs dynamically: Set(x)"), a per-broker config at the default level and a malformed
value; an unknown name is INVALID_CONFIG (``invalid_request`` False; Kafka would store it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from zurau.config.balancer_configs import BALANCER_CONFIG_NAMES
from zurau.config.broker_config import BrokerConfig
from zurau.config.definitions import BROKER_CONFIGS, TOPIC_CONFIGS
from zurau.config.types import ConfigError

__all__ = [
    "RECONFIGURED_CONFIGS",
    "REMOTE_QUOTA_RATE_CONFIGS",
    "THROTTLE_RATE_CONFIGS",
    "DynamicBrokerConfigView",
    "DynamicConfigError",
    "applied_dynamically",
    "check_dynamic_update",
    "kafka_dynamic",
    "per_broker_only",
]

log = logging.getLogger("zurau.config")

#: Kafka's ``DynamicConfig.Broker`` rates (bytes/s) that throttle reassignment traffic; dynamic
#: only, never in server.properties. Accepted once their definitions exist.
THROTTLE_RATE_CONFIGS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")

#: KIP-956's remote copy and fetch quotas (bytes/s): the remote log manager reads them at each
#: use, so a dynamic change applies to the next copy or remote read (their window configs are
#: read-only, as in Kafka).
REMOTE_QUOTA_RATE_CONFIGS = (
    "remote.log.manager.copy.max.bytes.per.second",
    "remote.log.manager.fetch.max.bytes.per.second",
)

#: Dynamic configs the broker applies to its running parts (the log cleaner's
#: ``RECONFIGURABLE_CONFIGS`` and the fetchers' pool: zurau.broker.broker_reconfigurables).
RECONFIGURED_CONFIGS = frozenset(
    {
        "log.cleaner.threads",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.io.buffer.load.factor",
        "log.cleaner.io.buffer.size",
        "log.cleaner.io.max.bytes.per.second",
        "log.cleaner.backoff.ms",
        "num.replica.fetchers",
    }
)

#: Thread counts that must stay at least 1 when set dynamically, with Kafka's refusal.
_AT_LEAST_ONE = {
    "log.cleaner.threads": "Log cleaner threads should be at least 1",
    "num.replica.fetchers": "Invalid value {value} for configuration num.replica.fetchers: Value must be at least 1",
}

#: Listener configs Kafka lets each broker have its own of, never a cluster default (the
#: ``ssl.``/``sasl.`` settings are matched by prefix in :func:`per_broker_only`).
_PER_BROKER_LISTENER_CONFIGS = frozenset(
    {"listeners", "advertised.listeners", "listener.security.protocol.map", "principal.builder.class"}
)

#: Broker configs that are the defaults of topic configs: a live log re-reads them.
_TOPIC_DEFAULTS = frozenset(s.name for d in TOPIC_CONFIGS.values() for s in d.synonyms)


class DynamicConfigError(ValueError):
    """A dynamic broker config change refused; ``invalid_request``: INVALID_REQUEST (else
    INVALID_CONFIG)."""

    def __init__(self, message: str, invalid_request: bool = True) -> None:
        super().__init__(message)
        self.invalid_request = invalid_request


def kafka_dynamic(name: str) -> bool:
    """True when Kafka can change ``name`` at runtime (a defined config)."""
    d = BROKER_CONFIGS.get(name)
    return d is not None and (d.dynamic or name in THROTTLE_RATE_CONFIGS)


def applied_dynamically(name: str) -> bool:
    """True when Zurau takes a dynamic change of ``name`` without a restart (or it has no effect
    in Zurau at all): the only names a BROKER config resource accepts."""
    if not kafka_dynamic(name):
        return False
    d = BROKER_CONFIGS[name]
    return (
        name in _TOPIC_DEFAULTS
        or name in THROTTLE_RATE_CONFIGS
        or name in REMOTE_QUOTA_RATE_CONFIGS
        or name in BALANCER_CONFIG_NAMES
        or name in RECONFIGURED_CONFIGS
        or bool(d.inert)
    )


def per_broker_only(name: str) -> bool:
    """Kafka's per-broker configs (``DynamicBrokerConfig.PerBrokerConfigs``): listeners and their
    TLS/SASL settings, which the cluster-wide default may not set."""
    return name in _PER_BROKER_LISTENER_CONFIGS or name == "zurau.balancer.removing" or name.startswith(("ssl.", "sasl."))


def scala_set(names: Iterable[str]) -> str:
    """Names as Kafka's messages print a Scala set: ``Set(a, b)``."""
    return f"Set({', '.join(sorted(names))})"


def check_dynamic_update(static: BrokerConfig, overrides: Mapping[str, str], per_broker: bool) -> None:
    """Check a whole set of dynamic overrides for one level (``per_broker``: a broker's own;
    else the cluster default), names first, then each value against its definition.

    Raises :class:`DynamicConfigError` (see the module doc for which error code each gets).
    Cross-field rules are left to :func:`effective_config`, which the caller builds for the
    levels together.
    """
    unknown = [n for n in overrides if n not in BROKER_CONFIGS]
    if unknown:
        raise DynamicConfigError(
            f"Unknown broker configs: {scala_set(unknown)}", invalid_request=False
        )
    read_only = [n for n in overrides if not kafka_dynamic(n)]
    if read_only:
        raise DynamicConfigError(f"Cannot update these configs dynamically: {scala_set(read_only)}")
    not_here = [n for n in overrides if not applied_dynamically(n)]
    if not_here:
        raise DynamicConfigError(
            f"Cannot update these configs dynamically: {scala_set(not_here)} (Kafka can; Zurau reads "
            "them only at start-up: set them in server.properties and restart the broker)"
        )
    if not per_broker:
        per_broker_names = [n for n in overrides if per_broker_only(n)]
        if per_broker_names:
            raise DynamicConfigError(
                "Cannot update these configs at default cluster level, broker id must be specified: "
                f"{scala_set(per_broker_names)}"
            )
    for name in sorted(overrides):
        try:
            value = BROKER_CONFIGS[name].parse(overrides[name])
        except ConfigError as e:
            raise DynamicConfigError(str(e)) from None
        if name in _AT_LEAST_ONE and value < 1:
            raise DynamicConfigError(_AT_LEAST_ONE[name].format(value=value))


def effective_config(
    static: BrokerConfig, per_broker: Mapping[str, str], default: Mapping[str, str]
) -> BrokerConfig:
    """``static`` with these dynamic layers; raises :class:`ConfigError` when the result is not a
    valid broker config (a value, or a cross-field rule such as the compaction lags)."""
    return static.with_dynamic(dynamic_broker=per_broker, dynamic_default=default)


class DynamicBrokerConfigView:
    """One broker's effective config, derived from its static config and the dynamic overrides
    currently stored (never remembered across changes: :meth:`current` is asked each time).

    Invariant: :meth:`current` with the same override mappings (by identity) returns the same
    :class:`BrokerConfig` object, so callers may cache what they derive from it by identity.
    Stored overrides this broker cannot take (written by another version, or invalid against
    this broker's static config) are left out with a warning, never fail the broker.
    """

    def __init__(self, static: BrokerConfig) -> None:
        self.static = static
        self._key: tuple[Mapping[str, str], Mapping[str, str]] | None = None
        self._current = static

    def current(self, per_broker: Mapping[str, str], default: Mapping[str, str]) -> BrokerConfig:
        """The effective config with these stored overrides (the broker's own, the cluster's)."""
        key = self._key
        if key is not None and key[0] is per_broker and key[1] is default:
            return self._current
        if not per_broker and not default:
            cfg = self.static
        else:
            cfg = self._build(per_broker, default)
        self._key, self._current = (per_broker, default), cfg
        return cfg

    def _build(self, per_broker: Mapping[str, str], default: Mapping[str, str]) -> BrokerConfig:
        try:
            return effective_config(self.static, per_broker, default)
        except ConfigError as e:
            log.warning("dynamic broker configs not all applicable (%s); skipping the bad ones", e)
        good_default: dict[str, str] = {}
        for name, value in default.items():
            if self._applicable({}, {name: value}, name, value):
                good_default[name] = value
        good_broker: dict[str, str] = {}
        for name, value in per_broker.items():
            if self._applicable({name: value}, good_default, name, value):
                good_broker[name] = value
        try:
            return effective_config(self.static, good_broker, good_default)
        except ConfigError as e:
            log.warning("dynamic broker configs ignored: %s", e)
            return self.static

    def _applicable(
        self, per_broker: Mapping[str, str], default: Mapping[str, str], name: str, value: str
    ) -> bool:
        try:
            effective_config(self.static, per_broker, default)
        except ConfigError as e:
            log.warning("dynamic broker config %s=%s ignored: %s", name, value, e)
            return False
        return True
