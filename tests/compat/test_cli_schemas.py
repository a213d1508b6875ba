"""``zurau schemas`` against Zurau's registry, and ``zurau consume --value-format`` printing
records that confluent-kafka's Avro, Protobuf and JSON Schema serializers wrote."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from typer.testing import CliRunner, Result

from tests.compat.test_schema_registry_protobuf import generate
from zurau.cli.main import app

runner = CliRunner()
PING = {"type": "record", "name": "Ping", "fields": [{"name": "n", "type": "long"}, {"name": "tag", "type": "bytes"}]}


def cli(*args: str) -> Result:
    return runner.invoke(app, list(args))


def test_schemas_commands(tmp_path: Path, zurau_registry: object) -> None:
    url = zurau_registry.url  # type: ignore[attr-defined]
    subject = f"cli/{uuid.uuid4().hex[:6]}"
    v1 = tmp_path / "ping.avsc"
    v1.write_text(json.dumps(PING))
    reg = cli("schemas", "register", subject, str(v1), "--registry", url)
    assert reg.exit_code == 0, reg.stderr
    sid = int(reg.stdout)
    assert subject in cli("schemas", "list", "--registry", url, "--prefix", "cli/").stdout.split()
    got = json.loads(cli("schemas", "get", subject, "--registry", url).stdout)
    assert (got["id"], got["version"], json.loads(got["schema"])["name"]) == (sid, 1, "Ping")
    assert json.loads(cli("schemas", "get", "--id", str(sid), "--raw", "--registry", url).stdout)["name"] == "Ping"

    broken = tmp_path / "broken.avsc"
    broken.write_text(json.dumps({**PING, "fields": [*PING["fields"], {"name": "x", "type": "int"}]}))
    verdict = cli("schemas", "check", subject, str(broken), "--registry", url)
    assert verdict.exit_code == 1 and verdict.stdout.startswith("incompatible") and "x" in verdict.stdout
    assert cli("schemas", "config", subject, "--set", "none", "--registry", url).stdout.strip() == "NONE"
    assert cli("schemas", "check", subject, str(broken), "--registry", url).stdout.strip() == "compatible"
    assert cli("schemas", "config", subject, "--registry", url).stdout.strip() == "NONE"

    missing = cli("schemas", "get", "no-such-subject", "--registry", url)
    assert missing.exit_code == 1 and "(error_code 40401)" in missing.stderr
    unknown_type = cli("schemas", "register", subject, str(tmp_path), "--registry", url)
    assert unknown_type.exit_code == 1 and "cannot" in unknown_type.stderr
    assert cli("schemas", "delete", subject, "--registry", url).stdout.split() == ["1"]
    assert cli("schemas", "delete", subject, "--permanent", "--registry", url).stdout.split() == ["1"]
    down = cli("schemas", "list", "--registry", "http://127.0.0.1:9")
    assert down.exit_code == 1 and "cannot reach the schema registry" in down.stderr


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for v in values:
        p.produce(topic, value=v)
    assert p.flush(30) == 0


def _consume(bootstrap: str, topic: str, fmt: str, url: str) -> Result:
    return cli("consume", topic, "--from-beginning", "-e", "--value-format", fmt, "--registry-url", url,
               "--format", "%s\\n", "--bootstrap-server", bootstrap)


def test_consume_decodes_framed_values(tmp_path: Path, zurau_broker: object, zurau_registry: object, zurau_topic: str) -> None:
    bootstrap, url = zurau_broker.bootstrap_servers, zurau_registry.url  # type: ignore[attr-defined]
    client = SchemaRegistryClient({"url": url})
    ctx = SerializationContext(zurau_topic, MessageField.VALUE)

    avro = AvroSerializer(client, json.dumps(PING))
    _produce(bootstrap, zurau_topic, [avro({"n": i, "tag": b"\x00\xff"}, ctx) for i in range(2)])
    out = _consume(bootstrap, zurau_topic, "avro", url)
    assert out.exit_code == 0, out.stderr
    assert [json.loads(line) for line in out.stdout.splitlines()] == [{"n": i, "tag": "AP8="} for i in range(2)]

    pkg = f"c{uuid.uuid4().hex[:6]}"
    mod = generate(tmp_path, {f"{pkg}/m.proto": f'syntax = "proto3";\npackage {pkg};\nimport "google/protobuf/timestamp.proto";\n'
                              "message Outer { message Inner { string s = 1; google.protobuf.Timestamp at = 2; } }\n"},
                   f"{pkg}.m_pb2")
    topic = f"{zurau_topic}-pb"
    zurau_broker.create_topic(topic)  # type: ignore[attr-defined]
    inner = mod.Outer.Inner(s="hi")
    inner.at.seconds = 1
    proto = ProtobufSerializer(mod.Outer.Inner, client, {"use.deprecated.format": False})
    _produce(bootstrap, topic, [proto(inner, SerializationContext(topic, MessageField.VALUE))])
    out = _consume(bootstrap, topic, "protobuf", url)
    assert out.exit_code == 0, out.stderr
    assert json.loads(out.stdout) == {"s": "hi", "at": "1970-01-01T00:00:01Z"}

    topic = f"{zurau_topic}-js"
    zurau_broker.create_topic(topic)  # type: ignore[attr-defined]
    js = JSONSerializer(json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}}), client)
    _produce(bootstrap, topic, [js({"a": 1}, SerializationContext(topic, MessageField.VALUE)), b"not framed"])
    out = _consume(bootstrap, topic, "json-schema", url)
    assert out.exit_code == 1 and "wire format" in out.stderr
    assert set(out.stdout.splitlines()) <= {'{"a":1}'}
