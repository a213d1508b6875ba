"""Connector config validation (Connect's ConfigInfos), worker properties, the Connect group
protocol bytes and the leader's round-robin assignment, plugin name resolution."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest

from zurau.connect.api import ConfigDef, ConfigException, ConfigType, Importance, Range
from zurau.connect.connect_group import (
    Assignment,
    WorkerMetadata,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
    round_robin,
)
from zurau.connect.connector_config import validate_connector_config
from zurau.connect.file_stream import FileStreamSinkConnector, FileStreamSourceConnector
from zurau.connect.plugins import KIND_CONNECTOR, KIND_CONVERTER, PluginNotFound, PluginRegistry
from zurau.connect.stores import ConfigState, offset_key, target_state_record, task_records
from zurau.connect.worker_config import WorkerConfig, WorkerConfigError

PLUGINS = PluginRegistry()


def by_name(infos: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["value"]["name"]: c for c in infos["configs"]}


def test_config_def_parse_and_validate() -> None:
    d = (ConfigDef().define("file", ConfigType.STRING, importance=Importance.HIGH)
         .define("batch.size", ConfigType.INT, 2000, validator=Range.at_least(1)))
    assert d.parse({"file": "x", "batch.size": "5"}) == {"file": "x", "batch.size": 5}
    assert d.parse({"file": "x"})["batch.size"] == 2000
    with pytest.raises(ConfigException, match='Missing required configuration "file"'):
        d.parse({})
    values = {v.name: v for v in d.validate({"batch.size": "zero"})}
    assert values["file"].errors == ['Missing required configuration "file" which has no default value.']
    assert values["batch.size"].errors == ["Invalid value zero for configuration batch.size: Not a 32-bit integer"]
    assert {v.name: v for v in d.validate({"file": "f", "batch.size": 0})}["batch.size"].errors == [
        "Invalid value 0 for configuration batch.size: Value must be at least 1"]


def test_validate_response_shape_for_a_valid_sink() -> None:
    infos = validate_connector_config({"connector.class": "FileStreamSink", "name": "s", "topics": "t",
                                       "file": "/tmp/x", "tasks.max": "2"}, PLUGINS)
    assert infos["name"] == "org.apache.kafka.connect.file.FileStreamSinkConnector"
    assert infos["error_count"] == 0
    assert infos["groups"][:4] == ["Common", "Transforms", "Predicates", "Error Handling"]
    configs = by_name(infos)
    assert configs["tasks.max"]["definition"] == {
        "name": "tasks.max", "type": "INT", "required": False, "default_value": "1", "importance": "HIGH",
        "documentation": "Maximum number of tasks to use for this connector.", "group": "Common", "width": "SHORT",
        "display_name": "Tasks max", "dependents": [], "order": 3}
    assert configs["tasks.max"]["value"] == {"name": "tasks.max", "value": "2", "recommended_values": [],
                                             "errors": [], "visible": True}
    assert "file" in configs  # the connector's own settings follow the common ones


def test_validate_reports_every_error() -> None:
    infos = validate_connector_config({"connector.class": "FileStreamSink", "tasks.max": "0",
                                       "transforms": "a", "transforms.a.type": "nope.Missing"}, PLUGINS)
    configs = by_name(infos)
    assert configs["name"]["value"]["errors"]
    assert configs["tasks.max"]["value"]["errors"] == ["Invalid value 0 for configuration tasks.max: Value must be at least 1"]
    assert configs["topics"]["value"]["errors"] == ["Must configure one of topics or topics.regex"]
    assert configs["transforms.a.type"]["value"]["errors"]
    assert "Transforms: a" in infos["groups"]
    assert infos["error_count"] == 5  # name, tasks.max, topics, topics.regex, transforms.a.type


def test_source_connector_own_validation() -> None:
    infos = validate_connector_config({"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                                       "name": "f", "topic": "a,b"}, PLUGINS)
    assert by_name(infos)["topic"]["value"]["errors"] == [
        "'topic' in FileStreamSourceConnector configuration requires definition of a single topic"]
    assert infos["error_count"] == 1


def test_plugin_aliases() -> None:
    for name in ("org.apache.kafka.connect.file.FileStreamSourceConnector", "FileStreamSource",
                 "FileStreamSourceConnector", "zurau.connect.file_stream.FileStreamSourceConnector",
                 "zurau.connect.file_stream:FileStreamSourceConnector"):
        assert PLUGINS.resolve(name, KIND_CONNECTOR) is FileStreamSourceConnector
    assert PLUGINS.resolve("FileStreamSink", KIND_CONNECTOR) is FileStreamSinkConnector
    with pytest.raises(PluginNotFound):
        PLUGINS.resolve("org.apache.kafka.connect.json.JsonConverter", KIND_CONNECTOR)
    assert PLUGINS.resolve("org.apache.kafka.connect.json.JsonConverter", KIND_CONVERTER).__name__ == "JsonConverter"
    with pytest.raises(PluginNotFound):
        PLUGINS.resolve("com.example.Nothing", KIND_CONNECTOR)


def test_worker_properties() -> None:
    c = WorkerConfig.from_props({"bootstrap.servers": "h:1", "group.id": "g", "config.storage.topic": "c",
                                 "offset.storage.topic": "o", "status.storage.topic": "s",
                                 "listeners": "http://0.0.0.0:18083", "value.converter.schemas.enable": "false"})
    assert c.distributed and (c.host, c.port) == ("0.0.0.0", 18083)
    assert c.props["value.converter.schemas.enable"] == "false"
    assert c.props["key.converter"] == "org.apache.kafka.connect.json.JsonConverter"
    standalone = WorkerConfig.from_props({"rest.port": "9000", "offset.storage.file.filename": "/tmp/o"})
    assert not standalone.distributed and standalone.port == 9000
    with pytest.raises(WorkerConfigError, match="config.storage.topic"):
        WorkerConfig.from_props({"group.id": "g"})
    with pytest.raises(WorkerConfigError, match="offset.flush.interval.ms"):
        WorkerConfig.from_props({"offset.flush.interval.ms": "soon"})


def test_connect_protocol_bytes() -> None:
    md = encode_metadata(WorkerMetadata("http://w:8083", 42))
    assert md == struct.pack(">hh", 0, 13) + b"http://w:8083" + struct.pack(">q", 42)
    assert decode_metadata(md) == WorkerMetadata("http://w:8083", 42)
    a = Assignment(0, "m1", "http://w:8083", 7, ["c1"], [("c1", 0), ("c2", 1)])
    data = encode_assignment(a)
    assert data[:4] == struct.pack(">hh", 0, 0)
    assert decode_assignment(data) == a
    with pytest.raises(ValueError):
        decode_assignment(data[:-2])


def test_round_robin_assignment() -> None:
    plan = round_robin(["w2", "w1", "w3"], ["b", "a"], [("a", 0), ("a", 1), ("b", 0), ("b", 1)])
    # sorted members w1, w2, w3: connectors a, b then tasks continue around the circle
    assert plan["w1"].connectors == ["a"] and plan["w2"].connectors == ["b"] and plan["w3"].connectors == []
    assert plan["w3"].tasks == [("a", 0), ("b", 1)]
    assert plan["w1"].tasks == [("a", 1)] and plan["w2"].tasks == [("b", 0)]
    assert round_robin([], ["a"], []) == {}


def test_config_topic_records_apply_in_order() -> None:
    state = ConfigState()
    state.apply("connector-c", {"properties": {"connector.class": "X"}})
    for key, value in task_records("c", [{"a": "1"}, {"a": "2"}]):
        assert key in ("task-c-0", "task-c-1", "commit-c")
        state.apply(key, json.loads(value) if value else None)
    assert state.tasks["c"] == [{"a": "1"}, {"a": "2"}]
    state.apply("task-c-0", {"properties": {"a": "9"}})
    assert state.tasks["c"][0] == {"a": "1"}  # uncommitted until the next commit record
    key, value = target_state_record("c", "STOPPED")
    assert value == b'{"state":"PAUSED","state.v2":"STOPPED"}'
    state.apply(key, {"state": "PAUSED", "state.v2": "STOPPED"})
    assert state.target_state("c") == "STOPPED"
    restart = state.apply("restart-connector-c", {"include-tasks": True, "only-failed": False})
    assert restart is not None and restart.include_tasks and not restart.only_failed
    state.apply("connector-c", None)
    assert "c" not in state.connectors and "c" not in state.tasks
    assert offset_key("c", {"filename": "f"}) == b'["c",{"filename":"f"}]'


def test_the_api_docstring_example_is_a_working_connector() -> None:
    import textwrap

    import zurau.connect.api as api

    doc = api.__doc__ or ""
    code = textwrap.dedent(doc.split("::\n", 1)[1].split("\nRegister it", 1)[0])
    namespace: dict[str, Any] = {}
    exec(compile(code, "api-example", "exec"), namespace)
    connector = namespace["CounterConnector"]()
    connector.start({"topic": "counts"})
    assert connector.config_def().names() == ["topic"]
    [config] = connector.task_configs(4)

    class NoOffsets(api.OffsetStorageReader):
        def offset(self, partition: Any) -> dict[str, Any] | None:
            return {"n": 41} if partition == {"counter": "main"} else None

    task = connector.task_class()()
    task.initialize(api.SourceTaskContext(config, NoOffsets()))
    task.start(config)
    [record] = task.poll()
    assert (record.topic, record.value, record.source_offset) == ("counts", "42", {"n": 42})


def test_config_providers(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from zurau.connect.config_providers import ConfigProviders

    (tmp_path / "db.properties").write_text("password=s3cret\n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "token").write_text("t0ken")
    monkeypatch.setenv("PG_USER", "alice")
    providers = ConfigProviders({
        "config.providers": "file,dir,env",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        "config.providers.dir.class": "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
        "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
        "config.providers.env.param.allowlist.pattern": "PG_.*"})
    raw = {"database.password": f"${{file:{tmp_path}/db.properties:password}}",
           "token": f"${{dir:{tmp_path}/dir:token}}", "user": "${env::PG_USER}", "other": "${vault:x:y}"}
    resolved = providers.resolve(raw)
    assert resolved == {"database.password": "s3cret", "token": "t0ken", "user": "alice", "other": "${vault:x:y}"}
    assert providers.reverse(raw, resolved, {"database.password": "s3cret", "user": "bob"}) == {
        "database.password": raw["database.password"], "user": "bob"}
    monkeypatch.setenv("HOME_SECRET", "x")
    with pytest.raises(ConfigException, match="allowlist"):
        providers.resolve({"k": "${env::HOME_SECRET}"})
    with pytest.raises(ConfigException, match="no key"):
        providers.resolve({"k": f"${{file:{tmp_path}/db.properties:nope}}"})
    with pytest.raises(WorkerConfigError, match="config.providers.x.class"):
        WorkerConfig.from_props({"config.providers": "x", "config.providers.x.class": "com.example.Vault"})


def test_topic_creation_groups() -> None:
    from zurau.connect.topic_creation import TopicCreationError, topic_creation_groups

    assert topic_creation_groups({"topic": "x"}) is None
    groups = topic_creation_groups({
        "topic.creation.default.replication.factor": "-1", "topic.creation.default.partitions": "3",
        "topic.creation.default.cleanup.policy": "compact",
        "topic.creation.groups": "big", "topic.creation.big.include": "orders.*,payments",
        "topic.creation.big.exclude": "orders\\.tmp", "topic.creation.big.partitions": "12"})
    assert groups is not None
    big, default = groups
    assert (big.partitions, big.replication_factor, big.configs) == (12, -1, {})
    assert (default.partitions, default.configs) == (3, {"cleanup.policy": "compact"})
    assert big.matches("orders.v1") and big.matches("payments") and not big.matches("orders.tmp")
    assert not big.matches("payments.x") and default.matches("anything")
    with pytest.raises(TopicCreationError, match="topic.creation.default.partitions"):
        topic_creation_groups({"topic.creation.default.replication.factor": "1"})
    infos = validate_connector_config({"connector.class": "FileStreamSource", "name": "n", "topic": "t",
                                       "topic.creation.default.replication.factor": "0",
                                       "topic.creation.default.partitions": "1"}, PLUGINS)
    assert by_name(infos)["topic.creation.default.replication.factor"]["value"]["errors"] == [
        "Invalid value 0 for configuration topic.creation.default.replication.factor: must be -1 or at least 1"]
