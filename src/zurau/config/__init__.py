"""Typed configuration with Kafka's names, types, defaults and validation.

The package sits in the low "types/config" layer: standard library only (never
``zurau.storage``, ``zurau.broker`` or ``asyncio``). Its modules, low to high:

* :mod:`~zurau.config.types`, :mod:`~zurau.config.validators`, :mod:`~zurau.config.config_def`
  - the one config-definition machinery (Kafka's ``ConfigDef``): :class:`ConfigKey`,
  :class:`ConfigDef`, validators, parsing and formatting. The broker, Kafka Connect, the schema
  registry and the console declare their settings with it.
* definitions by area - :mod:`~zurau.config.kraft_configs`, :mod:`~zurau.config.server_configs`,
  :mod:`~zurau.config.server_log_configs`, :mod:`~zurau.config.replication_configs`,
  :mod:`~zurau.config.coordinator_configs`, :mod:`~zurau.config.security_configs` (broker) and
  :mod:`~zurau.config.topic_configs` (topics); :mod:`~zurau.config.group_configs` the dynamic
  per-group configs (Kafka's ``GroupConfig``: definitions, validation against the broker's bounds
  and :func:`~zurau.config.group_configs.effective_group_config`); :mod:`~zurau.config.support` says what Zurau
  does not honour; :mod:`~zurau.config.definitions` assembles :data:`BROKER_CONFIGS` and
  :data:`TOPIC_CONFIGS`.
* :mod:`~zurau.config.properties` - Java ``.properties`` files; :mod:`~zurau.config.listeners`
  - ``NAME://host:port`` and friends.
* :mod:`~zurau.config.broker_config` - :class:`BrokerConfig`, parsed once, typed attribute
  access (``cfg.listeners``, ``cfg.log_dirs``, ``cfg.node_id``, ``cfg.message_max_bytes`` ...)
  and the coordinators' typed views (``cfg.group_coordinator``, ``cfg.transaction_coordinator``);
  :mod:`~zurau.config.broker_checks` - its cross-field checks and what Zurau refuses.
* :mod:`~zurau.config.topic_validation` - CreateTopics / AlterConfigs validation and the typed
  per-topic view; :mod:`~zurau.config.describe` - DescribeConfigs entries (sources, synonyms,
  sensitivity).

Zurau defaults that differ from Kafka's (each :class:`ConfigKey` records Kafka's value in
``kafka_default``; README.md lists them, and a unit test keeps the two in step): ``listeners``
(``PLAINTEXT://127.0.0.1:9092``: a single local dev node), ``log.dir`` (``./data``), ``node.id``
(1) and ``process.roles`` (``broker,controller``), which Kafka requires to be set,
``transaction.state.log.min.isr`` (1, as in Kafka's shipped single-node ``server.properties``) and
``group.consumer.migration.policy`` (``disabled``: what Zurau does). The internal topics'
replication factors keep Kafka's default 3; a topic created while fewer brokers are live gets as
many replicas as there are live brokers (with a warning).

Support: every definition is honoured, except ``inert`` ones (accepted so that a Kafka
``server.properties`` starts; :func:`warn_inert_configs` warns when one is set) and
``unsupported`` ones (only the default is accepted: :class:`BrokerConfig` and
:func:`validate_topic_configs` raise :class:`ConfigError` for anything else). Listeners may be
PLAINTEXT, SSL (PEM key material), SASL_PLAINTEXT or SASL_SSL (PLAIN, SCRAM-SHA-256/512), with
``listener.name.<listener>.*`` overrides (:meth:`BrokerConfig.listener_config`); ACLs are refused
until authorization lands.
"""

from __future__ import annotations

from zurau.config.broker_checks import inert_configs_set, warn_inert_configs
from zurau.config.broker_config import BrokerConfig
from zurau.config.config_def import (
    KAFKA_REQUIRED,
    NO_DEFAULT,
    BrokerSynonym,
    ConfigDef,
    ConfigKey,
    ConfigValue,
    format_value,
    java_double_str,
)
from zurau.config.coordinator_views import GroupCoordinatorConfig, TransactionCoordinatorConfig
from zurau.config.definitions import BROKER_CONFIGS, TOPIC_CONFIG_SYNONYMS, TOPIC_CONFIGS
from zurau.config.describe import (
    ConfigEntry,
    ConfigSource,
    ConfigSynonym,
    describe_broker_config,
    describe_group_config,
    describe_topic_config,
)
from zurau.config.listeners import Listener, QuorumVoter, parse_connection_overrides, parse_listeners
from zurau.config.properties import load_properties, parse_properties
from zurau.config.security_configs import SASL_MECHANISMS, SECURITY_PROTOCOLS
from zurau.config.topic_validation import (
    check_remote_storage,
    resolve_topic_config,
    topic_config_values,
    validate_topic_configs,
)
from zurau.config.types import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    SHORT_MAX,
    SHORT_MIN,
    ConfigError,
    ConfigException,
    ConfigType,
    Importance,
    Password,
    Width,
)
from zurau.config.validators import (
    AnyOf,
    HttpListener,
    NonEmptyList,
    NonEmptyString,
    Range,
    ThrottledReplicas,
    Validator,
    ValidList,
    ValidString,
    non_empty_string,
    parse_http_listener,
    valid_string,
)

__all__ = [
    "BROKER_CONFIGS",
    "INT_MAX",
    "INT_MIN",
    "KAFKA_REQUIRED",
    "LONG_MAX",
    "LONG_MIN",
    "NO_DEFAULT",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "SHORT_MAX",
    "SHORT_MIN",
    "TOPIC_CONFIGS",
    "TOPIC_CONFIG_SYNONYMS",
    "AnyOf",
    "BrokerConfig",
    "BrokerSynonym",
    "ConfigDef",
    "ConfigEntry",
    "ConfigError",
    "ConfigException",
    "ConfigKey",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "ConfigValue",
    "GroupCoordinatorConfig",
    "HttpListener",
    "Importance",
    "Listener",
    "NonEmptyList",
    "NonEmptyString",
    "Password",
    "QuorumVoter",
    "Range",
    "ThrottledReplicas",
    "TransactionCoordinatorConfig",
    "ValidList",
    "ValidString",
    "Validator",
    "Width",
    "describe_broker_config",
    "describe_group_config",
    "describe_topic_config",
    "format_value",
    "inert_configs_set",
    "java_double_str",
    "load_properties",
    "parse_connection_overrides",
    "non_empty_string",
    "non_empty_string",
    "parse_http_listener",
    "parse_listeners",
    "parse_properties",
    "check_remote_storage",
    "resolve_topic_config",
    "topic_config_values",
    "valid_string",
    "valid_string",
    "validate_topic_configs",
    "warn_inert_configs",
]
