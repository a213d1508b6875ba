"""Typed broker and topic configuration with Kafka's names, types, defaults and validation.

This module sits in the low "types/config" layer: it imports only the standard library (never
``zurau.storage``, ``zurau.broker`` or ``asyncio``).

Main pieces
-----------
* :class:`ConfigDef` - one configuration definition (name, :class:`ConfigType`, default,
  validator, :class:`Importance`, one-line doc, sensitivity, broker synonyms, dynamic flag).
* :data:`TOPIC_CONFIGS` / :data:`BROKER_CONFIGS` - the definitions, keyed by Kafka name.
* :func:`load_properties` / :func:`parse_properties` - Java ``.properties`` syntax.
* :class:`BrokerConfig` - parsed once from ``server.properties`` style strings; typed attribute
  access (``cfg.listeners``, ``cfg.log_dirs``, ``cfg.node_id``, ``cfg.message_max_bytes`` ...).
* :func:`validate_topic_configs`, :func:`topic_config_values`, :func:`resolve_topic_config`
  - CreateTopics / AlterConfigs validation and the typed per-topic view (snake_case keys that
  match ``zurau.storage.log_config.LogConfig`` field names).
* :func:`describe_topic_config` / :func:`describe_broker_config` - DescribeConfigs entries with
  Kafka's ConfigSource codes, synonyms and value formatting.

Zurau defaults that differ from Kafka's (each :class:`ConfigDef` records Kafka's value in
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

import logging
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from enum import Enum, IntEnum
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "BROKER_CONFIGS",
    "KAFKA_REQUIRED",
    "SASL_MECHANISMS",
    "TOPIC_CONFIGS",
    "AnyOf",
    "BrokerConfig",
    "BrokerSynonym",
    "ConfigDef",
    "ConfigEntry",
    "ConfigError",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "Importance",
    "Listener",
    "NonEmptyList",
    "Password",
    "QuorumVoter",
    "Range",
    "ThrottledReplicas",
    "ValidList",
    "ValidString",
    "Validator",
    "describe_broker_config",
    "describe_topic_config",
    "format_value",
    "inert_configs_set",
    "java_double_str",
    "load_properties",
    "parse_connection_overrides",
    "parse_listeners",
    "parse_properties",
    "resolve_topic_config",
    "topic_config_values",
    "validate_topic_configs",
    "warn_inert_configs",
]

logger = logging.getLogger(__name__)

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

_MS_PER_MINUTE = 60_000
_MS_PER_HOUR = 3_600_000

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


# --------------------------------------------------------------------------------------------
# Errors, enums, small value types
# --------------------------------------------------------------------------------------------


class ConfigError(ValueError):
    """An invalid configuration name or value.

    The message follows Kafka's ``ConfigException``: ``Invalid value V for configuration N: rule``.
    ``name``, ``value`` and ``reason`` are kept as attributes so callers (e.g. the CreateTopics
    handler mapping this to INVALID_CONFIG) can build their own message.
    """

    def __init__(
        self, message: str, *, name: str | None = None, value: Any = None, reason: str | None = None
    ):
        super().__init__(message)
        self.name = name
        self.value = value
        self.reason = reason

    @classmethod
    def invalid(cls, name: str, value: Any, reason: str) -> ConfigError:
        """Build Kafka's ``Invalid value <value> for configuration <name>: <reason>`` error."""
        shown = "[hidden]" if isinstance(value, Password) else _display(value)
        return cls(
            f"Invalid value {shown} for configuration {name}: {reason}", name=name, value=value, reason=reason
        )


def _display(value: Any) -> str:
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class ConfigType(Enum):
    """Kafka ``ConfigDef.Type``; ``code`` is the DescribeConfigs (v3+) ``config_type`` value."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9

    @property
    def code(self) -> int:
        """DescribeConfigs response ``ConfigType`` code (0 is UNKNOWN, never used here)."""
        return self.value


class Importance(Enum):
    """Kafka ``ConfigDef.Importance``."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class ConfigSource(IntEnum):
    """DescribeConfigs ``ConfigSource`` codes (Kafka ``DescribeConfigsResponse.ConfigSource``)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class Password:
    """A secret config value; ``repr``/``str`` never reveal it (Kafka prints ``[hidden]``)."""

    __slots__ = ("value",)

    def __init__(self, value: str):
        self.value = value

    def __repr__(self) -> str:
        return "[hidden]"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("Password", self.value))


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


class ConfigSynonym(NamedTuple):
    """A DescribeConfigs synonym: where a value could come from, in priority order."""

    name: str
    value: str | None
    source: int


@dataclass(frozen=True)
class ConfigEntry:
    """One DescribeConfigs result entry.

    ``value_str`` is formatted as Kafka formats it (booleans ``true``/``false``, lists
    comma-joined, doubles like Java's ``Double.toString``) and is ``None`` for sensitive values
    or unset configs. ``source`` is a :class:`ConfigSource` code; ``config_type`` the type code.
    """

    name: str
    value_str: str | None
    source: int
    is_default: bool
    read_only: bool
    sensitive: bool
    synonyms: list[ConfigSynonym]
    type_name: str
    config_type: int
    doc: str


@dataclass(frozen=True)
class BrokerSynonym:
    """A broker config that supplies a topic config's default, with a unit factor (e.g. hours)."""

    name: str
    factor: int = 1


# --------------------------------------------------------------------------------------------
# Validators
# --------------------------------------------------------------------------------------------


class Validator(ABC):
    """Base class: ``validate`` raises :class:`ConfigError`; ``str()`` documents valid values."""

    @abstractmethod
    def validate(self, name: str, value: Any) -> None: ...

    def __str__(self) -> str:  # pragma: no cover - interface
        return ""


@dataclass(frozen=True)
class Range(Validator):
    """Numeric range ``[min, max]`` (either end optional); ``extra`` lists allowed outliers."""

    min: float | None = None
    max: float | None = None
    extra: tuple[float, ...] = ()

    @classmethod
    def at_least(cls, minimum: float) -> Range:
        """Kafka ``Range.atLeast``."""
        return cls(min=minimum)

    @classmethod
    def between(cls, minimum: float, maximum: float) -> Range:
        """Kafka ``Range.between``."""
        return cls(min=minimum, max=maximum)

    def validate(self, name: str, value: Any) -> None:
        if value in self.extra:
            return
        if self.min is not None and value < self.min:
            raise ConfigError.invalid(name, value, f"Value must be at least {_num(self.min)}")
        if self.max is not None and value > self.max:
            raise ConfigError.invalid(name, value, f"Value must be no more than {_num(self.max)}")

    def __str__(self) -> str:
        if self.min is None:
            text = f"[...,{_num(self.max)}]"
        elif self.max is None:
            text = f"[{_num(self.min)},...]"
        else:
            text = f"[{_num(self.min)},...,{_num(self.max)}]"
        for e in self.extra:
            text += f" or {_num(e)}"
        return text


def _num(x: float | None) -> str:
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


@dataclass(frozen=True)
class ValidString(Validator):
    """The value must be one of ``options`` (Kafka ``ValidString`` / ``CaseInsensitiveValidString``)."""

    options: tuple[str, ...]
    case_insensitive: bool = False

    def validate(self, name: str, value: Any) -> None:
        if value is None:
            return
        if self.case_insensitive:
            ok = value.lower() in (o.lower() for o in self.options)
        else:
            ok = value in self.options
        if not ok:
            raise ConfigError.invalid(name, value, f"String must be one of: {', '.join(self.options)}")

    def __str__(self) -> str:
        return "[" + ", ".join(self.options) + "]"


@dataclass(frozen=True)
class ValidList(Validator):
    """Every list element must be one of ``options`` (Kafka ``ValidList.in``)."""

    options: tuple[str, ...]
    allow_empty: bool = True

    def validate(self, name: str, value: Any) -> None:
        if not value and not self.allow_empty:
            raise ConfigError.invalid(name, value, "Empty list is not allowed")
        for item in value:
            if item not in self.options:
                raise ConfigError.invalid(name, value, f"String must be one of: {', '.join(self.options)}")

    def __str__(self) -> str:
        return "[" + ", ".join(self.options) + "]"


@dataclass(frozen=True)
class NonEmptyList(Validator):
    """A list with at least one element, no empty elements and no duplicates."""

    def validate(self, name: str, value: Any) -> None:
        if value is None:
            return
        if not value:
            raise ConfigError.invalid(name, value, "Empty list is not allowed")
        if any(v == "" for v in value):
            raise ConfigError.invalid(name, value, "Empty elements are not allowed")
        if len(set(value)) != len(value):
            raise ConfigError.invalid(name, value, "Duplicate entries are not allowed")

    def __str__(self) -> str:
        return "non-empty list"


@dataclass(frozen=True)
class ThrottledReplicas(Validator):
    """``*`` or ``partitionId:brokerId,...`` (Kafka ``ThrottledReplicaListValidator``)."""

    _RE = re.compile(r"\d+:\d+\Z")

    def validate(self, name: str, value: Any) -> None:
        if list(value) == ["*"]:
            return
        if all(self._RE.match(v.strip()) for v in value):
            return
        raise ConfigError.invalid(
            name,
            value,
            "must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
        )

    def __str__(self) -> str:
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


_HTTP_LISTENER = re.compile(r"http://(\[[0-9A-Fa-f:.]+\]|[^:/\s\[\]]*):(\d{1,5})/?\Z")


def parse_http_listener(value: str) -> tuple[str, int]:
    """``http://host:port`` -> ``(host, port)``: an empty host means every interface
    (``0.0.0.0``), an IPv6 host loses its brackets. Raises ValueError for anything else."""
    m = _HTTP_LISTENER.match(value.strip())
    if m is None or int(m.group(2)) > 65535:
        raise ValueError(f"not an http://host:port listener: {value!r}")
    return m.group(1).strip("[]") or "0.0.0.0", int(m.group(2))


@dataclass(frozen=True)
class HttpListener(Validator):
    """``http://host:port`` (:func:`parse_http_listener`; port 0: an ephemeral port), or empty
    (nothing served)."""

    def validate(self, name: str, value: Any) -> None:
        if not str(value).strip():
            return
        try:
            parse_http_listener(str(value))
        except ValueError:
            raise ConfigError.invalid(name, value, "must be http://host:port, e.g. http://127.0.0.1:9404") from None

    def __str__(self) -> str:
        return "http://host:port"


@dataclass(frozen=True)
class AnyOf(Validator):
    """Passes when any of ``validators`` passes (error from the first one otherwise)."""

    validators: tuple[Validator, ...]

    def validate(self, name: str, value: Any) -> None:
        first: ConfigError | None = None
        for v in self.validators:
            try:
                v.validate(name, value)
                return
            except ConfigError as e:
                first = first or e
        if first is not None:
            raise first

    def __str__(self) -> str:
        return " or ".join(str(v) for v in self.validators)


# --------------------------------------------------------------------------------------------
# Parsing and formatting of typed values
# --------------------------------------------------------------------------------------------

_INT_RE = re.compile(r"[+-]?\d+\Z")
_DOUBLE_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[dDfF]?\Z")
_LIST_SPLIT = re.compile(r"\s*,\s*")
_INT_BOUNDS = {
    ConfigType.INT: (INT_MIN, INT_MAX),
    ConfigType.SHORT: (SHORT_MIN, SHORT_MAX),
    ConfigType.LONG: (LONG_MIN, LONG_MAX),
}


def _parse_type(name: str, ctype: ConfigType, value: Any) -> Any:
    """Convert ``value`` (a string as in a properties file, or an already typed value) to
    ``ctype``'s Python type. Strings are trimmed like Kafka's ``ConfigDef.parseType`` (except
    passwords). LIST values become tuples of strings."""
    if value is None:
        return None
    if ctype is ConfigType.PASSWORD:
        if isinstance(value, Password):
            return value
        if isinstance(value, str):
            return Password(value)
        raise ConfigError.invalid(name, value, "Expected value to be a string")
    if isinstance(value, str):
        s = value.strip()
        if ctype is ConfigType.BOOLEAN:
            low = s.lower()
            if low == "true":
                return True
            if low == "false":
                return False
            raise ConfigError.invalid(name, value, "Expected value to be either true or false")
        if ctype in (ConfigType.STRING, ConfigType.CLASS):
            return s
        if ctype in _INT_BOUNDS:
            lo, hi = _INT_BOUNDS[ctype]
            if not _INT_RE.match(s) or not lo <= int(s) <= hi:
                raise ConfigError.invalid(name, value, f"Not a number of type {ctype.name}")
            return int(s)
        if ctype is ConfigType.DOUBLE:
            if s in ("NaN", "Infinity", "+Infinity", "-Infinity"):
                return float(s.replace("Infinity", "inf"))
            if not _DOUBLE_RE.match(s):
                raise ConfigError.invalid(name, value, "Not a number of type DOUBLE")
            return float(s.rstrip("dDfF"))
        if ctype is ConfigType.LIST:
            return () if s == "" else tuple(_LIST_SPLIT.split(s))
        raise AssertionError(ctype)  # pragma: no cover
    # Already-typed values (programmatic use).
    if ctype is ConfigType.BOOLEAN:
        if isinstance(value, bool):
            return value
        raise ConfigError.invalid(name, value, "Expected value to be either true or false")
    if ctype in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[ctype]
        if isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi:
            return value
        raise ConfigError.invalid(name, value, f"Not a number of type {ctype.name}")
    if ctype is ConfigType.DOUBLE:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise ConfigError.invalid(name, value, "Not a number of type DOUBLE")
    if ctype is ConfigType.LIST:
        if isinstance(value, list | tuple):
            return tuple(str(v).strip() for v in value)
        raise ConfigError.invalid(name, value, "Expected a comma separated list")
    if ctype is ConfigType.CLASS and isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    raise ConfigError.invalid(name, value, f"Expected value to be of type {ctype.name}")


def java_double_str(x: float) -> str:
    """Format like Java's ``Double.toString``: ``0.5``, ``1.0E7``, ``1.7976931348623157E308``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        s = repr(x)
        return s if "." in s else s + ".0"
    sign, digits, exp = Decimal(repr(x)).as_tuple()
    ds = list(digits)
    assert isinstance(exp, int)
    while len(ds) > 1 and ds[-1] == 0:
        ds.pop()
        exp += 1
    sci = exp + len(ds) - 1
    rest = "".join(str(d) for d in ds[1:]) or "0"
    return f"{'-' if sign else ''}{ds[0]}.{rest}E{sci}"


def format_value(defn: ConfigDef | ConfigType, value: Any) -> str | None:
    """Format a typed value as Kafka's ``ConfigDef.convertToString`` would (``None`` stays ``None``)."""
    ctype = defn.type if isinstance(defn, ConfigDef) else defn
    if value is None:
        return None
    if ctype is ConfigType.BOOLEAN:
        return "true" if value else "false"
    if ctype is ConfigType.LIST:
        return ",".join(value)
    if ctype is ConfigType.DOUBLE:
        return java_double_str(float(value))
    if ctype is ConfigType.PASSWORD:
        return "[hidden]"
    return str(value)


# --------------------------------------------------------------------------------------------
# ConfigDef and the definition tables
# --------------------------------------------------------------------------------------------

_SAME: Any = object()  # marker: Zurau's default equals Kafka's
_MISSING: Any = object()


class _KafkaRequired:
    """Kafka's ``ConfigDef.NO_DEFAULT_VALUE``: Kafka refuses to start until the config is set."""

    def __repr__(self) -> str:
        return "KAFKA_REQUIRED"


#: ``kafka_default`` of a config Kafka has no default for (it must be set, e.g. ``node.id``).
KAFKA_REQUIRED: Any = _KafkaRequired()


@dataclass(frozen=True)
class ConfigDef:
    """One configuration definition, Kafka's ``ConfigDef.ConfigKey`` plus a few Zurau extras.

    ``default`` is the typed default (``None`` = no value). ``synonyms`` (topic configs only) are
    the broker configs that supply the default, in priority order. ``dynamic`` marks broker
    configs Kafka can change at runtime (DescribeConfigs ``read_only`` is its negation).
    ``kafka_default`` records Kafka's default where Zurau's differs (:data:`KAFKA_REQUIRED` when
    Kafka has none). What Zurau does with the config: it is honoured, unless ``inert`` says why
    it has no effect here (accepted so that a Kafka ``server.properties`` starts; the broker
    warns when it is set) or ``unsupported`` says why only its default is accepted (any other
    value is refused with a :class:`ConfigError`, INVALID_CONFIG on the wire).
    """

    name: str
    type: ConfigType
    default: Any
    validator: Validator | None
    importance: Importance
    doc: str
    sensitive: bool = False
    synonyms: tuple[BrokerSynonym, ...] = ()
    dynamic: bool = False
    kafka_default: Any = field(default=_SAME, compare=False)
    inert: str = field(default="", compare=False)
    unsupported: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.type is ConfigType.PASSWORD and not self.sensitive:
            object.__setattr__(self, "sensitive", True)
        if self.inert and self.unsupported:
            raise AssertionError(f"{self.name} cannot be both inert and unsupported")

    @property
    def documentation(self) -> str:
        """``doc`` plus what Zurau does with the config (DescribeConfigs ``documentation``)."""
        if self.inert:
            return f"{self.doc} Has no effect in Zurau: {self.inert}."
        if self.unsupported:
            return f"{self.doc} Zurau accepts only the default: {self.unsupported}."
        return self.doc

    @property
    def snake_name(self) -> str:
        """The name with dots as underscores: ``segment.bytes`` -> ``segment_bytes``."""
        return self.name.replace(".", "_")

    @property
    def differs_from_kafka(self) -> bool:
        """True when Zurau's default is not Kafka's."""
        return self.kafka_default is not _SAME

    @property
    def kafka_default_value(self) -> Any:
        """Kafka's default for this config."""
        return self.default if self.kafka_default is _SAME else self.kafka_default

    @property
    def valid_values(self) -> str:
        """Human-readable valid values, as in Kafka's documentation tables."""
        return str(self.validator) if self.validator is not None else ""

    def parse(self, value: Any) -> Any:
        """Parse a raw string (or typed value) and validate it; raises :class:`ConfigError`."""
        typed = _parse_type(self.name, self.type, value)
        if typed is not None and self.validator is not None:
            self.validator.validate(self.name, typed)
        return typed


_B, _S, _I, _SH, _L, _D, _LI, _C, _P = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.SHORT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
    ConfigType.CLASS,
    ConfigType.PASSWORD,
)
_H, _M, _LO = Importance.HIGH, Importance.MEDIUM, Importance.LOW


def _at_least(n: float) -> Range:
    return Range.at_least(n)


def _between(a: float, b: float) -> Range:
    return Range.between(a, b)


def _syn(*names: str) -> tuple[BrokerSynonym, ...]:
    out = []
    for n in names:
        factor = _MS_PER_HOUR if n.endswith(".hours") else _MS_PER_MINUTE if n.endswith(".minutes") else 1
        out.append(BrokerSynonym(n, factor))
    return tuple(out)


_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
_GZIP_LEVEL = Range(1, 9, extra=(-1,))
_LZ4_LEVEL = _between(1, 17)
_ZSTD_LEVEL = _between(-131072, 22)
_MAX_MESSAGE_BYTES = 1024 * 1024 + 12  # 1 MiB + record batch log overhead = 1048588
# authorizer.class.name values: none, or Kafka's StandardAuthorizer (AclAuthorizer, its ZooKeeper-era
# predecessor, is accepted as the same authorizer).
_AUTHORIZERS = ("", "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer")
_TOPIC_NAME_STRATEGY = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
_SUBJECT_STRATEGIES = (
    _TOPIC_NAME_STRATEGY,
    "io.confluent.kafka.serializers.subject.RecordNameStrategy",
    "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy",
)


def _table(defs: Iterable[ConfigDef]) -> dict[str, ConfigDef]:
    out: dict[str, ConfigDef] = {}
    for d in defs:
        if d.name in out:
            raise AssertionError(f"duplicate config definition {d.name}")
        # Defaults must satisfy their own rules.
        if d.default is not None:
            d.parse(d.default)
        out[d.name] = d
    return out


# fmt: off
TOPIC_CONFIGS: dict[str, ConfigDef] = _table([
    ConfigDef("cleanup.policy", _LI, ("delete",), ValidList(("compact", "delete")), _M,
              "Old-segment policy: 'delete' (retention), 'compact' (keep latest per key), or both.",
              synonyms=_syn("log.cleanup.policy")),
    ConfigDef("compression.gzip.level", _I, -1, _GZIP_LEVEL, _M,
              "gzip level used when compression.type is gzip (-1 = codec default).",
              synonyms=_syn("compression.gzip.level")),
    ConfigDef("compression.lz4.level", _I, 9, _LZ4_LEVEL, _M,
              "lz4 level used when compression.type is lz4.",
              synonyms=_syn("compression.lz4.level")),
    ConfigDef("compression.type", _S, "producer", ValidString(_COMPRESSION_TYPES), _M,
              "Codec batches are stored with; 'producer' keeps what the producer sent.",
              synonyms=_syn("compression.type")),
    ConfigDef("compression.zstd.level", _I, 3, _ZSTD_LEVEL, _M,
              "zstd level used when compression.type is zstd.",
              synonyms=_syn("compression.zstd.level")),
    # Confluent Server's broker-side schema ID validation (needs confluent.schema.registry.url)
    ConfigDef("confluent.key.schema.validation", _B, False, None, _M,
              "Refuse records whose key lacks the schema registry wire format or names a schema id "
              "not registered under the key subject (INVALID_RECORD)."),
    ConfigDef("confluent.key.subject.name.strategy", _S, _TOPIC_NAME_STRATEGY, ValidString(_SUBJECT_STRATEGIES), _M,
              "How the key subject is named for confluent.key.schema.validation."),
    ConfigDef("confluent.value.schema.validation", _B, False, None, _M,
              "Refuse records whose value lacks the schema registry wire format or names a schema id "
              "not registered under the value subject (INVALID_RECORD)."),
    ConfigDef("confluent.value.subject.name.strategy", _S, _TOPIC_NAME_STRATEGY, ValidString(_SUBJECT_STRATEGIES), _M,
              "How the value subject is named for confluent.value.schema.validation."),
    ConfigDef("delete.retention.ms", _L, 86_400_000, _at_least(0), _M,
              "How long tombstones survive in a compacted log after they become cleanable.",
              synonyms=_syn("log.cleaner.delete.retention.ms")),
    ConfigDef("file.delete.delay.ms", _L, 60_000, _at_least(0), _M,
              "Delay between marking a segment deleted and removing its files.",
              synonyms=_syn("log.segment.delete.delay.ms")),
    ConfigDef("flush.messages", _L, LONG_MAX, _at_least(1), _M,
              "fsync the log after this many messages (default: leave it to the OS).",
              synonyms=_syn("log.flush.interval.messages")),
    ConfigDef("flush.ms", _L, LONG_MAX, _at_least(0), _M,
              "fsync the log when unflushed data is older than this (default: leave it to the OS).",
              synonyms=_syn("log.flush.interval.ms", "log.flush.scheduler.interval.ms")),
    ConfigDef("follower.replication.throttled.replicas", _LI, (), ThrottledReplicas(), _M,
              "Replicas (partition:broker, or *) whose follower-side replication is throttled."),
    ConfigDef("index.interval.bytes", _I, 4096, _at_least(0), _M,
              "Bytes of log between two offset-index entries.",
              synonyms=_syn("log.index.interval.bytes")),
    ConfigDef("leader.replication.throttled.replicas", _LI, (), ThrottledReplicas(), _M,
              "Replicas (partition:broker, or *) whose leader-side replication is throttled."),
    ConfigDef("local.retention.bytes", _L, -2, _at_least(-2), _M,
              "Local size limit with tiered storage (-2 = use retention.bytes).",
              synonyms=_syn("log.local.retention.bytes")),
    ConfigDef("local.retention.ms", _L, -2, _at_least(-2), _M,
              "Local time limit with tiered storage (-2 = use retention.ms).",
              synonyms=_syn("log.local.retention.ms")),
    ConfigDef("max.compaction.lag.ms", _L, LONG_MAX, _at_least(1), _M,
              "Longest time a record may stay uncompacted.",
              synonyms=_syn("log.cleaner.max.compaction.lag.ms")),
    ConfigDef("max.message.bytes", _I, _MAX_MESSAGE_BYTES, _at_least(0), _M,
              "Largest record batch accepted for the topic (after compression).",
              synonyms=_syn("message.max.bytes")),
    ConfigDef("message.timestamp.after.max.ms", _L, 3_600_000, _at_least(0), _M,
              "How far in the future a CreateTime timestamp may be before the batch is rejected.",
              synonyms=_syn("log.message.timestamp.after.max.ms")),
    ConfigDef("message.timestamp.before.max.ms", _L, LONG_MAX, _at_least(0), _M,
              "How far in the past a CreateTime timestamp may be before the batch is rejected.",
              synonyms=_syn("log.message.timestamp.before.max.ms")),
    ConfigDef("message.timestamp.type", _S, "CreateTime", ValidString(_TIMESTAMP_TYPES), _M,
              "Stored timestamp: the producer's CreateTime or the broker's LogAppendTime.",
              synonyms=_syn("log.message.timestamp.type")),
    ConfigDef("min.cleanable.dirty.ratio", _D, 0.5, _between(0, 1), _M,
              "Dirty fraction of the log that makes it eligible for compaction.",
              synonyms=_syn("log.cleaner.min.cleanable.ratio")),
    ConfigDef("min.compaction.lag.ms", _L, 0, _at_least(0), _M,
              "Shortest time a record stays uncompacted.",
              synonyms=_syn("log.cleaner.min.compaction.lag.ms")),
    ConfigDef("min.insync.replicas", _I, 1, _at_least(1), _M,
              "In-sync replicas required to acknowledge an acks=all produce.",
              synonyms=_syn("min.insync.replicas")),
    ConfigDef("preallocate", _B, False, None, _M,
              "Preallocate segment files on disk when they are created.",
              synonyms=_syn("log.preallocate")),
    ConfigDef("remote.log.copy.disable", _B, False, None, _M,
              "Stop copying segments to tiered storage."),
    ConfigDef("remote.log.delete.on.disable", _B, False, None, _M,
              "Delete remote data when tiered storage is turned off for the topic."),
    ConfigDef("remote.storage.enable", _B, False, None, _M,
              "Tiered storage for the topic."),
    ConfigDef("retention.bytes", _L, -1, None, _M,
              "Per-partition size limit before old segments are deleted (-1 = no limit).",
              synonyms=_syn("log.retention.bytes")),
    ConfigDef("retention.ms", _L, 604_800_000, _at_least(-1), _M,
              "Age after which segments are deleted under the delete policy (-1 = no limit).",
              synonyms=_syn("log.retention.ms", "log.retention.minutes", "log.retention.hours")),
    ConfigDef("segment.bytes", _I, 1_073_741_824, _at_least(1024 * 1024), _M,
              "Size at which the active segment is rolled.",
              synonyms=_syn("log.segment.bytes")),
    ConfigDef("segment.index.bytes", _I, 10_485_760, _at_least(4), _M,
              "Preallocated size of each segment's offset and time index.",
              synonyms=_syn("log.index.size.max.bytes")),
    ConfigDef("segment.jitter.ms", _L, 0, _at_least(0), _M,
              "Random amount subtracted from segment.ms to spread segment rolls.",
              synonyms=_syn("log.roll.jitter.ms", "log.roll.jitter.hours")),
    ConfigDef("segment.ms", _L, 604_800_000, _at_least(1), _M,
              "Age at which the active segment is rolled even if not full.",
              synonyms=_syn("log.roll.ms", "log.roll.hours")),
    ConfigDef("unclean.leader.election.enable", _B, False, None, _M,
              "Allow an out-of-sync replica to become leader as a last resort (may lose data).",
              synonyms=_syn("unclean.leader.election.enable")),
])

_LSPM_DEFAULT = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"

BROKER_CONFIGS: dict[str, ConfigDef] = _table([
    # --- node identity and KRaft -----------------------------------------------------------
    ConfigDef("process.roles", _LI, ("broker", "controller"), ValidList(("broker", "controller"), allow_empty=False), _H,
              "Roles of this node: broker, controller, or both (Zurau's single-node default is both).",
              kafka_default=KAFKA_REQUIRED),
    ConfigDef("node.id", _I, 1, None, _H,
              "Id of this node in the cluster (Zurau defaults to 1 for a single dev node).",
              kafka_default=KAFKA_REQUIRED),
    ConfigDef("broker.id", _I, -1, None, _H,
              "Old name for node.id; when set alone it is used as node.id, and both must agree."),
    ConfigDef("cluster.id", _S, None, None, _H,
              "Zurau only: expected cluster id; if unset Zurau generates one and persists it in meta.properties."),
    ConfigDef("controller.quorum.voters", _LI, (), None, _H,
              "Static controller quorum as id@host:port entries."),
    ConfigDef("controller.quorum.bootstrap.servers", _LI, (), None, _H,
              "host:port entries used to discover a dynamic controller quorum."),
    ConfigDef("controller.listener.names", _S, None, None, _H,
              "Comma-separated listener names used by the controller quorum."),
    ConfigDef("controller.quorum.election.timeout.ms", _I, 1000, None, _H,
              "Time without a leader before a voter starts an election."),
    ConfigDef("controller.quorum.fetch.timeout.ms", _I, 2000, None, _H,
              "Time without a successful fetch from the leader before a voter becomes a candidate."),
    ConfigDef("controller.quorum.election.backoff.max.ms", _I, 1000, None, _H,
              "Upper bound of the backoff between elections."),
    ConfigDef("controller.quorum.append.linger.ms", _I, 25, None, _M,
              "How long the quorum leader batches appends before flushing them."),
    ConfigDef("controller.quorum.auto.join.enable", _B, False, None, _M,
              "Dynamic quorums: a controller that is not a voter adds itself (AddRaftVoter) once caught up."),
    ConfigDef("controller.quorum.request.timeout.ms", _I, 2000, None, _M,
              "Timeout of quorum requests between voters."),
    ConfigDef("controller.quorum.retry.backoff.ms", _I, 20, None, _LO,
              "Backoff before retrying a failed quorum request."),
    ConfigDef("metadata.log.dir", _S, None, None, _H,
              "Directory of the metadata log; defaults to the first log directory."),
    ConfigDef("metadata.log.segment.bytes", _I, 1_073_741_824, _at_least(12), _H,
              "Segment size of the metadata log."),
    ConfigDef("metadata.log.segment.ms", _L, 604_800_000, None, _H,
              "Age at which a metadata log segment is rolled."),
    ConfigDef("metadata.max.retention.bytes", _L, 104_857_600, None, _H,
              "Size of metadata log plus snapshots above which old ones are deleted."),
    ConfigDef("metadata.max.retention.ms", _L, 604_800_000, None, _H,
              "Age after which metadata log segments and snapshots may be deleted."),
    ConfigDef("metadata.log.max.record.bytes.between.snapshots", _L, 20_971_520, _at_least(1), _H,
              "New metadata bytes that trigger a snapshot."),
    ConfigDef("metadata.log.max.snapshot.interval.ms", _L, 3_600_000, _at_least(0), _H,
              "Longest time between snapshots while there are new records (0 disables)."),
    ConfigDef("metadata.max.idle.interval.ms", _I, 500, _at_least(0), _LO,
              "Interval at which an idle active controller appends no-op records (0 disables)."),
    ConfigDef("broker.heartbeat.interval.ms", _I, 2000, None, _M,
              "Interval between broker heartbeats to the controller."),
    ConfigDef("broker.session.timeout.ms", _I, 9000, None, _M,
              "Heartbeat silence after which the controller fences a broker."),
    ConfigDef("initial.broker.registration.timeout.ms", _I, 60_000, None, _M,
              "How long a starting broker waits to register before giving up."),
    ConfigDef("broker.rack", _S, None, None, _M,
              "Rack of this broker, for rack-aware replica placement and fetch from follower."),
    ConfigDef("replica.selector.class", _S, None,
              ValidString(("org.apache.kafka.common.replica.RackAwareReplicaSelector",
                           "org.apache.kafka.common.replica.LeaderReplicaSelector")), _M,
              "Replica selector for consumer fetches (KIP-392): RackAwareReplicaSelector reads "
              "from a replica in the client.rack; unset: from leaders."),
    # --- sockets and listeners --------------------------------------------------------------
    ConfigDef("listeners", _LI, ("PLAINTEXT://127.0.0.1:9092",), NonEmptyList(), _H,
              "NAME://host:port addresses to listen on; empty host = all interfaces "
              "(Zurau default binds 127.0.0.1 only).",
              dynamic=True, kafka_default=("PLAINTEXT://:9092",)),
    ConfigDef("advertised.listeners", _LI, None, None, _H,
              "Addresses given to clients; defaults to listeners (minus controller listeners).",
              dynamic=True),
    ConfigDef("listener.security.protocol.map", _S, _LSPM_DEFAULT, None, _LO,
              "NAME:PROTOCOL pairs mapping listener names to security protocols.",
              dynamic=True),
    ConfigDef("inter.broker.listener.name", _S, None, None, _M,
              "Listener used between brokers; defaults to the one named after security.inter.broker.protocol."),
    ConfigDef("security.inter.broker.protocol", _S, "PLAINTEXT", ValidString(SECURITY_PROTOCOLS), _M,
              "Security protocol between brokers when inter.broker.listener.name is unset."),
    ConfigDef("socket.send.buffer.bytes", _I, 102_400, None, _H,
              "SO_SNDBUF of accepted sockets (-1 = OS default)."),
    ConfigDef("socket.receive.buffer.bytes", _I, 102_400, None, _H,
              "SO_RCVBUF of accepted sockets (-1 = OS default)."),
    ConfigDef("socket.request.max.bytes", _I, 104_857_600, _at_least(1), _H,
              "Largest request frame accepted; larger frames close the connection."),
    ConfigDef("socket.listen.backlog.size", _I, 50, _at_least(1), _M,
              "Pending-connection backlog of each listening socket."),
    ConfigDef("max.connections", _I, INT_MAX, _at_least(0), _M,
              "Most client connections accepted at once.", dynamic=True),
    ConfigDef("max.connections.per.ip", _I, INT_MAX, _at_least(0), _M,
              "Most connections accepted from one IP address.", dynamic=True),
    ConfigDef("max.connections.per.ip.overrides", _S, "", None, _M,
              "Per-host overrides of max.connections.per.ip, as host:count,...", dynamic=True),
    ConfigDef("max.connection.creation.rate", _I, INT_MAX, _at_least(0), _M,
              "Most new connections accepted per second.", dynamic=True),
    ConfigDef("quota.window.num", _I, 11, _at_least(1), _LO,
              "Samples kept in memory for client quotas (their rate spans this many windows)."),
    ConfigDef("quota.window.size.seconds", _I, 1, _at_least(1), _LO,
              "Length of each client quota sample window, in seconds."),
    ConfigDef("connections.max.idle.ms", _L, 600_000, None, _M,
              "Idle time after which the broker closes a connection."),
    ConfigDef("connection.failed.authentication.delay.ms", _I, 100, _at_least(0), _LO,
              "Delay before closing a connection whose authentication failed."),
    ConfigDef("queued.max.requests", _I, 500, _at_least(1), _H,
              "Requests that may wait for processing before the broker stops reading sockets."),
    ConfigDef("queued.max.request.bytes", _L, -1, None, _M,
              "Bytes of queued requests before the broker stops reading sockets (-1 = no limit)."),
    ConfigDef("num.network.threads", _I, 3, _at_least(1), _H,
              "Threads that receive requests and send responses.",
              dynamic=True),
    ConfigDef("num.io.threads", _I, 8, _at_least(1), _H,
              "Threads that process requests.",
              dynamic=True),
    ConfigDef("background.threads", _I, 10, _at_least(1), _H,
              "Threads for background work such as file deletion.", dynamic=True),
    ConfigDef("num.recovery.threads.per.data.dir", _I, 2, _at_least(1), _H,
              "Threads per log directory for recovery at startup and flush at shutdown.", dynamic=True),
    ConfigDef("request.timeout.ms", _I, 30_000, None, _H,
              "Timeout of requests this node sends to other nodes."),
    ConfigDef("metrics.http.listener", _S, None, HttpListener(), _M,
              "Zurau's own: where to serve Prometheus metrics (GET /metrics); empty: nowhere."),
    ConfigDef("confluent.schema.registry.url", _S, None, None, _M,
              "Schema registry URL(s), comma-separated, that topics with confluent.*.schema.validation "
              "check schema ids against (Confluent Server's name)."),
    ConfigDef("confluent.schema.registry.max.cache.size", _I, 10_000, _at_least(1), _LO,
              "Schema ids (with their subjects) the broker keeps for schema validation."),
    # --- general server ---------------------------------------------------------------------
    ConfigDef("message.max.bytes", _I, _MAX_MESSAGE_BYTES, _at_least(0), _H,
              "Largest record batch accepted (default for the topic config max.message.bytes).",
              dynamic=True),
    ConfigDef("auto.create.topics.enable", _B, True, None, _H,
              "Create a topic automatically when a client asks for metadata of an unknown one."),
    ConfigDef("delete.topic.enable", _B, True, None, _H,
              "Allow DeleteTopics; when false deletions are rejected."),
    ConfigDef("num.partitions", _I, 1, _at_least(1), _M,
              "Partition count of auto-created topics and of CreateTopics asking for the default."),
    ConfigDef("default.replication.factor", _I, 1, None, _M,
              "Replication factor of auto-created topics and of CreateTopics asking for the default."),
    ConfigDef("compression.type", _S, "producer", ValidString(_COMPRESSION_TYPES), _H,
              "Default codec topics store batches with; 'producer' keeps the producer's codec.",
              dynamic=True),
    ConfigDef("compression.gzip.level", _I, -1, _GZIP_LEVEL, _M,
              "Default gzip level for topics compressed with gzip.", dynamic=True),
    ConfigDef("compression.lz4.level", _I, 9, _LZ4_LEVEL, _M,
              "Default lz4 level for topics compressed with lz4.", dynamic=True),
    ConfigDef("compression.zstd.level", _I, 3, _ZSTD_LEVEL, _M,
              "Default zstd level for topics compressed with zstd.", dynamic=True),
    ConfigDef("min.insync.replicas", _I, 1, _at_least(1), _H,
              "Default in-sync replicas required to acknowledge an acks=all produce.", dynamic=True),
    ConfigDef("unclean.leader.election.enable", _B, False, None, _H,
              "Default for electing an out-of-sync replica as a last resort.", dynamic=True),
    ConfigDef("fetch.max.bytes", _I, 57_671_680, _at_least(1024), _M,
              "Largest fetch response the broker builds."),
    ConfigDef("max.incremental.fetch.session.cache.slots", _I, 1000, _at_least(0), _M,
              "Incremental fetch sessions (KIP-227) the broker keeps; 0 answers every fetch sessionless."),
    ConfigDef("controlled.shutdown.enable", _B, True, None, _M,
              "Move leadership away before shutting down."),
    ConfigDef("auto.leader.rebalance.enable", _B, True, None, _H,
              "Periodically move leadership back to preferred replicas."),
    ConfigDef("leader.imbalance.check.interval.seconds", _L, 300, _at_least(1), _H,
              "Interval between preferred-leader balance checks."),
    ConfigDef("leader.imbalance.per.broker.percentage", _I, 10, None, _H,
              "Leader imbalance per broker (percent) that triggers a rebalance."),
    ConfigDef("create.topic.policy.class.name", _C, None, None, _LO,
              "Class validating CreateTopics requests."),
    ConfigDef("alter.config.policy.class.name", _C, None, None, _LO,
              "Class validating AlterConfigs requests."),
    # --- log --------------------------------------------------------------------------------
    ConfigDef("log.dirs", _S, None, None, _H,
              "Comma-separated log directories; when unset log.dir is used."),
    ConfigDef("log.dir", _S, "./data", None, _H,
              "Log directory used when log.dirs is unset (Zurau default ./data).",
              kafka_default="/tmp/kafka-logs"),
    ConfigDef("log.segment.bytes", _I, 1_073_741_824, _at_least(1024 * 1024), _H,
              "Default size at which a segment is rolled.", dynamic=True),
    ConfigDef("log.roll.ms", _L, None, None, _H,
              "Default segment roll age in ms; overrides log.roll.hours.", dynamic=True),
    ConfigDef("log.roll.hours", _I, 168, _at_least(1), _H,
              "Default segment roll age in hours, used when log.roll.ms is unset."),
    ConfigDef("log.roll.jitter.ms", _L, None, None, _H,
              "Default roll jitter in ms; overrides log.roll.jitter.hours.", dynamic=True),
    ConfigDef("log.roll.jitter.hours", _I, 0, _at_least(0), _H,
              "Default roll jitter in hours, used when log.roll.jitter.ms is unset."),
    ConfigDef("log.retention.ms", _L, None, None, _H,
              "Default retention in ms (-1 = unlimited); beats .minutes and .hours.", dynamic=True),
    ConfigDef("log.retention.minutes", _I, None, None, _H,
              "Default retention in minutes, used when log.retention.ms is unset."),
    ConfigDef("log.retention.hours", _I, 168, None, _H,
              "Default retention in hours, used when .ms and .minutes are unset."),
    ConfigDef("log.retention.bytes", _L, -1, None, _H,
              "Default per-partition size limit (-1 = no limit).", dynamic=True),
    ConfigDef("log.retention.check.interval.ms", _L, 300_000, _at_least(1), _M,
              "Interval between checks for segments to delete."),
    ConfigDef("log.cleanup.policy", _LI, ("delete",), ValidList(("compact", "delete")), _M,
              "Default cleanup policy: delete, compact or both.", dynamic=True),
    ConfigDef("log.index.size.max.bytes", _I, 10_485_760, _at_least(4), _M,
              "Default preallocated size of segment indexes.", dynamic=True),
    ConfigDef("log.index.interval.bytes", _I, 4096, _at_least(0), _M,
              "Default bytes between two offset-index entries.", dynamic=True),
    ConfigDef("log.flush.interval.messages", _L, LONG_MAX, _at_least(1), _H,
              "Default messages between forced fsyncs.", dynamic=True),
    ConfigDef("log.flush.interval.ms", _L, None, None, _H,
              "Default age of unflushed data that forces an fsync; falls back to the scheduler interval.",
              dynamic=True),
    ConfigDef("log.flush.scheduler.interval.ms", _L, LONG_MAX, None, _H,
              "Interval at which the flusher looks for logs to fsync."),
    ConfigDef("log.flush.offset.checkpoint.interval.ms", _I, 60_000, _at_least(0), _H,
              "Interval between writes of the recovery-point checkpoint."),
    ConfigDef("log.flush.start.offset.checkpoint.interval.ms", _I, 60_000, _at_least(0), _H,
              "Interval between writes of the log-start-offset checkpoint."),
    ConfigDef("log.segment.delete.delay.ms", _L, 60_000, _at_least(0), _H,
              "Default delay before a deleted segment's files are removed.", dynamic=True),
    ConfigDef("log.preallocate", _B, False, None, _M,
              "Default for preallocating segment files.", dynamic=True),
    ConfigDef("log.message.timestamp.type", _S, "CreateTime", ValidString(_TIMESTAMP_TYPES), _M,
              "Default stored timestamp type: CreateTime or LogAppendTime.", dynamic=True),
    ConfigDef("log.message.timestamp.before.max.ms", _L, LONG_MAX, _at_least(0), _M,
              "Default limit on how old a CreateTime timestamp may be.", dynamic=True),
    ConfigDef("log.message.timestamp.after.max.ms", _L, 3_600_000, _at_least(0), _M,
              "Default limit on how far in the future a CreateTime timestamp may be.", dynamic=True),
    ConfigDef("log.local.retention.ms", _L, -2, _at_least(-2), _M,
              "Default local retention with tiered storage (-2 = retention.ms).", dynamic=True),
    ConfigDef("log.local.retention.bytes", _L, -2, _at_least(-2), _M,
              "Default local size limit with tiered storage (-2 = retention.bytes).", dynamic=True),
    ConfigDef("log.dir.failure.timeout.ms", _L, 30_000, _at_least(1), _LO,
              "How long a failed log directory may go unreported before the broker stops."),
    # --- log cleaner ------------------------------------------------------------------------
    ConfigDef("log.cleaner.enable", _B, True, None, _M,
              "Run the log cleaner (needed for compacted topics such as __consumer_offsets)."),
    ConfigDef("log.cleaner.threads", _I, 1, _at_least(0), _M,
              "Background compaction workers.", dynamic=True),
    ConfigDef("log.cleaner.io.max.bytes.per.second", _D, 1.7976931348623157e308, None, _M,
              "I/O throttle of the log cleaner.", dynamic=True),
    ConfigDef("log.cleaner.dedupe.buffer.size", _L, 134_217_728, None, _M,
              "Memory for the key-offset map used by compaction.", dynamic=True),
    ConfigDef("log.cleaner.io.buffer.size", _I, 524_288, _at_least(0), _M,
              "Memory for cleaner read/write buffers.", dynamic=True),
    ConfigDef("log.cleaner.io.buffer.load.factor", _D, 0.9, None, _M,
              "Fill ratio allowed for the dedupe map.", dynamic=True),
    ConfigDef("log.cleaner.backoff.ms", _L, 15_000, _at_least(0), _M,
              "Sleep when no log needs cleaning.", dynamic=True),
    ConfigDef("log.cleaner.min.cleanable.ratio", _D, 0.5, _between(0, 1), _M,
              "Default dirty ratio that makes a log eligible for compaction.", dynamic=True),
    ConfigDef("log.cleaner.delete.retention.ms", _L, 86_400_000, _at_least(0), _M,
              "Default time tombstones survive in compacted logs.", dynamic=True),
    ConfigDef("log.cleaner.min.compaction.lag.ms", _L, 0, _at_least(0), _M,
              "Default minimum time a record stays uncompacted.", dynamic=True),
    ConfigDef("log.cleaner.max.compaction.lag.ms", _L, LONG_MAX, _at_least(1), _M,
              "Default maximum time a record stays uncompacted.", dynamic=True),
    # --- replication ------------------------------------------------------------------------
    ConfigDef("replica.lag.time.max.ms", _L, 30_000, None, _H,
              "A follower that has not caught up for this long leaves the ISR."),
    ConfigDef("replica.socket.timeout.ms", _I, 30_000, None, _H,
              "Socket timeout of follower fetches."),
    ConfigDef("replica.socket.receive.buffer.bytes", _I, 65_536, None, _H,
              "SO_RCVBUF of follower fetch connections."),
    ConfigDef("replica.fetch.max.bytes", _I, 1_048_576, _at_least(0), _M,
              "Bytes a follower asks for per partition (a larger first batch still comes)."),
    ConfigDef("replica.fetch.wait.max.ms", _I, 500, None, _M,
              "Longest a follower fetch waits on the leader for data."),
    ConfigDef("replica.fetch.min.bytes", _I, 1, None, _H,
              "Bytes a follower fetch waits for before the leader answers."),
    ConfigDef("replica.fetch.backoff.ms", _I, 1000, _at_least(0), _M,
              "Sleep after a follower fetch error."),
    ConfigDef("replica.fetch.response.max.bytes", _I, 10_485_760, _at_least(0), _M,
              "Bytes a follower asks for per fetch response."),
    ConfigDef("num.replica.fetchers", _I, 1, None, _H,
              "Follower fetchers per source broker.", dynamic=True),
    ConfigDef("replica.high.watermark.checkpoint.interval.ms", _L, 5000, None, _H,
              "Interval between high-watermark checkpoints."),
    ConfigDef("fetch.purgatory.purge.interval.requests", _I, 1000, None, _M,
              "Purge interval (in requests) of the fetch purgatory."),
    ConfigDef("producer.purgatory.purge.interval.requests", _I, 1000, None, _M,
              "Purge interval (in requests) of the produce purgatory."),
    ConfigDef("delete.records.purgatory.purge.interval.requests", _I, 1, None, _M,
              "Purge interval (in requests) of the DeleteRecords purgatory."),
    # --- group coordinator ------------------------------------------------------------------
    ConfigDef("group.coordinator.rebalance.protocols", _LI, ("classic", "consumer"),
              ValidList(("classic", "consumer", "share", "streams"), allow_empty=False), _M,
              "Group protocols the coordinator accepts."),
    ConfigDef("offsets.topic.num.partitions", _I, 50, _at_least(1), _H,
              "Partitions of __consumer_offsets (do not change after deployment)."),
    ConfigDef("offsets.topic.replication.factor", _SH, 3, _at_least(1), _H,
              "Replication factor of __consumer_offsets (capped at the live brokers when it is "
              "created, with a warning)."),
    ConfigDef("offsets.topic.segment.bytes", _I, 104_857_600, _at_least(1), _H,
              "Segment size of __consumer_offsets."),
    ConfigDef("offsets.topic.compression.codec", _I, 0, None, _H,
              "Codec id for offset commits written to __consumer_offsets."),
    ConfigDef("offsets.load.buffer.size", _I, 5_242_880, _at_least(1), _H,
              "Read size when loading group state from __consumer_offsets."),
    ConfigDef("offsets.commit.timeout.ms", _I, 5000, _at_least(1), _H,
              "How long a coordinator write waits for replication."),
    ConfigDef("offset.metadata.max.bytes", _I, 4096, None, _H,
              "Largest metadata string stored with a committed offset."),
    ConfigDef("offsets.retention.minutes", _I, 10_080, _at_least(1), _H,
              "How long committed offsets of an empty group are kept."),
    ConfigDef("offsets.retention.check.interval.ms", _L, 600_000, _at_least(1), _H,
              "Interval between expired-offset checks."),
    ConfigDef("group.min.session.timeout.ms", _I, 6000, None, _M,
              "Smallest session timeout a classic-group member may ask for."),
    ConfigDef("group.max.session.timeout.ms", _I, 1_800_000, None, _M,
              "Largest session timeout a classic-group member may ask for."),
    ConfigDef("group.initial.rebalance.delay.ms", _I, 3000, None, _M,
              "Wait for more members before the first rebalance of a new classic group."),
    ConfigDef("group.max.size", _I, INT_MAX, _at_least(1), _M,
              "Most members of one classic group."),
    ConfigDef("group.consumer.session.timeout.ms", _I, 45_000, _at_least(1), _M,
              "Session timeout of consumer-protocol (KIP-848) members."),
    ConfigDef("group.consumer.min.session.timeout.ms", _I, 45_000, _at_least(1), _M,
              "Smallest session timeout for consumer-protocol groups."),
    ConfigDef("group.consumer.max.session.timeout.ms", _I, 60_000, _at_least(1), _M,
              "Largest session timeout for consumer-protocol groups."),
    ConfigDef("group.consumer.heartbeat.interval.ms", _I, 5000, _at_least(1), _M,
              "Heartbeat interval given to consumer-protocol members."),
    ConfigDef("group.consumer.min.heartbeat.interval.ms", _I, 5000, _at_least(1), _M,
              "Smallest heartbeat interval for consumer-protocol groups."),
    ConfigDef("group.consumer.max.heartbeat.interval.ms", _I, 15_000, _at_least(1), _M,
              "Largest heartbeat interval for consumer-protocol groups."),
    ConfigDef("group.consumer.max.size", _I, INT_MAX, _at_least(1), _M,
              "Most members of one consumer-protocol group."),
    ConfigDef("group.consumer.assignors", _LI, ("uniform", "range"), NonEmptyList(), _M,
              "Server-side assignors; the first is the default."),
    ConfigDef("group.consumer.migration.policy", _S, "disabled",
              ValidString(("disabled", "upgrade", "downgrade", "bidirectional"), case_insensitive=True), _M,
              "Which classic <-> consumer group conversions are allowed for non-empty groups.",
              kafka_default="bidirectional"),
    # --- transactions and producer state ----------------------------------------------------
    ConfigDef("transaction.state.log.num.partitions", _I, 50, _at_least(1), _H,
              "Partitions of __transaction_state (do not change after deployment)."),
    ConfigDef("transaction.state.log.replication.factor", _SH, 3, _at_least(1), _H,
              "Replication factor of __transaction_state (capped at the live brokers when it is "
              "created, with a warning)."),
    ConfigDef("transaction.state.log.min.isr", _I, 1, _at_least(1), _H,
              "min.insync.replicas of __transaction_state (Zurau default 1 for a single node).",
              kafka_default=2),
    ConfigDef("transaction.state.log.segment.bytes", _I, 104_857_600, _at_least(1), _H,
              "Segment size of __transaction_state."),
    ConfigDef("transaction.state.log.load.buffer.size", _I, 5_242_880, _at_least(1), _H,
              "Read size when loading transaction state."),
    ConfigDef("transaction.max.timeout.ms", _I, 900_000, _at_least(1), _H,
              "Largest transaction timeout a producer may ask for."),
    ConfigDef("transactional.id.expiration.ms", _I, 604_800_000, _at_least(1), _H,
              "Idle time after which a transactional id is forgotten."),
    ConfigDef("transaction.abort.timed.out.transaction.cleanup.interval.ms", _I, 10_000, _at_least(1), _LO,
              "Interval between checks for timed-out transactions to abort."),
    ConfigDef("transaction.remove.expired.transaction.cleanup.interval.ms", _I, 3_600_000, _at_least(1), _LO,
              "Interval between removals of expired transactional ids."),
    ConfigDef("transaction.partition.verification.enable", _B, True, None, _LO,
              "Check a partition was added to the transaction before accepting its writes.",
              dynamic=True),
    ConfigDef("producer.id.expiration.ms", _I, 86_400_000, _at_least(1), _LO,
              "Idle time after which a partition leader forgets a producer id.", dynamic=True),
    ConfigDef("producer.id.expiration.check.interval.ms", _I, 600_000, _at_least(1), _LO,
              "Interval between expired producer id checks."),
    # --- security ---------------------------------------------------------------------------
    ConfigDef("authorizer.class.name", _S, "", ValidString(_AUTHORIZERS), _LO,
              "Authorizer to use (Kafka's StandardAuthorizer, with ACLs in the metadata log); empty "
              "disables authorization."),
    ConfigDef("super.users", _S, None, None, _LO,
              "Semicolon-separated principals that bypass ACL checks (read by the authorizer)."),
    ConfigDef("allow.everyone.if.no.acl.found", _B, False, None, _LO,
              "Allow access to resources that have no ACLs (read by the authorizer)."),
    ConfigDef("sasl.enabled.mechanisms", _LI, ("GSSAPI",), None, _M,
              "SASL mechanisms offered to clients.", dynamic=True),
    ConfigDef("sasl.mechanism.inter.broker.protocol", _S, "GSSAPI", None, _M,
              "SASL mechanism brokers use with each other (read at start-up)."),
    ConfigDef("sasl.mechanism.controller.protocol", _S, "GSSAPI", None, _H,
              "SASL mechanism used towards controllers."),
    ConfigDef("ssl.keystore.type", _S, "JKS", None, _M,
              "Format of the key store.", dynamic=True),
    ConfigDef("ssl.keystore.location", _S, None, None, _H,
              "Path of the key store.", dynamic=True),
    ConfigDef("ssl.keystore.password", _P, None, None, _H,
              "Password of the key store.", dynamic=True),
    ConfigDef("ssl.key.password", _P, None, None, _H,
              "Password of the private key in the key store.", dynamic=True),
    ConfigDef("ssl.truststore.type", _S, "JKS", None, _M,
              "Format of the trust store.", dynamic=True),
    ConfigDef("ssl.truststore.location", _S, None, None, _H,
              "Path of the trust store.", dynamic=True),
    ConfigDef("ssl.truststore.password", _P, None, None, _H,
              "Password of the trust store.", dynamic=True),
    ConfigDef("ssl.client.auth", _S, "none", ValidString(("required", "requested", "none")), _M,
              "Whether TLS clients must, may or need not present a certificate.", dynamic=True),
    ConfigDef("ssl.protocol", _S, "TLSv1.3", None, _M,
              "TLS protocol used to build the SSL context.", dynamic=True),
    ConfigDef("ssl.enabled.protocols", _LI, ("TLSv1.2", "TLSv1.3"), None, _M,
              "TLS protocol versions accepted.", dynamic=True),
    ConfigDef("ssl.endpoint.identification.algorithm", _S, "https", None, _LO,
              "Host name verification algorithm for outgoing TLS.", dynamic=True),
    ConfigDef("ssl.keystore.certificate.chain", _P, None, None, _H,
              "Certificate chain in PEM, inline (with ssl.keystore.type=PEM).", dynamic=True),
    ConfigDef("ssl.keystore.key", _P, None, None, _H,
              "Private key in PEM, inline (with ssl.keystore.type=PEM).", dynamic=True),
    ConfigDef("ssl.truststore.certificates", _P, None, None, _H,
              "Trusted certificates in PEM, inline (with ssl.truststore.type=PEM).", dynamic=True),
    ConfigDef("ssl.principal.mapping.rules", _S, "DEFAULT", None, _LO,
              "Rules mapping a client certificate's distinguished name to a short principal name."),
    ConfigDef("connections.max.reauth.ms", _L, 0, None, _M,
              "Longest SASL session before the client must re-authenticate (0: never; KIP-368)."),
    ConfigDef("sasl.server.callback.handler.class", _C, None, None, _M,
              "Server callback handler of a SASL mechanism (for OAUTHBEARER: Kafka's unsecured or "
              "JWKS validator class name)."),
    ConfigDef("sasl.oauthbearer.jwks.endpoint.url", _S, None, None, _M,
              "https:// or file:// URL of the JSON Web Key Set that verifies OAUTHBEARER tokens."),
    ConfigDef("sasl.oauthbearer.jwks.endpoint.refresh.ms", _L, 3_600_000, _at_least(0), _LO,
              "Interval between fetches of an https JWKS (an unknown key id fetches sooner)."),
    ConfigDef("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", _L, 100, _at_least(0), _LO,
              "Least time between two JWKS fetches asked for by unknown key ids (doubled after a failure)."),
    ConfigDef("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", _L, 10_000, _at_least(0), _LO,
              "Most time between two JWKS fetches asked for by unknown key ids, after failures."),
    ConfigDef("sasl.oauthbearer.expected.audience", _LI, None, None, _LO,
              "Audiences of which an OAUTHBEARER token's aud claim must name one (unset: not checked)."),
    ConfigDef("sasl.oauthbearer.expected.issuer", _S, None, None, _LO,
              "Issuer an OAUTHBEARER token's iss claim must name (unset: not checked)."),
    ConfigDef("sasl.oauthbearer.sub.claim.name", _S, "sub", None, _LO,
              "Claim of an OAUTHBEARER token holding the principal's name."),
    ConfigDef("sasl.oauthbearer.scope.claim.name", _S, "scope", None, _LO,
              "Claim of an OAUTHBEARER token holding its scope."),
    ConfigDef("sasl.oauthbearer.token.endpoint.url", _S, None, None, _M,
              "For the broker's own OAUTHBEARER login: file: URL of a file holding its JWT (read "
              "at every authentication)."),
    ConfigDef("sasl.login.callback.handler.class", _C, None, None, _M,
              "Login callback handler of the broker's own SASL login (for OAUTHBEARER: Kafka's "
              "OAuthBearerLoginCallbackHandler or the unsecured one)."),
    ConfigDef("sasl.oauthbearer.clock.skew.seconds", _I, 30, _at_least(0), _LO,
              "Clock difference with the token issuer tolerated when checking exp and iat."),
])
# fmt: on

# --------------------------------------------------------------------------------------------
# What Zurau does with each config. Every definition is honoured unless it is listed here as
# inert (accepted so that a Kafka server.properties starts; warned about when set; see
# warn_inert_configs) or unsupported (only its default is accepted; see ConfigDef.unsupported).
# tests/unit/test_config_support.py checks that every other definition is read by the code.
# --------------------------------------------------------------------------------------------

_TIERED = "it applies to tiered storage only (remote.storage.enable), which Zurau does not have"
_PURGATORY = "completed delayed operations leave the purgatories at once, so there is nothing to purge"
_OS_BUFFERS = "socket buffer sizes are left to the operating system's auto-tuning"
_NO_QUEUE = (
    "there is no shared request queue; each connection stops reading while 64 of its requests "
    "await their responses"
)
_NO_PREALLOCATE = "segment files are not preallocated (that changes disk allocation only, never the data)"

_INERT: dict[str, str] = {
    "num.network.threads": "network I/O runs on one event loop per process, with no network threads",
    "num.io.threads": "requests are handled on the broker's event loop, with no request handler threads",
    "background.threads": "background work (retention, checkpoints, expiry) runs as tasks on the event loop",
    "num.recovery.threads.per.data.dir": "logs are recovered one after another at start-up",
    "socket.send.buffer.bytes": _OS_BUFFERS,
    "socket.receive.buffer.bytes": _OS_BUFFERS,
    "replica.socket.receive.buffer.bytes": _OS_BUFFERS,
    "queued.max.requests": _NO_QUEUE,
    "queued.max.request.bytes": _NO_QUEUE,
    "ssl.protocol": "the TLS versions a listener accepts are ssl.enabled.protocols (TLSv1.2 and TLSv1.3)",
    "fetch.purgatory.purge.interval.requests": _PURGATORY,
    "producer.purgatory.purge.interval.requests": _PURGATORY,
    "delete.records.purgatory.purge.interval.requests": _PURGATORY,
    "replica.high.watermark.checkpoint.interval.ms": (
        "the high-watermark checkpoint is written with the recovery-point checkpoint, every "
        "log.flush.offset.checkpoint.interval.ms and at shutdown"
    ),
    "log.dir.failure.timeout.ms": (
        "a failed log directory is not taken offline or reported to the controller (JBOD)"
    ),
    "metadata.log.segment.bytes": "the metadata log has 64 MiB segments and is truncated below each snapshot",
    "metadata.log.segment.ms": "the metadata log has 64 MiB segments and is truncated below each snapshot",
    "metadata.max.retention.bytes": "each metadata snapshot deletes the log and the snapshots older than it",
    "metadata.max.retention.ms": "each metadata snapshot deletes the log and the snapshots older than it",
    "metadata.max.idle.interval.ms": "the active controller writes no no-op records to an idle metadata log",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (
        "each transaction's timeout is a timer of its own: it is aborted at its deadline, not by a periodic scan"
    ),
    "log.preallocate": _NO_PREALLOCATE,
    "preallocate": _NO_PREALLOCATE,
    "log.local.retention.ms": _TIERED,
    "log.local.retention.bytes": _TIERED,
    "local.retention.ms": _TIERED,
    "local.retention.bytes": _TIERED,
    "remote.log.copy.disable": _TIERED,
    "remote.log.delete.on.disable": _TIERED,
    "leader.replication.throttled.replicas": (
        "throttling also needs leader.replication.throttled.rate, which Zurau does not have"
    ),
    "follower.replication.throttled.replicas": (
        "throttling also needs follower.replication.throttled.rate, which Zurau does not have"
    ),
}

_NO_TLS = "it is not a TLS setting Zurau knows (see README, Security)"
_NO_SASL = "it is not a SASL setting Zurau knows (see README, Security)"
_PEM_ONLY = "key and trust stores are PEM (ssl.*.type=PEM), which have no store password; ssl.key.password decrypts the key"

_UNSUPPORTED: dict[str, str] = {
    "remote.storage.enable": "there is no tiered storage (Tiered Storage functionality is disabled in the broker)",
    "create.topic.policy.class.name": "Java policy classes cannot be loaded",
    "alter.config.policy.class.name": "Java policy classes cannot be loaded",
    "max.connection.creation.rate": "new connections are not throttled",
    "group.consumer.migration.policy": (
        "a non-empty group is never converted between the classic and consumer protocols "
        "(an empty group is, when a member of the other protocol joins)"
    ),
    "ssl.keystore.password": _PEM_ONLY,
    "ssl.truststore.password": _PEM_ONLY,
}


def _mark_support() -> None:
    for name in (*_INERT, *_UNSUPPORTED):
        tables = [t for t in (TOPIC_CONFIGS, BROKER_CONFIGS) if name in t]
        if not tables:
            raise AssertionError(f"config {name} is marked inert or unsupported but not defined")
        for t in tables:
            t[name] = replace(t[name], inert=_INERT.get(name, ""), unsupported=_UNSUPPORTED.get(name, ""))


_mark_support()

#: topic config name -> broker synonym names, in priority order.
TOPIC_CONFIG_SYNONYMS: dict[str, tuple[str, ...]] = {
    n: tuple(s.name for s in d.synonyms) for n, d in TOPIC_CONFIGS.items() if d.synonyms
}

_BROKER_BY_SNAKE: dict[str, str] = {d.snake_name: n for n, d in BROKER_CONFIGS.items()}
_LISTENER_PREFIX = "listener.name."


# --------------------------------------------------------------------------------------------
# Java properties files
# --------------------------------------------------------------------------------------------

_WS = " \t\f"
_NEWLINES = re.compile(r"\r\n|\r|\n")


def _odd_trailing_backslashes(s: str) -> bool:
    n = len(s) - len(s.rstrip("\\"))
    return n % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    """Split a logical line as ``java.util.Properties.load`` does (escapes still in place)."""
    n = len(line)
    key_end = value_start = n
    has_sep = False
    backslash = False
    i = 0
    while i < n:
        c = line[i]
        if c in "=:" and not backslash:
            key_end, value_start, has_sep = i, i + 1, True
            break
        if c in _WS and not backslash:
            key_end, value_start = i, i + 1
            break
        backslash = (not backslash) if c == "\\" else False
        i += 1
    while value_start < n:
        c = line[value_start]
        if c not in _WS:
            if not has_sep and c in "=:":
                has_sep = True
            else:
                break
        value_start += 1
    return line[:key_end], line[value_start:]


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        i += 1
        if c != "\\" or i >= n:
            if c != "\\":
                out.append(c)
            continue
        c = s[i]
        i += 1
        if c == "u":
            hexpart = s[i : i + 4]
            if len(hexpart) != 4 or any(h not in "0123456789abcdefABCDEF" for h in hexpart):
                raise ConfigError("Malformed \\uxxxx encoding.")
            out.append(chr(int(hexpart, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text into a dict (later duplicates win).

    Supports ``#``/``!`` comment lines, ``key=value``, ``key: value`` and ``key value``, line
    continuation with an odd number of trailing backslashes (leading whitespace of the next line
    is dropped), and escapes ``\\t \\n \\r \\f \\uXXXX`` plus ``\\<any>`` -> ``<any>`` (so ``\\:``,
    ``\\=``, ``\\\\``, ``\\ ``). Trailing whitespace of values is kept, as Java does.
    """
    props: dict[str, str] = {}
    lines = _NEWLINES.split(text)
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(_WS)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _odd_trailing_backslashes(line):
            line = line[:-1]
            if i >= len(lines):
                break
            line += lines[i].lstrip(_WS)
            i += 1
        key, value = _split_key_value(line)
        props[_unescape(key)] = _unescape(value)
    return props


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a ``server.properties`` style file. UTF-8 is tried first, then ISO-8859-1 (Java's
    ``Properties.load`` encoding); ``\\uXXXX`` escapes work either way."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    if text.startswith("\ufeff"):
        text = text[1:]
    return parse_properties(text)


# --------------------------------------------------------------------------------------------
# Listener / quorum parsing
# --------------------------------------------------------------------------------------------

_LISTENER_RE = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)\Z")
_VOTER_RE = re.compile(r"^(-?\d+)@\[?([0-9a-zA-Z\-%._:]*)\]?:(\d+)\Z")


def parse_listeners(value: Iterable[str] | str, config_name: str = "listeners") -> list[Listener]:
    """Parse ``NAME://host:port`` entries (names upper-cased; IPv6 hosts may be bracketed)."""
    items = _parse_type(config_name, ConfigType.LIST, value) if isinstance(value, str) else tuple(value)
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


def _parse_protocol_map(raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    s = raw.strip()
    if not s:
        return out
    for entry in _LIST_SPLIT.split(s):
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


def _parse_voters(items: Iterable[str]) -> list[QuorumVoter]:
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


# --------------------------------------------------------------------------------------------
# BrokerConfig
# --------------------------------------------------------------------------------------------


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
    kept in :attr:`listener_overrides` without a warning.
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
        for key, raw in self._static.items():
            if key in BROKER_CONFIGS:
                continue
            if key.startswith(_LISTENER_PREFIX):
                self.listener_overrides[key] = raw
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
        self._voters = _parse_voters(values["controller.quorum.voters"])
        self._validate()
        _check_supported(self)
        self._topic_defaults = self._derive_topic_defaults()

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
        pm = _parse_protocol_map(self._values["listener.security.protocol.map"])
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

    def _validate(self) -> None:
        v = self._values
        names = [lst.name for lst in self._listeners]
        raw_listeners = ",".join(v["listeners"])
        if len(set(names)) != len(names):
            raise ConfigError.invalid("listeners", raw_listeners, "Each listener must have a different name")
        seen: dict[int, Listener] = {}
        for lst in self._listeners:
            other = seen.get(lst.port)
            if other is not None and lst.port != 0 and (":" in other.host) == (":" in lst.host):
                raise ConfigError.invalid(
                    "listeners",
                    raw_listeners,
                    f"Each listener must have a different port unless one is IPv4 and the other IPv6 "
                    f"(port {lst.port} is used by {other.name} and {lst.name})",
                )
            seen[lst.port] = lst
        for lst in self._listeners:
            if lst.name not in self._protocol_map:
                raise ConfigError.invalid(
                    "listeners",
                    raw_listeners,
                    f"No security protocol defined for listener {lst.name} (add it to listener.security.protocol.map)",
                )
        adv_names = {lst.name for lst in self._advertised}
        if not adv_names <= set(names):
            raise ConfigError.invalid(
                "advertised.listeners",
                ",".join(v["advertised.listeners"] or ()),
                "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners",
            )
        if v["inter.broker.listener.name"] is not None and "security.inter.broker.protocol" in self._merged:
            raise ConfigError(
                "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.",
                name="inter.broker.listener.name",
                value=v["inter.broker.listener.name"],
            )
        ctrl = self.controller_listener_names
        if self.is_broker and self.inter_broker_listener_name not in adv_names:
            raise ConfigError.invalid(
                "inter.broker.listener.name",
                self.inter_broker_listener_name,
                "inter.broker.listener.name must be a listener name defined in advertised.listeners. "
                f"The valid options based on currently configured listeners are {','.join(sorted(adv_names))}",
            )
        if ctrl:
            if self.is_controller and not set(ctrl) & set(names):
                raise ConfigError.invalid(
                    "controller.listener.names",
                    v["controller.listener.names"],
                    "must contain at least one value appearing in the 'listeners' configuration "
                    "when running the KRaft controller role",
                )
            if not self.is_controller and set(ctrl) & set(names):
                raise ConfigError.invalid(
                    "controller.listener.names",
                    v["controller.listener.names"],
                    "must not contain a value appearing in the 'listeners' configuration "
                    "when running KRaft with just the broker role",
                )
        if self._voters and self.is_controller and self.node_id not in {x.node_id for x in self._voters}:
            raise ConfigError.invalid(
                "controller.quorum.voters",
                ",".join(v["controller.quorum.voters"]),
                f"If process.roles contains the 'controller' role, the node id {self.node_id} "
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
        if not self.log_dirs:
            raise ConfigError.invalid("log.dirs", v["log.dirs"], "At least one log directory must be defined")

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
        _check_compaction_lags(out)
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
        name = _BROKER_BY_SNAKE.get(attr)
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
        want = f"{_LISTENER_PREFIX}{listener_name.lower()}.{name}"
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
        return [n.upper() for n in _LIST_SPLIT.split(raw.strip()) if n]

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
        return [Path(p) for p in _LIST_SPLIT.split(raw.strip()) if p]

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
        return self._values["offsets.retention.minutes"] * _MS_PER_MINUTE

    @property
    def cluster_id(self) -> str | None:
        """Expected cluster id if configured (Zurau generates and persists one otherwise)."""
        return self._values["cluster.id"]

    def topic_defaults(self) -> dict[str, Any]:
        """Topic config name -> typed default derived from the broker synonyms (copy)."""
        return dict(self._topic_defaults)

    # -- describe helpers -----------------------------------------------------------------

    def _layered_synonyms(self, names: Iterable[str], sensitive: bool) -> list[ConfigSynonym]:
        names = tuple(names)
        out: list[ConfigSynonym] = []
        layers: tuple[tuple[Mapping[str, str], ConfigSource], ...] = (
            (self._dyn_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (self._dyn_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (self._static, ConfigSource.STATIC_BROKER_CONFIG),
            (_BROKER_DEFAULT_STRINGS, ConfigSource.DEFAULT_CONFIG),
        )
        for mapping, source in layers:
            for n in names:
                if n in mapping:
                    out.append(ConfigSynonym(n, None if sensitive else mapping[n], int(source)))
        return out


def _to_str(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Password):
        return value.value
    d = BROKER_CONFIGS.get(name) or TOPIC_CONFIGS.get(name)
    if d is not None:
        s = format_value(d, _parse_type(name, d.type, value))
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


_BROKER_DEFAULT_STRINGS: dict[str, str] = {
    n: s for n, d in BROKER_CONFIGS.items() if (s := format_value(d, d.default)) is not None
}


# --------------------------------------------------------------------------------------------
# Zurau support: refused values, inert configs
# --------------------------------------------------------------------------------------------

_SECURITY_PREFIXES = {"ssl.": _NO_TLS, "sasl.": _NO_SASL}
_REBALANCE_PROTOCOLS = ("classic", "consumer")
_ASSIGNORS = ("uniform", "range")


def _is_default(d: ConfigDef, value: Any) -> bool:
    if isinstance(value, str) and isinstance(d.default, str):
        return value.lower() == d.default.lower()
    return bool(value == d.default)


def _not_supported(name: str, value: Any, reason: str) -> ConfigError:
    return ConfigError.invalid(name, value, f"not supported by Zurau: {reason}")


#: The SASL mechanisms a broker listener can offer.
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
#: Configs a listener may override (``listener.name.<listener>.<config>``), besides ``ssl.*``/``sasl.*``.
_LISTENER_SCOPED = ("connections.max.reauth.ms",)
_JAAS = "sasl.jaas.config"
#: Configs read per SASL mechanism (``listener.name.<listener>.<mechanism>.<config>``).
_MECHANISM_SCOPED = (
    "connections.max.reauth.ms", "sasl.server.callback.handler.class", "sasl.login.callback.handler.class",
    "sasl.oauthbearer.",
)


def _check_listener_override(cfg: BrokerConfig, key: str, raw: str) -> None:
    """``listener.name.<listener>.<config>``: a known listener and a config a listener may
    override (an ``ssl.*``/``sasl.*`` definition, ``connections.max.reauth.ms``, or a JAAS
    config, optionally prefixed with its lower-case SASL mechanism), with a valid value."""
    rest = key[len(_LISTENER_PREFIX) :]
    listener, _, name = rest.partition(".")
    # A broker-only node configures the controller listener it dials (Kafka's rule too).
    if listener.upper() not in {lst.name for lst in cfg._listeners} | set(cfg.controller_listener_names):
        raise ConfigError(
            f"{key} names listener {listener}, which is not in listeners or controller.listener.names",
            name=key, reason="unknown listener",
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
    if d.unsupported and not _is_default(d, value):
        raise _not_supported(key, value, d.unsupported)


def _check_supported(cfg: BrokerConfig) -> None:
    """Refuse, with a :class:`ConfigError` naming the config, what Zurau would otherwise ignore:
    a non-default value of an ``unsupported`` config, any other ``ssl.*``/``sasl.*`` key,
    per-listener overrides, a listener whose security protocol is not PLAINTEXT, group protocols
    and assignors Zurau does not implement. Also checks the consumer-group timeouts against their
    bounds, as Kafka's group coordinator does at start-up."""
    for name in sorted(cfg._merged):
        d = BROKER_CONFIGS.get(name)
        if d is not None:
            if d.unsupported and not _is_default(d, cfg._values[name]):
                raise _not_supported(name, cfg._values[name], d.unsupported)
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
                raise _not_supported(
                    "sasl.enabled.mechanisms",
                    mechanisms,
                    f"listener {lst.name} uses SASL, and Zurau's SASL mechanisms are {', '.join(SASL_MECHANISMS)}",
                )
    v = cfg._values
    protocols = v["group.coordinator.rebalance.protocols"]
    if any(p.lower() not in _REBALANCE_PROTOCOLS for p in protocols):
        raise _not_supported(
            "group.coordinator.rebalance.protocols", protocols, "only the classic and consumer protocols are implemented"
        )
    assignors = v["group.consumer.assignors"]
    if any(a.lower() not in _ASSIGNORS for a in assignors):
        raise _not_supported(
            "group.consumer.assignors", assignors, "only the built-in assignors uniform and range are implemented"
        )
    _check_consumer_group_bounds(v)
    parse_connection_overrides(v["max.connections.per.ip.overrides"])


def parse_connection_overrides(raw: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count,...`` (an IP address or a host name,
    IPv6 addresses bracketed or not) -> count. Raises :class:`ConfigError` for a malformed entry."""
    out: dict[str, int] = {}
    for entry in (e for e in _LIST_SPLIT.split(raw.strip()) if e):
        host, sep, count = entry.rpartition(":")
        host = host.strip().strip("[]")
        if not sep or not host or not _INT_RE.match(count.strip()) or int(count) < 0:
            raise ConfigError.invalid(
                "max.connections.per.ip.overrides", raw, f"entry '{entry}' is not of the form host:count"
            )
        out[host] = int(count)
    return out


def _check_consumer_group_bounds(v: Mapping[str, Any]) -> None:
    """Kafka's start-up checks of the consumer-group (KIP-848) session timeout and heartbeat
    interval against their min/max bounds."""
    prefix = "group.consumer."
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


# --------------------------------------------------------------------------------------------
# Topic configs: validation, resolution, describe
# --------------------------------------------------------------------------------------------


def _check_compaction_lags(values: Mapping[str, Any]) -> None:
    lo, hi = values.get("min.compaction.lag.ms"), values.get("max.compaction.lag.ms")
    if lo is not None and hi is not None and lo > hi:
        raise ConfigError(
            f"conflict topic config setting min.compaction.lag.ms ({lo}) > max.compaction.lag.ms ({hi})",
            name="min.compaction.lag.ms",
            value=lo,
            reason="must not exceed max.compaction.lag.ms",
        )


def validate_topic_configs(configs: Mapping[str, Any], broker: BrokerConfig | None = None) -> dict[str, Any]:
    """Validate topic config overrides (CreateTopics / AlterConfigs) and return typed values.

    Unknown names, ``None`` values and invalid values raise :class:`ConfigError` (the broker
    answers INVALID_CONFIG). A non-default value of an ``unsupported`` topic config is rejected
    (``remote.storage.enable=true``: Zurau has no tiered storage). Cross-field rules (``min.compaction.lag.ms`` <= ``max.compaction.lag.ms``) are
    checked on the overrides merged with ``broker``'s topic defaults when given.
    """
    unknown = [n for n in configs if n not in TOPIC_CONFIGS]
    if unknown:
        raise ConfigError(
            f"Unknown topic config name: {unknown[0]}", name=unknown[0], value=configs[unknown[0]]
        )
    nulls = sorted(n for n, v in configs.items() if v is None)
    if nulls:
        raise ConfigError(
            f"Null value not supported for topic configs: {','.join(nulls)}",
            name=nulls[0],
            reason="null value",
        )
    typed = {n: TOPIC_CONFIGS[n].parse(v) for n, v in configs.items()}
    for n, v in typed.items():
        d = TOPIC_CONFIGS[n]
        if d.unsupported and not _is_default(d, v):
            raise _not_supported(n, v, d.unsupported)
    base = broker.topic_defaults() if broker is not None else {}
    _check_compaction_lags({**base, **typed})
    return typed


def topic_config_values(
    overrides: Mapping[str, Any] | None = None, broker: BrokerConfig | None = None
) -> dict[str, Any]:
    """All topic configs typed, with snake_case keys (``segment_bytes``, ``retention_ms`` ...).

    Values come from ``overrides`` (topic config names, raw strings or typed values), else from
    ``broker``'s derived topic defaults, else Kafka's topic defaults. The keys match
    ``zurau.storage.log_config.LogConfig`` fields, so a caller can build one with
    ``LogConfig(**{k: v for k, v in values.items() if k in field_names})``; for that reason LIST
    values are given in Kafka's string form (``cleanup_policy="compact,delete"``), unlike
    :func:`validate_topic_configs` and :class:`BrokerConfig`, which give tuples.
    """
    base = broker.topic_defaults() if broker is not None else {n: d.default for n, d in TOPIC_CONFIGS.items()}
    typed = validate_topic_configs(overrides or {}, broker)
    merged = {**base, **typed}
    _check_compaction_lags(merged)
    out: dict[str, Any] = {}
    for n, d in TOPIC_CONFIGS.items():
        v = merged[n]
        out[d.snake_name] = ",".join(v) if d.type is ConfigType.LIST else v
    return out


def resolve_topic_config(broker: BrokerConfig, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The effective typed config of a topic: overrides over broker-derived defaults
    (snake_case keys; see :func:`topic_config_values`)."""
    return topic_config_values(overrides, broker)


def _entry(d: ConfigDef, value: Any, synonyms: list[ConfigSynonym], read_only: bool) -> ConfigEntry:
    source = synonyms[0].source if synonyms else int(ConfigSource.DEFAULT_CONFIG)
    return ConfigEntry(
        name=d.name,
        value_str=None if d.sensitive else format_value(d, value),
        source=source,
        is_default=source == ConfigSource.DEFAULT_CONFIG,
        read_only=read_only,
        sensitive=d.sensitive,
        synonyms=synonyms,
        type_name=d.type.name,
        config_type=d.type.code,
        doc=d.documentation,
    )


def describe_topic_config(
    broker: BrokerConfig,
    overrides: Mapping[str, Any] | None = None,
    names: Iterable[str] | None = None,
) -> list[ConfigEntry]:
    """DescribeConfigs entries for a topic with these stored overrides, sorted by name.

    Synonyms are listed in Kafka's order: the topic override (DYNAMIC_TOPIC_CONFIG), then each
    broker synonym found in the dynamic per-broker, dynamic default, static and default layers.
    The entry's source is the first synonym's (DEFAULT_CONFIG when none). Unlike Kafka, which
    drops lower-priority broker synonyms (e.g. ``log.retention.hours``) when the primary one
    (``log.retention.ms``) is unset, Zurau lists them, so the source names where the value
    really comes from. ``names`` restricts the result (unknown names are ignored, as Kafka does).
    """
    overrides = dict(overrides or {})
    typed = validate_topic_configs(overrides)
    wanted = None if names is None else set(names)
    defaults = broker.topic_defaults()
    out: list[ConfigEntry] = []
    for name in sorted(TOPIC_CONFIGS):
        if wanted is not None and name not in wanted:
            continue
        d = TOPIC_CONFIGS[name]
        value = typed[name] if name in typed else defaults[name]
        synonyms: list[ConfigSynonym] = []
        if name in typed:
            synonyms.append(
                ConfigSynonym(
                    name,
                    None if d.sensitive else format_value(d, value),
                    int(ConfigSource.DYNAMIC_TOPIC_CONFIG),
                )
            )
        synonyms += broker._layered_synonyms((s.name for s in d.synonyms), d.sensitive)
        out.append(_entry(d, value, synonyms, read_only=False))
    return out


def describe_broker_config(
    cfg: BrokerConfig, names: Iterable[str] | None = None, per_broker: bool = True
) -> list[ConfigEntry]:
    """DescribeConfigs entries for a broker, sorted by name.

    ``per_broker=False`` describes the cluster-wide default resource (empty resource name): as
    in Kafka only DYNAMIC_DEFAULT_BROKER_CONFIG synonyms are reported then. Passwords have
    ``value_str=None`` and ``sensitive=True``; ``read_only`` is true for configs that cannot be
    changed dynamically.
    """
    wanted = None if names is None else set(names)
    out: list[ConfigEntry] = []
    for name in sorted(BROKER_CONFIGS):
        if wanted is not None and name not in wanted:
            continue
        d = BROKER_CONFIGS[name]
        synonyms = cfg._layered_synonyms((name,), d.sensitive)
        if not per_broker:
            synonyms = [s for s in synonyms if s.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
        out.append(_entry(d, cfg.get(name), synonyms, read_only=not d.dynamic))
    return out
