"""Validators of configuration values (Kafka's ``ConfigDef.Validator`` and its implementations).

A validator sees a value already parsed to its :class:`~zurau.config.types.ConfigType`'s Python
type and raises :class:`~zurau.config.types.ConfigError` (Kafka's wording) when it breaks the
rule; ``str()`` documents the valid values, as Kafka's documentation tables show them.
Invariants: ``None`` (no value) always passes; a validator is also callable as
``validator(name, value)``, so a plain function with that signature serves as a validator too.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from zurau.config.types import ConfigError

__all__ = [
    "AnyOf",
    "HttpListener",
    "NonEmptyList",
    "NonEmptyString",
    "Range",
    "ThrottledReplicas",
    "ValidList",
    "ValidString",
    "Validator",
    "non_empty_string",
    "parse_http_listener",
    "valid_string",
]


class Validator(ABC):
    """Base class: ``validate`` raises :class:`ConfigError`; ``str()`` documents valid values."""

    @abstractmethod
    def validate(self, name: str, value: Any) -> None: ...

    def __call__(self, name: str, value: Any) -> None:
        self.validate(name, value)

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
    def between(cls, minimum: float | None, maximum: float | None) -> Range:
        """Kafka ``Range.between``."""
        return cls(min=minimum, max=maximum)

    def validate(self, name: str, value: Any) -> None:
        if value is None or value in self.extra:
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
            ok = str(value).lower() in (o.lower() for o in self.options)
        else:
            ok = value in self.options
        if not ok:
            raise ConfigError.invalid(name, value, f"String must be one of: {', '.join(self.options)}")

    def __str__(self) -> str:
        return "[" + ", ".join(self.options) + "]"


def valid_string(*allowed: str, case_sensitive: bool = False) -> ValidString:
    """Kafka Connect's spelling: the value must be one of ``allowed``, compared case-insensitively
    unless told otherwise."""
    return ValidString(tuple(allowed), case_insensitive=not case_sensitive)


@dataclass(frozen=True)
class ValidList(Validator):
    """Every list element must be one of ``options`` (Kafka ``ValidList.in``)."""

    options: tuple[str, ...]
    allow_empty: bool = True

    def validate(self, name: str, value: Any) -> None:
        if value is None:
            return
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
class NonEmptyString(Validator):
    """A string that is not blank (Kafka ``NonEmptyString``)."""

    def validate(self, name: str, value: Any) -> None:
        if value is not None and str(value).strip() == "":
            raise ConfigError.invalid(name, value, "String may not be empty")

    def __str__(self) -> str:
        return "non-empty string"


#: Kafka Connect's spelling of :class:`NonEmptyString`.
non_empty_string = NonEmptyString()


@dataclass(frozen=True)
class ThrottledReplicas(Validator):
    """``*`` or ``partitionId:brokerId,...`` (Kafka ``ThrottledReplicaListValidator``)."""

    _RE = re.compile(r"\d+:\d+\Z")

    def validate(self, name: str, value: Any) -> None:
        if value is None or list(value) == ["*"]:
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
        if value is None or not str(value).strip():
            return
        try:
            parse_http_listener(str(value))
        except ValueError:
            raise ConfigError.invalid(
                name, value, "must be http://host:port, e.g. http://127.0.0.1:9404"
            ) from None

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
