"""One configuration-definition machinery for the broker, Kafka Connect, the registry and the
console (Kafka's ``ConfigDef``).

* :class:`ConfigKey` - one setting: name, :class:`~zurau.config.types.ConfigType`, default,
  validator, :class:`~zurau.config.types.Importance`, documentation, sensitivity, and what only
  some users need (the broker's dynamic flag, topic-config synonyms and support notes; Connect's
  group, order, width and display name). :meth:`ConfigKey.parse` parses and validates one value.
* :class:`ConfigDef` - an ordered set of keys (``define`` chains), with :meth:`ConfigDef.parse`
  (typed values of a whole string map) and :meth:`ConfigDef.validate` (every error, one
  :class:`ConfigValue` per key: Kafka Connect's ``/config/validate``).
* :func:`parse_type` / :func:`format_value` - Kafka's ``ConfigDef.parseType`` and
  ``convertToString``, with Kafka's error wording.

Invariants: a key's default satisfies its own rules (checked by :func:`key_table`); a PASSWORD
key is sensitive; parsing trims strings (never passwords) and gives LIST values as tuples, except
:func:`parse_value` (string maps, as Connect keeps them), which gives lists and plain password
strings. Standard library only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from zurau.config.types import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    SHORT_MAX,
    SHORT_MIN,
    ConfigError,
    ConfigType,
    Importance,
    Password,
    Width,
)
from zurau.config.validators import Validator

__all__ = [
    "KAFKA_REQUIRED",
    "NO_DEFAULT",
    "BrokerSynonym",
    "ConfigDef",
    "ConfigKey",
    "ConfigValue",
    "ValidatorFn",
    "format_value",
    "java_double_str",
    "key_table",
    "parse_type",
    "parse_value",
]

#: A validator: a :class:`~zurau.config.validators.Validator`, or any function of
#: ``(name, parsed value)`` that raises :class:`ConfigError` when the value is invalid.
ValidatorFn = Validator | Callable[[str, Any], None]

# --------------------------------------------------------------------------------------------
# Parsing and formatting of typed values
# --------------------------------------------------------------------------------------------

INT_RE = re.compile(r"[+-]?\d+\Z")
_DOUBLE_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[dDfF]?\Z")
LIST_SPLIT = re.compile(r"\s*,\s*")
_INT_BOUNDS = {
    ConfigType.INT: (INT_MIN, INT_MAX),
    ConfigType.SHORT: (SHORT_MIN, SHORT_MAX),
    ConfigType.LONG: (LONG_MIN, LONG_MAX),
}


def parse_type(name: str, ctype: ConfigType, value: Any) -> Any:
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
            if not INT_RE.match(s) or not lo <= int(s) <= hi:
                raise ConfigError.invalid(name, value, f"Not a number of type {ctype.name}")
            return int(s)
        if ctype is ConfigType.DOUBLE:
            if s in ("NaN", "Infinity", "+Infinity", "-Infinity"):
                return float(s.replace("Infinity", "inf"))
            if not _DOUBLE_RE.match(s):
                raise ConfigError.invalid(name, value, "Not a number of type DOUBLE")
            return float(s.rstrip("dDfF"))
        if ctype is ConfigType.LIST:
            return () if s == "" else tuple(LIST_SPLIT.split(s))
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


def format_value(defn: ConfigKey | ConfigType, value: Any) -> str | None:
    """Format a typed value as Kafka's ``ConfigDef.convertToString`` would (``None`` stays ``None``)."""
    ctype = defn.type if isinstance(defn, ConfigKey) else defn
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


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(_as_text(v) for v in value)
    return str(value)


# Zurau's Connect has always said "Not a 32-bit integer" where Kafka says "Not a number of type INT".
_STRING_MAP_NUMBER_WORDS = {
    ConfigType.INT: "32-bit integer",
    ConfigType.SHORT: "16-bit integer",
    ConfigType.LONG: "64-bit integer",
    ConfigType.DOUBLE: "number",
}


def parse_value(key: ConfigKey, raw: Any) -> Any:
    """Parse one value of a string map (Kafka Connect's config maps are string to string: JSON
    numbers and booleans are read as their text). LIST values come as lists, passwords as plain
    strings; a malformed number is "Not a 32-bit integer" (Connect's wording). Raises
    :class:`ConfigError`."""
    if raw is None:
        return None
    try:
        typed = parse_type(key.name, key.type, _as_text(raw))
    except ConfigError as e:
        words = _STRING_MAP_NUMBER_WORDS.get(key.type)
        if words is None or not (e.reason or "").startswith("Not a number"):
            raise
        raise ConfigError.invalid(key.name, raw, f"Not a {words}") from None
    if isinstance(typed, tuple):
        return list(typed)
    if isinstance(typed, Password):
        return typed.value
    return typed


# --------------------------------------------------------------------------------------------
# ConfigKey: one setting
# --------------------------------------------------------------------------------------------

_SAME: Any = object()  # marker: Zurau's default equals Kafka's


class _Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: ``kafka_default`` of a config Kafka has no default for (it must be set, e.g. ``node.id``).
KAFKA_REQUIRED: Any = _Marker("KAFKA_REQUIRED")
#: ``default`` of a required setting: validation reports it missing when none is given.
NO_DEFAULT: Any = _Marker("NO_DEFAULT")


@dataclass(frozen=True)
class BrokerSynonym:
    """A broker config that supplies a topic config's default, with a unit factor (e.g. hours)."""

    name: str
    factor: int = 1


@dataclass(frozen=True)
class ConfigKey:
    """One configuration definition, Kafka's ``ConfigDef.ConfigKey`` plus a few Zurau extras.

    ``default`` is the typed default (``None`` = no value, :data:`NO_DEFAULT` = required).
    ``synonyms`` (topic configs only) are the broker configs that supply the default, in priority
    order. ``dynamic`` marks broker configs Kafka can change at runtime (DescribeConfigs
    ``read_only`` is its negation). ``kafka_default`` records Kafka's default where Zurau's
    differs (:data:`KAFKA_REQUIRED` when Kafka has none). What Zurau does with the config: it is
    honoured, unless ``inert`` says why it has no effect here (accepted so that a Kafka
    ``server.properties`` starts; the broker warns when it is set) or ``unsupported`` says why
    only its default is accepted (any other value is refused with a :class:`ConfigError`,
    INVALID_CONFIG on the wire). ``group``, ``order_in_group``, ``width``, ``display_name``,
    ``dependents`` and ``recommended_values`` are Kafka Connect's UI hints.
    """

    name: str
    type: ConfigType
    default: Any = NO_DEFAULT
    validator: ValidatorFn | None = None
    importance: Importance = Importance.MEDIUM
    doc: str = ""
    sensitive: bool = False
    synonyms: tuple[BrokerSynonym, ...] = ()
    dynamic: bool = False
    kafka_default: Any = field(default=_SAME, compare=False)
    inert: str = field(default="", compare=False)
    unsupported: str = field(default="", compare=False)
    group: str | None = field(default=None, compare=False)
    order_in_group: int = field(default=-1, compare=False)
    width: Width = field(default=Width.NONE, compare=False)
    display_name: str | None = field(default=None, compare=False)
    dependents: tuple[str, ...] = field(default=(), compare=False)
    recommended_values: tuple[Any, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.type is ConfigType.PASSWORD and not self.sensitive:
            object.__setattr__(self, "sensitive", True)
        if self.inert and self.unsupported:
            raise AssertionError(f"{self.name} cannot be both inert and unsupported")

    @property
    def required(self) -> bool:
        """True when the setting has no default and must be given."""
        return self.default is NO_DEFAULT

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
        return str(self.validator) if isinstance(self.validator, Validator) else ""

    def parse(self, value: Any) -> Any:
        """Parse a raw string (or typed value) and validate it; raises :class:`ConfigError`."""
        typed = parse_type(self.name, self.type, value)
        if typed is not None and self.validator is not None:
            self.validator(self.name, typed)
        return typed


def key_table(keys: Iterable[ConfigKey]) -> dict[str, ConfigKey]:
    """Keys by name; raises AssertionError for a duplicate name or a default that breaks its
    own rules."""
    out: dict[str, ConfigKey] = {}
    for d in keys:
        if d.name in out:
            raise AssertionError(f"duplicate config definition {d.name}")
        if d.default is not None and d.default is not NO_DEFAULT:
            d.parse(d.default)
        out[d.name] = d
    return out


# --------------------------------------------------------------------------------------------
# ConfigDef: an ordered set of keys
# --------------------------------------------------------------------------------------------


@dataclass
class ConfigValue:
    """The validation outcome of one setting (Kafka's ``ConfigValue``)."""

    name: str
    value: Any = None
    recommended_values: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    visible: bool = True


def _missing(name: str) -> str:
    return f'Missing required configuration "{name}" which has no default value.'


class ConfigDef:
    """An ordered set of :class:`ConfigKey` with parsing and validation (Kafka's ``ConfigDef``).

    A service declares its settings once::

        CONFIG = (ConfigDef()
                  .define("file", ConfigType.STRING, None, importance=Importance.HIGH,
                          documentation="Source filename; standard input when unset.")
                  .define("batch.size", ConfigType.INT, 2000, validator=Range.at_least(1),
                          importance=Importance.LOW, documentation="Records per poll."))
    """

    def __init__(self, keys: Iterable[ConfigKey] = ()) -> None:
        self._keys: dict[str, ConfigKey] = {}
        for k in keys:
            self._keys[k.name] = k

    def define(
        self,
        name: str,
        type: ConfigType,
        default: Any = NO_DEFAULT,
        *,
        validator: ValidatorFn | None = None,
        importance: Importance = Importance.MEDIUM,
        documentation: str = "",
        group: str | None = None,
        order_in_group: int = -1,
        width: Width = Width.NONE,
        display_name: str | None = None,
        dependents: Sequence[str] = (),
        recommended_values: Sequence[Any] = (),
        sensitive: bool = False,
    ) -> ConfigDef:
        """Declare a setting (``default=NO_DEFAULT`` makes it required); returns self for chaining."""
        if name in self._keys:
            raise ConfigError(f"Configuration {name} is defined twice.")
        self._keys[name] = ConfigKey(
            name,
            type,
            default,
            validator,
            importance,
            documentation,
            sensitive=sensitive,
            group=group,
            order_in_group=order_in_group,
            width=width,
            display_name=display_name or name,
            dependents=tuple(dependents),
            recommended_values=tuple(recommended_values),
        )
        return self

    def merged(self, other: ConfigDef) -> ConfigDef:
        """A new definition with this one's keys then ``other``'s (other wins on a clash)."""
        out = ConfigDef(self._keys.values())
        for k in other.keys():
            out._keys[k.name] = k
        return out

    def keys(self) -> list[ConfigKey]:
        return list(self._keys.values())

    def names(self) -> list[str]:
        return list(self._keys)

    def get(self, name: str) -> ConfigKey | None:
        return self._keys.get(name)

    def groups(self) -> list[str]:
        out: list[str] = []
        for k in self._keys.values():
            if k.group is not None and k.group not in out:
                out.append(k.group)
        return out

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Typed values (:func:`parse_value`) for every declared key, defaults filled in;
        undeclared keys are kept as given. Raises :class:`ConfigError` on the first missing or
        invalid setting."""
        out: dict[str, Any] = {k: v for k, v in props.items() if k not in self._keys}
        for key in self._keys.values():
            if key.name in props:
                value = parse_value(key, props[key.name])
            elif key.required:
                raise ConfigError(_missing(key.name), name=key.name, reason="missing")
            else:
                value = parse_value(key, key.default) if isinstance(key.default, str) else key.default
            if key.validator is not None:
                key.validator(key.name, value)
            out[key.name] = value
        return out

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        """One :class:`ConfigValue` per declared key, in declaration order, with every error found."""
        values: list[ConfigValue] = []
        for key in self._keys.values():
            cv = ConfigValue(key.name, props.get(key.name), list(key.recommended_values))
            values.append(cv)
            if key.name not in props or props[key.name] is None:
                if key.required:
                    cv.errors.append(_missing(key.name))
                    continue
                raw = key.default
                cv.value = None if raw is None else _as_text(raw)
            else:
                raw = props[key.name]
                cv.value = _as_text(raw)
            try:
                parsed = raw if isinstance(raw, list | None) else parse_value(key, raw)
                if key.validator is not None:
                    key.validator(key.name, parsed)
            except ConfigError as e:
                cv.errors.append(str(e))
        return values
