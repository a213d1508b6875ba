"""The small value types every configuration shares: errors, types, importance, secrets.

Kafka's ``ConfigException``, ``ConfigDef.Type``, ``ConfigDef.Importance``, ``ConfigDef.Width``
and ``Password``. Standard library only, so that every layer (the broker, the client and the
edge services) can use them.

Invariants: a :class:`Password`'s ``repr``/``str`` never reveal the secret; a
:class:`ConfigError` message follows Kafka's ``Invalid value V for configuration N: rule``
whenever it is about one value, and shows ``[hidden]`` for a password.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "LONG_MAX",
    "LONG_MIN",
    "SHORT_MAX",
    "SHORT_MIN",
    "ConfigError",
    "ConfigException",
    "ConfigType",
    "Importance",
    "Password",
    "Width",
]

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


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
        shown = "[hidden]" if isinstance(value, Password) else display(value)
        return cls(
            f"Invalid value {shown} for configuration {name}: {reason}", name=name, value=value, reason=reason
        )


#: Kafka's name for :class:`ConfigError` (Kafka Connect's API uses it).
ConfigException = ConfigError


def display(value: Any) -> str:
    """A value as an error message shows it: lists comma-joined, booleans ``true``/``false``."""
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class ConfigType(Enum):
    """Kafka ``ConfigDef.Type``; ``code`` is the DescribeConfigs (v3+) ``config_type`` value and
    ``name`` the type Kafka Connect's REST API shows."""

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
    """Kafka ``ConfigDef.Importance`` (``name``: ``HIGH``, as Kafka Connect's REST API shows it)."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Width(Enum):
    """Kafka ``ConfigDef.Width``: how wide a UI should show a setting (Kafka Connect)."""

    NONE = "NONE"
    SHORT = "SHORT"
    MEDIUM = "MEDIUM"
    LONG = "LONG"


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
