"""The controller's part of configs (Kafka's ``ConfigurationControlManager``): AlterConfigs and
IncrementalAlterConfigs as ``ConfigRecord``\\ s, and the checks every topic config passes.

TOPIC, GROUP (Kafka's group configs, :mod:`zurau.config.group_configs`), CLIENT_METRICS
(KIP-714 subscriptions, :mod:`zurau.config.client_metrics_configs`) and BROKER (dynamic
broker configs, :mod:`zurau.config.dynamic_broker_configs`) resources are altered here;
BROKER_LOGGER is the receiving broker's own business (its handler answers it, this module only
refuses it). A resource named twice in one request gets one INVALID_REQUEST "Duplicate
resource." result and is not altered.

A BROKER resource is named by a registered broker id (that broker's own overrides; any
registered broker, whichever broker forwarded the request) or ``""`` (the cluster-wide default,
Kafka's ``<default>``); another name is INVALID_REQUEST naming the ids expected. Its resulting
set of overrides is checked as the brokers will apply it (names that may change dynamically,
per-broker-only names at the default level, each value, then the whole effective config of this
controller's node with both levels) and written as ConfigRecords under the name (a broker id in
its canonical decimal form). APPEND/SUBTRACT work on LIST configs, starting from the effective
value when there is no override at that level.

A GROUP resource is named by its group id (any non-empty name; the group need not exist, as in
Kafka). Its resulting set of overrides is validated as a whole against the broker's group
defaults and bounds (INVALID_CONFIG with Kafka's message); APPEND/SUBTRACT are INVALID_CONFIG
"Can't APPEND to key ... because its type is not LIST." (no group config is a list), as Kafka's
``ConfigurationControlManager`` answers. Deleting an override returns the config to its default.

A CLIENT_METRICS resource is named by its subscription (empty: INVALID_REQUEST "Subscription
name can't be empty"); its resulting set is validated as Kafka's ``ClientMetricsConfigs.validate``
(unknown config or interval out of range: INVALID_REQUEST; bad value or match pattern:
INVALID_CONFIG). APPEND/SUBTRACT work on ``metrics`` and ``match`` (LIST configs).

Invariants: an accepted topic config can always be applied (:func:`check_topic_configs` checks it
as the live log would); a change writes one ConfigRecord per override that changes (removals,
with a null value, first, then sets, each in name order) and nothing for an unchanged value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict, TypeVar

from zurau.config import (
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigError,
    ConfigKey,
    ConfigType,
    check_remote_storage,
    format_value,
    resolve_topic_config,
)
from zurau.config.client_metrics_configs import CLIENT_METRICS_CONFIGS, validate_client_metrics_configs
from zurau.config.definitions import BROKER_CONFIGS
from zurau.config.dynamic_broker_configs import DynamicConfigError, check_dynamic_update, effective_config
from zurau.config.group_configs import validate_group_configs
from zurau.metadata.controller.partition_change import ELR_FEATURE, elr_enabled
from zurau.metadata.controller.result import ControllerResult, PendingRecords, duplicated, error_of
from zurau.metadata.dynamic_broker_config import EffectiveBrokerConfig
from zurau.metadata.image import DEFAULT_BROKER_RESOURCE, MetadataImage, TopicImage
from zurau.metadata.records import (
    BROKER_RESOURCE,
    CLIENT_METRICS_RESOURCE,
    GROUP_RESOURCE,
    TOPIC_RESOURCE,
    ClearElrRecord,
    ConfigRecord,
    FeatureLevelRecord,
    MetadataRecord,
)
from zurau.metadata.topic_names import validate_topic_name
from zurau.protocol.errors import (
    InvalidConfigError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from zurau.protocol.messages import (
    AlterConfigsRequestResources,
    AlterConfigsResponseResponses,
    IncrementalAlterConfigsRequestResources,
    IncrementalAlterConfigsRequestResourcesConfigs,
)
from zurau.storage.log_config import LogConfig

# Kafka's ConfigResource.Type ids.
RESOURCE_TOPIC = TOPIC_RESOURCE
RESOURCE_BROKER = BROKER_RESOURCE
RESOURCE_BROKER_LOGGER = 8
RESOURCE_GROUP = GROUP_RESOURCE
RESOURCE_CLIENT_METRICS = CLIENT_METRICS_RESOURCE
KNOWN_RESOURCE_TYPES = frozenset(
    {RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP}
)

# IncrementalAlterConfigs operations.
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

_LOG_CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(LogConfig))


class ConfigResource(TypedDict, total=False):
    """What the resources of AlterConfigs and IncrementalAlterConfigs have in common (a TypedDict
    is structural: each request's own resource type is one of these)."""

    resource_type: int
    resource_name: str


Resource = TypeVar("Resource", bound=ConfigResource)

ConfigResult = AlterConfigsResponseResponses
"""A configs request's result for one resource. IncrementalAlterConfigs' own
(``IncrementalAlterConfigsResponseResponses``) has the same fields, so each is the other."""


_DISABLE_REMOTE_WITHOUT_DELETE = (
    "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote "
    "data and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If you "
    "want to disable remote storage and delete all remote data, please set "
    "`remote.storage.enable=false,remote.log.delete.on.disable=true`."
)


def check_topic_configs(
    broker_config: BrokerConfig, configs: dict[str, Any], old: dict[str, Any] | None = None
) -> None:
    """Validate a topic's full set of overrides as the live log would apply them.

    Raises InvalidConfigError (INVALID_CONFIG) with Kafka's message: unknown names, null or
    malformed values, cross-field rules against the broker's topic defaults, the tiered storage
    rules (:func:`zurau.config.check_remote_storage`, against this controller's
    ``remote.log.storage.system.enable``) and the local log's own limits (``LogConfig``), so a
    config that is accepted can always be applied. ``old`` (AlterConfigs): the topic's current
    overrides; turning ``remote.storage.enable`` from true to false then needs
    ``remote.log.delete.on.disable=true`` (KIP-950, Kafka's
    ``validateTurningOffRemoteStorageWithDelete``).
    """
    try:
        typed = resolve_topic_config(broker_config, configs)
        full = {n: typed[d.snake_name] for n, d in TOPIC_CONFIGS.items()}
        full["cleanup.policy"] = tuple(p for p in str(full["cleanup.policy"]).split(",") if p)
        check_remote_storage(full, system_enabled=broker_config.remote_log_storage_system_enable)
        if old is not None and not full["remote.storage.enable"]:
            was = resolve_topic_config(broker_config, old)["remote_storage_enable"]
            if was and not full["remote.log.delete.on.disable"]:
                raise ConfigError(
                    _DISABLE_REMOTE_WITHOUT_DELETE,
                    name="remote.storage.enable",
                    value=False,
                    reason="remote.log.delete.on.disable=false",
                )
    except ConfigError as e:
        raise InvalidConfigError(str(e)) from None
    LogConfig(**{k: typed[k] for k in _LOG_CONFIG_FIELDS if k in typed})


def check_resource_type(rtype: int) -> None:
    """UNSUPPORTED_VERSION for a resource type Kafka does not know, INVALID_REQUEST for one
    configs requests do not take."""
    if rtype not in KNOWN_RESOURCE_TYPES:
        raise UnsupportedVersionError(f"Unknown resource type {rtype}.")
    if rtype not in KNOWN_RESOURCE_TYPES:
        raise InvalidRequestError(f"Unexpected resource type {rtype}.")


class ConfigurationControlManager:
    def __init__(self, config: BrokerConfig, brokers: Callable[[], Sequence[int]]) -> None:
        """``config``: this controller node's static config; ``brokers()``: the broker ids when the
        image has no registrations (a single node)."""
        self.config = config
        self.brokers = brokers
        self.effective = EffectiveBrokerConfig(config)

    def alter_configs(
        self, image: MetadataImage, resources: list[AlterConfigsRequestResources], validate_only: bool
    ) -> ControllerResult[list[ConfigResult]]:
        """AlterConfigs (legacy, whole-set replacement) for TOPIC, GROUP and BROKER resources."""

        def alter(pending: PendingRecords, r: AlterConfigsRequestResources) -> None:
            rtype, name = r["resource_type"], r["resource_name"]
            check_resource_type(rtype)
            if rtype == RESOURCE_BROKER_LOGGER:
                raise InvalidRequestError(
                    "AlterConfigs does not support the resource type BROKER_LOGGER; use IncrementalAlterConfigs."
                )
            new = {c["name"]: c["value"] for c in r["configs"]}
            if rtype == RESOURCE_BROKER:
                self._set_broker_configs(pending, self._broker_resource(pending.image, name), new, validate_only)
                return
            if rtype == RESOURCE_GROUP:
                self._set_group_configs(pending, _group_name(name), new, validate_only)
                return
            if rtype == RESOURCE_CLIENT_METRICS:
                self._set_client_metrics(pending, name, new, validate_only)
                return
            t = self._topic_for_alter(pending.image, name)
            self._set_topic_configs(pending, t, new, validate_only)

        return _per_resource(image, resources, alter)

    def incremental_alter_configs(
        self,
        image: MetadataImage,
        resources: list[IncrementalAlterConfigsRequestResources],
        validate_only: bool,
    ) -> ControllerResult[list[ConfigResult]]:
        """IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT) for TOPIC, GROUP and BROKER resources."""

        def alter(pending: PendingRecords, r: IncrementalAlterConfigsRequestResources) -> None:
            rtype, name, configs = r["resource_type"], r["resource_name"], r["configs"]
            check_resource_type(rtype)
            preprocess_incremental(configs)
            if rtype == RESOURCE_BROKER_LOGGER:
                raise InvalidRequestError("BROKER_LOGGER resources are altered by the broker that owns them.")
            if rtype == RESOURCE_BROKER:
                resource = self._broker_resource(pending.image, name)
                current = dict(pending.image.broker_config(resource))
                new_broker = self._incremental_broker(pending.image, resource, current, configs)
                self._set_broker_configs(pending, resource, new_broker, validate_only)
                return
            if rtype == RESOURCE_GROUP:
                group_id = _group_name(name)
                new = _incremental_group(dict(pending.image.group_config(group_id)), configs)
                self._set_group_configs(pending, group_id, new, validate_only)
                return
            if rtype == RESOURCE_CLIENT_METRICS:
                current_sub = dict(pending.image.client_metrics.get(name, {}))
                new_sub = apply_incremental(
                    current_sub,
                    configs,
                    CLIENT_METRICS_CONFIGS,
                    lambda d: format_value(d, d.default),
                    "Unknown client metrics configuration",
                )
                self._set_client_metrics(pending, name, new_sub, validate_only)
                return
            t = self._topic_for_alter(pending.image, name)
            new_topic = self._incremental(pending.image, dict(t.configs), configs)
            self._set_topic_configs(pending, t, new_topic, validate_only)

        return _per_resource(image, resources, alter)

    @staticmethod
    def _topic_for_alter(image: MetadataImage, name: str) -> TopicImage:
        if not name:
            raise InvalidRequestError("Default topic resources are not allowed.")
        validate_topic_name(name)
        t = image.get(name)
        if t is None:
            raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
        return t

    def _broker_resource(self, image: MetadataImage, name: str) -> str:
        """The resource name a BROKER resource is stored under: ``""`` for the cluster default,
        else a registered broker id (INVALID_REQUEST naming the ids expected otherwise)."""
        if not name:
            return DEFAULT_BROKER_RESOURCE
        registered = sorted(image.brokers) if image.brokers else sorted(self.brokers())
        try:
            broker_id = int(name)
        except ValueError:
            broker_id = None
        if broker_id is None or broker_id not in registered:
            expected = ", ".join(str(b) for b in registered)
            raise InvalidRequestError(
                f"Unexpected broker id, expected one of the registered brokers ({expected}) or empty "
                f"string, but received {name}"
            )
        return str(broker_id)

    def _set_broker_configs(
        self, pending: PendingRecords, resource: str, new: dict[str, str | None], validate_only: bool
    ) -> None:
        """Check a broker resource's whole new set of overrides and write what changes."""
        wanted = {k: v for k, v in new.items() if v is not None}
        per_broker = resource != DEFAULT_BROKER_RESOURCE
        try:
            check_dynamic_update(self.config, wanted, per_broker)
        except DynamicConfigError as e:
            if e.invalid_request:
                raise InvalidRequestError(str(e)) from None
            raise InvalidConfigError(str(e)) from None
        image = pending.image
        elr_error = _elr_config_error(image, resource, wanted)
        if elr_error is not None:
            raise InvalidConfigError(elr_error)
        if per_broker:
            broker_layer, default_layer = wanted, dict(image.broker_config(DEFAULT_BROKER_RESOURCE))
        else:
            broker_layer, default_layer = {}, wanted
        try:  # the effective config this node would have (cross-field rules, topic defaults)
            check_topic_configs(effective_config(self.config, broker_layer, default_layer), {})
        except ConfigError as e:
            raise InvalidRequestError(str(e)) from None
        if validate_only:
            return
        old = dict(image.broker_config(resource))
        records: list[MetadataRecord] = [
            ConfigRecord(BROKER_RESOURCE, resource, k, None) for k in sorted(old) if k not in wanted
        ]
        records += [
            ConfigRecord(BROKER_RESOURCE, resource, k, v) for k, v in sorted(wanted.items()) if old.get(k) != v
        ]
        pending.add(records + _clear_elr_after(image, records, ""))

    def _incremental_broker(
        self,
        image: MetadataImage,
        resource: str,
        current: dict[str, str],
        configs: list[IncrementalAlterConfigsRequestResourcesConfigs],
    ) -> dict[str, str | None]:
        """A broker resource's overrides after SET, DELETE, APPEND and SUBTRACT (the last two
        for LIST configs, from the override or else the value in effect: this broker's for a
        broker's own resource, the static config's for the cluster default)."""
        effective = self.effective.of(image) if resource != DEFAULT_BROKER_RESOURCE else self.config

        def base(d: ConfigKey) -> str | None:
            return format_value(d, effective.get(d.name))

        return apply_incremental(current, configs, BROKER_CONFIGS, base, "Unknown broker config")

    def _set_topic_configs(
        self, pending: PendingRecords, t: TopicImage, new: dict[str, Any], validate_only: bool
    ) -> None:
        check_topic_configs(self.effective.of(pending.image), new, dict(t.configs))
        if validate_only:
            return
        old = dict(t.configs)
        wanted = {k: str(v) for k, v in new.items() if v is not None}
        records: list[MetadataRecord] = [
            ConfigRecord(TOPIC_RESOURCE, t.name, k, None) for k in sorted(old) if k not in wanted
        ]
        records += [
            ConfigRecord(TOPIC_RESOURCE, t.name, k, v) for k, v in sorted(wanted.items()) if old.get(k) != v
        ]
        pending.add(records + _clear_elr_after(pending.image, records, t.name))

    def _set_group_configs(
        self, pending: PendingRecords, group_id: str, new: dict[str, str | None], validate_only: bool
    ) -> None:
        """Validate a group's whole new set of overrides and write what changes."""
        try:
            validate_group_configs(self.config, new)
        except ConfigError as e:
            raise InvalidConfigError(str(e)) from None
        if validate_only:
            return
        old = dict(pending.image.group_config(group_id))
        wanted = {k: v for k, v in new.items() if v is not None}
        records: list[MetadataRecord] = [
            ConfigRecord(GROUP_RESOURCE, group_id, k, None) for k in sorted(old) if k not in wanted
        ]
        records += [
            ConfigRecord(GROUP_RESOURCE, group_id, k, v) for k, v in sorted(wanted.items()) if old.get(k) != v
        ]
        pending.add(records)

    @staticmethod
    def _set_client_metrics(
        pending: PendingRecords, name: str, new: dict[str, str | None], validate_only: bool
    ) -> None:
        """Validate a client metrics subscription's whole new set of configs and write what
        changes (deleting its last config removes the subscription)."""
        validate_client_metrics_configs(name, new)
        if validate_only:
            return
        old = dict(pending.image.client_metrics.get(name, {}))
        wanted = {k: v for k, v in new.items() if v is not None}
        records: list[MetadataRecord] = [
            ConfigRecord(CLIENT_METRICS_RESOURCE, name, k, None) for k in sorted(old) if k not in wanted
        ]
        records += [
            ConfigRecord(CLIENT_METRICS_RESOURCE, name, k, v)
            for k, v in sorted(wanted.items())
            if old.get(k) != v
        ]
        pending.add(records)

    def _incremental(
        self,
        image: MetadataImage,
        current: dict[str, str],
        configs: list[IncrementalAlterConfigsRequestResourcesConfigs],
    ) -> dict[str, str | None]:
        """A topic's overrides after SET, DELETE, APPEND and SUBTRACT (the last two for LIST
        configs, from the override or else the cluster's topic default)."""
        defaults = self.effective.of(image).topic_defaults()

        def base(d: ConfigKey) -> str | None:
            return format_value(d, defaults.get(d.name, d.default))

        return apply_incremental(current, configs, TOPIC_CONFIGS, base, "Unknown topic config name")


def apply_incremental(
    current: Mapping[str, str],
    configs: list[IncrementalAlterConfigsRequestResourcesConfigs],
    definitions: Mapping[str, ConfigKey],
    base: Callable[[ConfigKey], str | None],
    unknown: str,
) -> dict[str, str | None]:
    """A resource's overrides ``current`` after the SET, DELETE, APPEND and SUBTRACT of
    ``configs``, in order. APPEND/SUBTRACT take LIST configs of ``definitions`` only (an unknown
    name is INVALID_CONFIG "``unknown``: name", another type INVALID_CONFIG "Can't APPEND to key
    ..."); they start from the override if there is one, else from ``base(definition)`` (the
    value in effect at that level). APPEND adds the items not present yet, SUBTRACT removes
    every occurrence of its items; the order of the others is kept."""
    new: dict[str, str | None] = dict(current)
    for c in configs:
        name, op, value = c["name"], c["config_operation"], c["value"]
        if op == SET:
            new[name] = value
        elif op == DELETE:
            new.pop(name, None)
        else:
            d = definitions.get(name)
            if d is None:
                raise InvalidConfigError(f"{unknown}: {name}")
            if d.type is not ConfigType.LIST:
                raise InvalidConfigError(f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.")
            items = _list_items(new[name] if new.get(name) is not None else base(d))
            if op == APPEND:
                items += [v for v in _list_items(value) if v not in items]
            else:
                drop = set(_list_items(value))
                items = [v for v in items if v not in drop]
            new[name] = ",".join(items)
    return new


MIN_ISR = "min.insync.replicas"


def _clear_elr_after(image: MetadataImage, records: list[MetadataRecord], topic: str) -> list[MetadataRecord]:
    """A ``ClearElrRecord`` for ``topic`` ("": every topic, for a broker resource) when ELR is on
    and ``records`` change ``min.insync.replicas`` (Kafka's ``createClearElrRecordsAsNeeded``):
    the ELRs were chosen against the old value, so none may be trusted under the new one."""
    if elr_enabled(image) and any(isinstance(r, ConfigRecord) and r.name == MIN_ISR for r in records):
        return [ClearElrRecord(topic)]
    return []


def elr_transition_records(
    image: MetadataImage, feature_records: Sequence[MetadataRecord], static_min_isr: int
) -> list[MetadataRecord]:
    """What an UpdateFeatures that turns eligible leader replicas on or off writes besides its
    ``FeatureLevelRecord``s (Kafka's KAFKA-16540 invariants; KIP-966).

    Turned on: every broker-level ``min.insync.replicas`` override is removed, and a cluster-level
    one is written (``static_min_isr``, this controller's own config) unless there is one, so that
    every broker judges "under min ISR" alike. Turned off: every partition's ELR and last known
    ELR are cleared (``ClearElrRecord("")``): they are no longer kept up to date, and a later
    upgrade must not elect from stale ones."""
    before = image.features.get(ELR_FEATURE, 0) >= 1
    after = before
    for r in feature_records:
        if isinstance(r, FeatureLevelRecord) and r.name == ELR_FEATURE:
            after = r.feature_level >= 1
    if before == after:
        return []
    if not after:
        return [ClearElrRecord("")]
    records: list[MetadataRecord] = [
        ConfigRecord(BROKER_RESOURCE, name, MIN_ISR, None)
        for name, overrides in sorted(image.broker_configs.items())
        if name != DEFAULT_BROKER_RESOURCE and MIN_ISR in overrides
    ]
    if MIN_ISR not in image.broker_config(DEFAULT_BROKER_RESOURCE):
        records.append(ConfigRecord(BROKER_RESOURCE, DEFAULT_BROKER_RESOURCE, MIN_ISR, str(static_min_isr)))
    return records


def _elr_config_error(image: MetadataImage, resource: str, wanted: Mapping[str, str]) -> str | None:
    """Why a BROKER resource's new overrides break the ELR invariants, if ELR is on: no
    broker-level ``min.insync.replicas`` may be set or changed, the cluster-level one may not be
    removed (Kafka's messages, INVALID_CONFIG)."""
    if not elr_enabled(image):
        return None
    old = image.broker_config(resource)
    if resource != DEFAULT_BROKER_RESOURCE:
        if MIN_ISR in wanted and wanted[MIN_ISR] != old.get(MIN_ISR):
            return "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
    elif MIN_ISR in old and MIN_ISR not in wanted:
        return "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
    return None


def _group_name(name: str) -> str:
    """A GROUP resource names a group: any non-empty name (Kafka's ``validateGroupName``)."""
    if not name:
        raise InvalidRequestError("Default group resources are not allowed.")
    return name


def _incremental_group(
    current: dict[str, str], configs: list[IncrementalAlterConfigsRequestResourcesConfigs]
) -> dict[str, str | None]:
    """A group's overrides after SET and DELETE; APPEND/SUBTRACT fail (no group config is a list)."""
    new: dict[str, str | None] = dict(current)
    for c in configs:
        name, op = c["name"], c["config_operation"]
        if op == SET:
            new[name] = c["value"]
        elif op == DELETE:
            new.pop(name, None)
        else:
            raise InvalidConfigError(f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.")
    return new


def _per_resource(
    image: MetadataImage,
    resources: list[Resource],
    alter: Callable[[PendingRecords, Resource], None],
) -> ControllerResult[list[ConfigResult]]:
    pending = PendingRecords(image)

    def decide(r: Resource) -> ConfigResult:
        try:
            alter(pending, r)
            return config_result(r)
        except Exception as e:
            return config_result(r, *error_of(e))

    results = per_unique_resource(resources, decide)
    return ControllerResult(pending.records, [r for r in results if r is not None])


def config_result(resource: ConfigResource, code: int = 0, message: str | None = None) -> ConfigResult:
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": resource["resource_type"],
        "resource_name": resource["resource_name"],
    }


def per_unique_resource(
    resources: list[Resource], decide: Callable[[Resource], ConfigResult | None]
) -> list[ConfigResult | None]:
    """Results of a configs request in request order, as Kafka gives them: a resource named more
    than once gets one INVALID_REQUEST "Duplicate resource." result and nothing is done for it;
    every other resource gets ``decide(resource)`` (None: a slot the caller fills later)."""
    dups = duplicated([(r["resource_type"], r["resource_name"]) for r in resources])
    out: list[ConfigResult | None] = []
    reported: set[tuple[int, str]] = set()
    for r in resources:
        key = (r["resource_type"], r["resource_name"])
        if key in dups:
            if key not in reported:
                reported.add(key)
                out.append(config_result(r, InvalidRequestError.code, "Duplicate resource."))
            continue
        out.append(decide(r))
    return out


def preprocess_incremental(configs: list[IncrementalAlterConfigsRequestResourcesConfigs]) -> None:
    """IncrementalAlterConfigs checks shared by every resource type (Kafka's preprocess)."""
    dups = duplicated([c["name"] for c in configs])
    if dups:
        raise InvalidRequestError(f"Error due to duplicate config keys : {','.join(sorted(dups))}")
    nulls = [c["name"] for c in configs if c["config_operation"] != DELETE and c["value"] is None]
    if nulls:
        raise InvalidRequestError(f"Null value not supported for : {','.join(nulls)}")
    for c in configs:
        if c["config_operation"] not in OP_NAMES:
            raise InvalidRequestError(
                f"Unknown operation type {c['config_operation']} for config {c['name']}"
            )


def _list_items(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]
