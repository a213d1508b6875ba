"""Connector configuration definitions and validation (Kafka's ConfigDef, ConfigValue, ConfigInfos).

A connector declares its settings once::

    CONFIG = (ConfigDef()
              .define("file", ConfigType.STRING, None, importance=Importance.HIGH,
                      documentation="Source filename; standard input when unset.")
              .define("batch.size", ConfigType.INT, 2000, validator=Range.at_least(1),
                      importance=Importance.LOW, documentation="Records per poll."))

:meth:`ConfigDef.parse` turns the string map a user posted into typed values (raising
:class:`ConfigException` on the first problem); :meth:`ConfigDef.validate` checks every setting and
returns one :class:`ConfigValue` per key with its errors, which the REST layer renders as Connect's
``/config/validate`` answer (:func:`config_infos`). Values arrive as strings (Connect's config maps are
string to string); JSON numbers and booleans are accepted and read as their string forms.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ConfigException(ValueError):
    """A configuration value is missing or invalid; the message names the setting."""


class ConfigType(StrEnum):
    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(StrEnum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class Width(StrEnum):
    NONE = "NONE"
    SHORT = "SHORT"
    MEDIUM = "MEDIUM"
    LONG = "LONG"


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()
"""Marks a required setting: validation reports it missing when the user gives none."""

Validator = Callable[[str, Any], None]
"""Called with a setting's name and parsed value; raises :class:`ConfigException` when invalid."""


class Range:
    """Numeric bounds (inclusive)."""

    @staticmethod
    def at_least(low: float) -> Validator:
        return Range.between(low, None)

    @staticmethod
    def between(low: float | None, high: float | None) -> Validator:
        def check(name: str, value: Any) -> None:
            if value is None:
                return
            if low is not None and value < low:
                raise ConfigException(f"Invalid value {value} for configuration {name}: Value must be at least {low}")
            if high is not None and value > high:
                raise ConfigException(f"Invalid value {value} for configuration {name}: Value must be no more than {high}")
        return check


def valid_string(*allowed: str, case_sensitive: bool = False) -> Validator:
    """The value must be one of ``allowed`` (compared case-insensitively unless told otherwise)."""
    norm = (lambda s: s) if case_sensitive else str.lower
    wanted = {norm(a) for a in allowed}

    def check(name: str, value: Any) -> None:
        if value is not None and norm(str(value)) not in wanted:
            raise ConfigException(
                f"Invalid value {value} for configuration {name}: String must be one of: {', '.join(allowed)}")
    return check


def non_empty_string(name: str, value: Any) -> None:
    if value is not None and str(value).strip() == "":
        raise ConfigException(f"Invalid value {value} for configuration {name}: String may not be empty")


@dataclass
class ConfigKey:
    """One declared setting."""

    name: str
    type: ConfigType
    default: Any = NO_DEFAULT
    validator: Validator | None = None
    importance: Importance = Importance.MEDIUM
    documentation: str = ""
    group: str | None = None
    order_in_group: int = -1
    width: Width = Width.NONE
    display_name: str | None = None
    dependents: tuple[str, ...] = ()
    recommended_values: tuple[Any, ...] = ()

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT


@dataclass
class ConfigValue:
    """The validation outcome of one setting (Connect's ConfigValue)."""

    name: str
    value: Any = None
    recommended_values: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    visible: bool = True


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_as_text(v) for v in value)
    return str(value)


def parse_value(key: ConfigKey, raw: Any) -> Any:
    """Parse ``raw`` (usually a string) as ``key``'s type; raises :class:`ConfigException`."""
    if raw is None:
        return None
    text = _as_text(raw).strip() if key.type is not ConfigType.PASSWORD else _as_text(raw)
    t = key.type
    try:
        if t is ConfigType.BOOLEAN:
            if text.lower() in ("true", "false"):
                return text.lower() == "true"
            raise ConfigException(f"Invalid value {raw} for configuration {key.name}: Expected value to be either true or false")
        if t in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
            n = int(text)
            limit = {ConfigType.SHORT: 2**15, ConfigType.INT: 2**31, ConfigType.LONG: 2**63}[t]
            if not -limit <= n < limit:
                raise ValueError(text)
            return n
        if t is ConfigType.DOUBLE:
            return float(text)
        if t is ConfigType.LIST:
            return [] if text == "" else [item.strip() for item in text.split(",")]
        return text
    except ValueError as e:
        if isinstance(e, ConfigException):
            raise
        kind = {ConfigType.INT: "32-bit integer", ConfigType.SHORT: "16-bit integer",
                ConfigType.LONG: "64-bit integer", ConfigType.DOUBLE: "number"}.get(t, t.value.lower())
        raise ConfigException(f"Invalid value {raw} for configuration {key.name}: Not a {kind}") from None


class ConfigDef:
    """An ordered set of :class:`ConfigKey` with parsing and validation."""

    def __init__(self, keys: Iterable[ConfigKey] = ()) -> None:
        self._keys: dict[str, ConfigKey] = {}
        for k in keys:
            self._keys[k.name] = k

    def define(
        self, name: str, type: ConfigType, default: Any = NO_DEFAULT, *, validator: Validator | None = None,
        importance: Importance = Importance.MEDIUM, documentation: str = "", group: str | None = None,
        order_in_group: int = -1, width: Width = Width.NONE, display_name: str | None = None,
        dependents: Sequence[str] = (), recommended_values: Sequence[Any] = (),
    ) -> ConfigDef:
        """Declare a setting (``default=NO_DEFAULT`` makes it required); returns self for chaining."""
        if name in self._keys:
            raise ConfigException(f"Configuration {name} is defined twice.")
        self._keys[name] = ConfigKey(name, type, default, validator, importance, documentation, group,
                                     order_in_group, width, display_name or name, tuple(dependents),
                                     tuple(recommended_values))
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
        """Typed values for every declared key (defaults filled in); undeclared keys are kept as
        given. Raises :class:`ConfigException` on the first missing or invalid setting."""
        out: dict[str, Any] = {k: v for k, v in props.items() if k not in self._keys}
        for key in self._keys.values():
            if key.name in props:
                value = parse_value(key, props[key.name])
            elif key.required:
                raise ConfigException(f'Missing required configuration "{key.name}" which has no default value.')
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
                    cv.errors.append(f"Missing required configuration \"{key.name}\" which has no default value.")
                    continue
                raw = key.default
                cv.value = None if raw is None else _as_text(raw)
            else:
                raw = props[key.name]
                cv.value = _as_text(raw)
            try:
                parsed = parse_value(key, raw) if isinstance(raw, str) or not isinstance(raw, (list, type(None))) else raw
                if key.validator is not None:
                    key.validator(key.name, parsed)
            except ConfigException as e:
                cv.errors.append(str(e))
        return values


def config_key_info(key: ConfigKey) -> dict[str, Any]:
    """A key as Connect's ConfigKeyInfo JSON (the ``definition`` of a validate answer)."""
    default = None if key.default is NO_DEFAULT or key.default is None else _as_text(key.default)
    return {
        "name": key.name,
        "type": key.type.value,
        "required": key.required,
        "default_value": default,
        "importance": key.importance.value,
        "documentation": key.documentation,
        "group": key.group,
        "width": key.width.value,
        "display_name": key.display_name or key.name,
        "dependents": list(key.dependents),
        "order": key.order_in_group,
    }


def config_value_info(cv: ConfigValue) -> dict[str, Any]:
    return {"name": cv.name, "value": cv.value, "recommended_values": list(cv.recommended_values),
            "errors": list(cv.errors), "visible": cv.visible}


def config_infos(connector_class: str, definition: ConfigDef, values: Sequence[ConfigValue],
                 extra_groups: Sequence[str] = ()) -> dict[str, Any]:
    """Connect's ConfigInfos body: ``{"name", "error_count", "groups", "configs": [{definition, value}]}``."""
    by_name = {v.name: v for v in values}
    configs = []
    for key in definition.keys():
        cv = by_name.get(key.name, ConfigValue(key.name))
        configs.append({"definition": config_key_info(key), "value": config_value_info(cv)})
    groups = list(definition.groups())
    for g in extra_groups:
        if g not in groups:
            groups.append(g)
    return {
        "name": connector_class,
        "error_count": sum(len(v.errors) for v in values),
        "groups": groups,
        "configs": configs,
    }


_NAME_RE = re.compile(r"^[^\x00-\x1f/\\]*$")


def valid_connector_name(name: str, value: Any) -> None:
    """Connect refuses empty names and names with ISO control characters (REST path safety)."""
    if value is None:
        return
    text = str(value)
    if text.strip() == "" or not _NAME_RE.match(text):
        raise ConfigException(f"Invalid value {value} for configuration {name}: connector name must be non-empty "
                              "and contain no control characters or slashes")
