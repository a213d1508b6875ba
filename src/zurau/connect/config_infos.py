"""Kafka Connect's ``/config/validate`` answer (``ConfigInfos``, ``ConfigKeyInfo``,
``ConfigValueInfo``) and the connector-name rule.

The settings themselves are declared with the one config-definition machinery,
:mod:`zurau.config.config_def` (``ConfigDef``, ``ConfigKey``, ``ConfigValue``); this module only
renders them as Connect's REST API does. Invariant: a key's ``type`` and ``importance`` are shown
as Kafka's upper-case names (``INT``, ``HIGH``), a default as its string form (``None`` when the
setting is required or has no default).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from zurau.config.config_def import NO_DEFAULT, ConfigDef, ConfigKey, ConfigValue
from zurau.config.types import ConfigError

__all__ = ["config_infos", "config_key_info", "config_value_info", "valid_connector_name"]


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_as_text(v) for v in value)
    return str(value)


def config_key_info(key: ConfigKey) -> dict[str, Any]:
    """A key as Connect's ConfigKeyInfo JSON (the ``definition`` of a validate answer)."""
    default = None if key.default is NO_DEFAULT or key.default is None else _as_text(key.default)
    return {
        "name": key.name,
        "type": key.type.name,
        "required": key.required,
        "default_value": default,
        "importance": key.importance.name,
        "documentation": key.documentation,
        "group": key.group,
        "width": key.width.value,
        "display_name": key.display_name or key.name,
        "dependents": list(key.dependents),
        "order": key.order_in_group,
    }


def config_value_info(cv: ConfigValue) -> dict[str, Any]:
    """A validation outcome as Connect's ConfigValueInfo JSON."""
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
        raise ConfigError(f"Invalid value {value} for configuration {name}: connector name must be non-empty "
                          "and contain no control characters or slashes")
