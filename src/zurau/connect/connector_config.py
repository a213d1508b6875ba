"""Settings every connector has (Kafka's ConnectorConfig), validation, and building the runtime
pieces a connector config names: its converters and its transform chain.

Common settings: ``name``, ``connector.class``, ``tasks.max`` (default 1), ``key.converter`` /
``value.converter`` (default: the worker's, with their ``key.converter.*`` settings),
``header.converter`` (accepted, headers are passed through), ``transforms``, ``predicates``,
the error handling settings (``errors.retry.timeout``, ``errors.retry.delay.max.ms``,
``errors.tolerance``, ``errors.log.enable``, ``errors.log.include.messages``; see
:mod:`zurau.connect.errors`), and for sinks ``topics`` / ``topics.regex`` (exactly one of them)
and the dead letter queue (``errors.deadletterqueue.topic.name``, ``.topic.replication.factor``,
``.context.headers.enable``; the DLQ topic may be neither among ``topics`` nor matched by
``topics.regex``). As in Kafka, the dead letter queue settings are sink settings only: a source
connector's config does not define them, and they have no effect there.

Transforms: ``transforms=a,b`` with ``transforms.a.type`` (a class name, see
:mod:`zurau.connect.plugins`), ``transforms.a.predicate`` naming one of ``predicates``, and
``transforms.a.negate``; the transform's own settings are ``transforms.a.<setting>``. Predicates
likewise: ``predicates=p`` with ``predicates.p.type`` and ``predicates.p.<setting>``.

:func:`validate_connector_config` returns Connect's ConfigInfos body (the ``/config/validate``
answer): the common settings, the per-transform and per-predicate settings, then the connector's
own, each with its errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zurau.config import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConfigValue,
    Importance,
    Range,
    ValidString,
    Width,
    valid_string,
)
from zurau.connect.api import Connector, Converter, Predicate, SinkConnector, SourceConnector, Transformation
from zurau.connect.config_infos import config_infos, valid_connector_name
from zurau.connect.plugins import (
    KIND_CONNECTOR,
    KIND_CONVERTER,
    KIND_PREDICATE,
    KIND_TRANSFORM,
    PluginNotFound,
    PluginRegistry,
)
from zurau.connect.records import ConnectRecord
from zurau.connect.topic_creation import TopicCreationError, topic_creation_groups

COMMON_GROUP, TRANSFORMS_GROUP, PREDICATES_GROUP, ERRORS_GROUP = "Common", "Transforms", "Predicates", "Error Handling"


def _common_def() -> ConfigDef:
    d = ConfigDef()
    d.define("name", ConfigType.STRING, validator=valid_connector_name, importance=Importance.HIGH,
             documentation="Globally unique name to use for this connector.", group=COMMON_GROUP,
             order_in_group=1, width=Width.MEDIUM, display_name="Connector name")
    d.define("connector.class", ConfigType.STRING, importance=Importance.HIGH, group=COMMON_GROUP,
             order_in_group=2, width=Width.LONG, display_name="Connector class",
             documentation="Name or alias of the class for this connector.")
    d.define("tasks.max", ConfigType.INT, 1, validator=Range.at_least(1), importance=Importance.HIGH,
             group=COMMON_GROUP, order_in_group=3, width=Width.SHORT, display_name="Tasks max",
             documentation="Maximum number of tasks to use for this connector.")
    d.define("key.converter", ConfigType.CLASS, None, importance=Importance.LOW, group=COMMON_GROUP,
             order_in_group=4, width=Width.SHORT, display_name="Key converter class",
             documentation="Converter class for record keys; the worker's when unset.")
    d.define("value.converter", ConfigType.CLASS, None, importance=Importance.LOW, group=COMMON_GROUP,
             order_in_group=5, width=Width.SHORT, display_name="Value converter class",
             documentation="Converter class for record values; the worker's when unset.")
    d.define("header.converter", ConfigType.CLASS, None, importance=Importance.LOW, group=COMMON_GROUP,
             order_in_group=6, width=Width.SHORT, display_name="Header converter class",
             documentation="Accepted for compatibility; header values pass through as bytes.")
    d.define("transforms", ConfigType.LIST, "", importance=Importance.LOW, group=TRANSFORMS_GROUP,
             order_in_group=7, width=Width.LONG, display_name="Transforms",
             documentation="Aliases for the transformations to be applied to records.")
    d.define("predicates", ConfigType.LIST, "", importance=Importance.LOW, group=PREDICATES_GROUP,
             order_in_group=8, width=Width.LONG, display_name="Predicates",
             documentation="Aliases for the predicates used by transformations.")
    d.define("errors.retry.timeout", ConfigType.LONG, 0, importance=Importance.MEDIUM, group=ERRORS_GROUP,
             order_in_group=1, width=Width.MEDIUM, display_name="Retry Timeout for Errors",
             documentation="The maximum duration in milliseconds that a failed operation will be reattempted. "
                           "The default is 0, which means no retries will be attempted. Use -1 for infinite retries.")
    d.define("errors.retry.delay.max.ms", ConfigType.LONG, 60000, importance=Importance.MEDIUM, group=ERRORS_GROUP,
             order_in_group=2, width=Width.MEDIUM, display_name="Maximum Delay Between Retries for Errors",
             documentation="The maximum duration in milliseconds between consecutive retry attempts. Jitter will "
                           "be added to the delay once this limit is reached to prevent thundering herd issues.")
    d.define("errors.tolerance", ConfigType.STRING, "none", validator=valid_string("none", "all"),
             importance=Importance.MEDIUM, group=ERRORS_GROUP, order_in_group=3, width=Width.SHORT,
             display_name="Error Tolerance",
             documentation="Behavior for tolerating errors during connector operation. 'none' is the default value "
                           "and signals that any error will result in an immediate connector task failure; 'all' "
                           "changes the behavior to skip over problematic records.")
    d.define("errors.log.enable", ConfigType.BOOLEAN, False, importance=Importance.MEDIUM, group=ERRORS_GROUP,
             order_in_group=4, width=Width.SHORT, display_name="Log Errors",
             documentation="If true, write each error and the details of the failed operation and problematic "
                           "record to the Connect application log. This is 'false' by default, so that only errors "
                           "that are not tolerated are reported.")
    d.define("errors.log.include.messages", ConfigType.BOOLEAN, False, importance=Importance.MEDIUM,
             group=ERRORS_GROUP, order_in_group=5, width=Width.SHORT, display_name="Log Error Details",
             documentation="Whether to include in the log the Connect record that resulted in a failure. For sink "
                           "records, the topic, partition, offset, and timestamp will be logged. For source records, "
                           "the key and value (and their schemas), all headers, and the timestamp, Kafka topic, Kafka "
                           "partition, source partition, and source offset will be logged. This is 'false' by "
                           "default, which will prevent record keys, values, and headers from being written to log "
                           "files.")
    return d


def _sink_def() -> ConfigDef:
    return (ConfigDef()
            .define("topics", ConfigType.LIST, "", importance=Importance.HIGH, group=COMMON_GROUP, order_in_group=4,
                    width=Width.LONG, display_name="Topics", documentation="List of topics to consume.")
            .define("topics.regex", ConfigType.STRING, "", importance=Importance.HIGH, group=COMMON_GROUP,
                    order_in_group=4, width=Width.LONG, display_name="Topics regex",
                    documentation="Regular expression giving topics to consume.")
            .define("errors.deadletterqueue.topic.name", ConfigType.STRING, "", importance=Importance.MEDIUM,
                    group=ERRORS_GROUP, order_in_group=6, width=Width.MEDIUM,
                    display_name="Dead Letter Queue Topic Name",
                    documentation="The name of the topic to be used as the dead letter queue (DLQ) for messages that "
                                  "result in an error when processed by this sink connector, or its transformations "
                                  "or converters. The topic name is blank by default, which means that no messages "
                                  "are to be recorded in the DLQ.")
            .define("errors.deadletterqueue.topic.replication.factor", ConfigType.SHORT, 3,
                    importance=Importance.MEDIUM, group=ERRORS_GROUP, order_in_group=7, width=Width.MEDIUM,
                    display_name="Dead Letter Queue Topic Replication Factor",
                    documentation="Replication factor used to create the dead letter queue topic when it doesn't "
                                  "already exist.")
            .define("errors.deadletterqueue.context.headers.enable", ConfigType.BOOLEAN, False,
                    importance=Importance.MEDIUM, group=ERRORS_GROUP, order_in_group=8, width=Width.MEDIUM,
                    display_name="Enable Error Context Headers",
                    documentation="If true, add headers containing error context to the messages written to the "
                                  "dead letter queue. To avoid clashing with headers from the original record, all "
                                  "error context header keys will start with <code>__connect.errors.</code>"))


def _source_def() -> ConfigDef:
    """KIP-618's source connector settings (:mod:`zurau.connect.exactly_once`)."""
    group = "Exactly Once Support"
    return (ConfigDef()
            .define("exactly.once.support", ConfigType.STRING, "requested",
                    validator=ValidString(("requested", "required"), case_insensitive=True),
                    importance=Importance.MEDIUM, group=group, order_in_group=1,
                    documentation="Permitted values are requested, required. If set to \"required\", forces a "
                                  "preflight check for the connector to ensure that it can provide exactly-once "
                                  "semantics with the given configuration.")
            .define("transaction.boundary", ConfigType.STRING, "poll",
                    validator=ValidString(("poll", "interval", "connector"), case_insensitive=True),
                    importance=Importance.MEDIUM, group=group, order_in_group=2,
                    documentation="Permitted values are: poll, interval, connector. If set to 'poll', a new "
                                  "producer transaction will be started and committed for every batch of records "
                                  "that each task from this connector provides to Connect. If set to 'connector', "
                                  "relies on connector-defined transaction boundaries. If set to 'interval', "
                                  "commits transactions only after a user-defined time interval has passed.")
            .define("transaction.boundary.interval.ms", ConfigType.LONG, None, importance=Importance.LOW,
                    group=group, order_in_group=3,
                    documentation="If 'transaction.boundary' is set to 'interval', determines the interval for "
                                  "producer transaction commits by connector tasks. If unset, defaults to the "
                                  "value of the worker-level 'offset.flush.interval.ms' property.")
            .define("offsets.storage.topic", ConfigType.STRING, None, importance=Importance.LOW, group=group,
                    order_in_group=4,
                    documentation="The name of a separate offsets topic to use for this connector. If empty or "
                                  "not specified, the worker's global offsets topic name will be used."))


COMMON_CONFIG = _common_def()
SINK_CONFIG = COMMON_CONFIG.merged(_sink_def())
SOURCE_CONFIG = COMMON_CONFIG.merged(_source_def())


def _sub(config: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    return {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}


def _list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return [v.strip() for v in str(value).split(",") if v.strip()]


@dataclass
class TransformStep:
    alias: str
    transform: Transformation
    predicate: Predicate | None
    negate: bool

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if self.predicate is not None and self.predicate.test(record) == self.negate:
            return record
        return self.transform.apply(record)


class TransformChain:
    """The configured transforms, applied in order; a None result drops the record."""

    def __init__(self, steps: list[TransformStep]) -> None:
        self.steps = steps

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        current: ConnectRecord | None = record
        for step in self.steps:
            if current is None:
                return None
            current = step.apply(current)
        return current

    def close(self) -> None:
        for step in self.steps:
            step.transform.close()
            if step.predicate is not None:
                step.predicate.close()


def build_transforms(config: Mapping[str, Any], plugins: PluginRegistry) -> TransformChain:
    """The transform chain a connector config names; raises :class:`ConfigException`."""
    predicates: dict[str, Predicate] = {}
    for alias in _list(config.get("predicates")):
        type_name = config.get(f"predicates.{alias}.type")
        if not type_name:
            raise ConfigException(f'Missing required configuration "predicates.{alias}.type" which has no default value.')
        try:
            p = plugins.resolve(str(type_name), KIND_PREDICATE)()
        except PluginNotFound as e:
            raise ConfigException(f"Invalid value {type_name} for configuration predicates.{alias}.type: {e}") from None
        p.configure(_sub(config, f"predicates.{alias}."))
        predicates[alias] = p
    steps: list[TransformStep] = []
    for alias in _list(config.get("transforms")):
        type_name = config.get(f"transforms.{alias}.type")
        if not type_name:
            raise ConfigException(f'Missing required configuration "transforms.{alias}.type" which has no default value.')
        try:
            t = plugins.resolve(str(type_name), KIND_TRANSFORM)()
        except PluginNotFound as e:
            raise ConfigException(f"Invalid value {type_name} for configuration transforms.{alias}.type: {e}") from None
        sub = _sub(config, f"transforms.{alias}.")
        t.configure({k: v for k, v in sub.items() if k not in ("type", "predicate", "negate")})
        pred_alias = sub.get("predicate")
        predicate = None
        if pred_alias:
            predicate = predicates.get(str(pred_alias))
            if predicate is None:
                raise ConfigException(f"Invalid value {pred_alias} for configuration transforms.{alias}.predicate: "
                                      "the predicate is not among 'predicates'")
        negate = str(sub.get("negate", "false")).strip().lower() == "true"
        steps.append(TransformStep(alias, t, predicate, negate))
    return TransformChain(steps)


def build_converter(config: Mapping[str, Any], worker_config: Mapping[str, Any], which: str,
                    plugins: PluginRegistry) -> Converter:
    """``which`` is ``key`` or ``value``: the connector's converter, else the worker's."""
    prefix = f"{which}.converter"
    source = config if config.get(prefix) else worker_config
    name = source.get(prefix) or "org.apache.kafka.connect.json.JsonConverter"
    try:
        converter = plugins.resolve(str(name), KIND_CONVERTER)()
    except PluginNotFound as e:
        raise ConfigException(f"Invalid value {name} for configuration {prefix}: {e}") from None
    converter.configure(_sub(source, prefix + "."), which == "key")
    return converter


def connector_type(cls: type[Connector]) -> str:
    return "sink" if issubclass(cls, SinkConnector) else "source"


def _plugin_def(plugin: Any) -> ConfigDef:
    try:
        d = plugin.config_def()
        return d if isinstance(d, ConfigDef) else ConfigDef()
    except Exception:
        return ConfigDef()


def validate_connector_config(config: Mapping[str, Any], plugins: PluginRegistry, *,
                              exactly_once_source: bool = False) -> dict[str, Any]:
    """Connect's ConfigInfos for ``config``; ``connector.class`` must resolve (else
    :class:`PluginNotFound`). ``exactly_once_source``: the worker runs sources exactly once
    (KIP-618's preflight checks apply)."""
    cls = plugins.resolve(str(config.get("connector.class", "")), KIND_CONNECTOR)
    is_sink = issubclass(cls, SinkConnector)
    base = SINK_CONFIG if is_sink else SOURCE_CONFIG
    definition = ConfigDef(base.keys())
    values = base.validate(config)
    by_name = {v.name: v for v in values}
    if is_sink:
        topics, regex = _list(config.get("topics")), str(config.get("topics.regex") or "").strip()
        if bool(topics) == bool(regex):
            msg = ("Must configure one of topics or topics.regex" if not topics
                   else "topics and topics.regex are mutually exclusive options, but both are set.")
            by_name["topics"].errors.append(msg)
            by_name["topics.regex"].errors.append(msg)
        pattern = None
        if regex:
            try:
                pattern = re.compile(regex)
            except re.error as e:
                by_name["topics.regex"].errors.append(f"Invalid value {regex} for configuration topics.regex: {e}")
        dlq = str(config.get("errors.deadletterqueue.topic.name") or "").strip()
        if dlq and topics and dlq in topics:
            by_name["topics"].errors.append(
                f"The DLQ topic '{dlq}' may not be included in the list of topics "
                f"('topics=[{', '.join(dict.fromkeys(topics))}]') consumed by the connector")
        if dlq and pattern is not None and pattern.fullmatch(dlq):
            by_name["topics.regex"].errors.append(
                f"The DLQ topic '{dlq}' may not be matched by the regex for the topics ('topics.regex={regex}') "
                "consumed by the connector")
    if not is_sink:
        try:
            topic_creation_groups({str(k): str(v) for k, v in config.items()})
        except TopicCreationError as e:
            if definition.get(e.key) is None:
                definition.define(e.key, ConfigType.STRING, None, importance=Importance.LOW, group="Topic Creation",
                                  documentation="A topic.creation setting (KIP-158).")
            values.append(ConfigValue(e.key, config.get(e.key), errors=[str(e)]))
    extra_groups: list[str] = []
    for kind, aliases_key in ((KIND_PREDICATE, "predicates"), (KIND_TRANSFORM, "transforms")):
        for alias in _list(config.get(aliases_key)):
            group = f"{aliases_key.capitalize()}: {alias}"
            extra_groups.append(group)
            prefix = f"{aliases_key}.{alias}."
            type_key = prefix + "type"
            definition.define(type_key, ConfigType.CLASS, importance=Importance.HIGH, group=group,
                              documentation=f"Class for the '{alias}' {kind}.", display_name=f"{kind.capitalize()} type")
            cv = ConfigValue(type_key, config.get(type_key))
            values.append(cv)
            plugin_def = ConfigDef()
            if not config.get(type_key):
                cv.errors.append(f'Missing required configuration "{type_key}" which has no default value.')
            else:
                try:
                    plugin = plugins.resolve(str(config[type_key]), kind)()
                    plugin_def = _plugin_def(plugin)
                except PluginNotFound as e:
                    cv.errors.append(f"Invalid value {config[type_key]} for configuration {type_key}: {e}")
            if kind == KIND_TRANSFORM:
                pred_key, neg_key = prefix + "predicate", prefix + "negate"
                definition.define(pred_key, ConfigType.STRING, None, importance=Importance.MEDIUM, group=group,
                                  documentation="The alias of a predicate used to determine whether to apply this transformation.")
                definition.define(neg_key, ConfigType.BOOLEAN, False, importance=Importance.MEDIUM, group=group,
                                  documentation="Whether the configured predicate should be negated.")
                pv = ConfigValue(pred_key, config.get(pred_key))
                if pv.value and str(pv.value) not in _list(config.get("predicates")):
                    pv.errors.append(f"Invalid value {pv.value} for configuration {pred_key}: "
                                     "the predicate is not among 'predicates'")
                values.append(pv)
                values.extend(ConfigDef([k for k in [definition.get(neg_key)] if k is not None]).validate(config))
            sub = _sub(config, prefix)
            for key in plugin_def.keys():
                definition.define(prefix + key.name, key.type, key.default, importance=key.importance, group=group,
                                  documentation=key.documentation)
            for cv2 in plugin_def.validate(sub):
                values.append(ConfigValue(prefix + cv2.name, cv2.value, cv2.recommended_values, cv2.errors))
    connector = cls()
    own_def = _plugin_def(connector)
    try:
        own_values = connector.validate(dict(config))
    except Exception as e:  # a connector's validate() that throws reports on connector.class
        by_name["connector.class"].errors.append(f"{type(e).__name__}: {e}")
        own_values = []
    for key in own_def.keys():
        if definition.get(key.name) is None:
            definition = definition.merged(ConfigDef([key]))
    index = {v.name: v for v in values}
    for cv in own_values:
        target = index.get(cv.name)
        if target is None:
            values.append(cv)
            index[cv.name] = cv
        else:
            target.errors.extend([e for e in cv.errors if e not in target.errors])
    if isinstance(connector, SourceConnector):
        from zurau.connect.exactly_once import validation_errors as eos_errors

        for eos_key, message in eos_errors(connector, config, exactly_once_source).items():
            target = index.get(eos_key)
            if target is None:
                target = index[eos_key] = ConfigValue(eos_key, config.get(eos_key))
                values.append(target)
            target.errors.append(message)
    groups = [COMMON_GROUP, TRANSFORMS_GROUP, PREDICATES_GROUP, ERRORS_GROUP, *extra_groups]
    if not is_sink:
        groups.append("Exactly Once Support")
    return config_infos(plugins.display_name(cls), definition, values, groups)


def validation_errors(infos: Mapping[str, Any]) -> list[str]:
    """``"<setting>: <error>"`` for each error of a ConfigInfos body."""
    out = []
    for c in infos["configs"]:
        for e in c["value"]["errors"]:
            out.append(f"{c['value']['name']}: {e}" if not e.startswith(c["value"]["name"]) else e)
    return out
