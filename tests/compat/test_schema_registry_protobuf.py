"""confluent-kafka's ProtobufSerializer and ProtobufDeserializer against Zurau's registry, with
records round-tripped through a Zurau broker. The message classes are generated at test time
by protoc (grpcio-tools) from .proto files, one importing another and a well-known type, so the
serializer registers the import as a schema reference in descriptor (base64) form."""

from __future__ import annotations

import base64
import importlib
import sys
import uuid
from pathlib import Path
from types import ModuleType

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2
from grpc_tools import protoc

from tests.compat.test_schema_registry_confluent import round_trip


def generate(tmp_path: Path, files: dict[str, str], module: str) -> ModuleType:
    """Compile .proto files with protoc into Python modules and import ``module``."""
    tag = uuid.uuid4().hex[:8]
    root = tmp_path / f"gen_{tag}"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    import grpc_tools

    include = str(Path(grpc_tools.__file__).parent / "_proto")
    assert protoc.main(["protoc", f"-I{root}", f"-I{include}", f"--python_out={root}", *files]) == 0
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(str(root))


def test_protobuf_serializer_round_trip_with_references(
    tmp_path: Path, zurau_broker: object, zurau_registry: object, zurau_topic: str
) -> None:
    pkg = f"p{uuid.uuid4().hex[:6]}"
    files = {
        f"{pkg}/address.proto": f'syntax = "proto3";\npackage {pkg};\nmessage Address {{ string city = 1; int32 zip = 2; }}\n',
        f"{pkg}/customer.proto": (
            f'syntax = "proto3";\npackage {pkg};\nimport "{pkg}/address.proto";\n'
            'import "google/protobuf/timestamp.proto";\n'
            "message Customer { string name = 1; Address home = 2; google.protobuf.Timestamp since = 3;\n"
            "  oneof contact { string email = 4; string phone = 5; } map<string, int64> points = 6; }\n"
        ),
    }
    mod = generate(tmp_path, files, f"{pkg}.customer_pb2")
    client = SchemaRegistryClient({"url": zurau_registry.url})  # type: ignore[attr-defined]
    ser = ProtobufSerializer(mod.Customer, client)
    ctx = SerializationContext(zurau_topic, MessageField.VALUE)
    records = []
    for i in range(3):
        c = mod.Customer(name=f"n{i}", email=f"n{i}@x")
        c.home.city, c.home.zip = "Oslo", i
        c.since.seconds = 1_700_000_000 + i
        c.points["a"] = i
        records.append(c)
    payloads = [ser(r, ctx) for r in records]
    assert all(p[0] == 0 for p in payloads)
    got = round_trip(zurau_broker.bootstrap_servers, zurau_topic, payloads)  # type: ignore[attr-defined]
    de = ProtobufDeserializer(mod.Customer, {"use.deprecated.format": False})
    assert [de(v, ctx) for v in got] == records

    # the registry stored text with the import as a reference, and serves the descriptor form
    latest = client.get_latest_version(f"{zurau_topic}-value")
    assert latest.schema.schema_type == "PROTOBUF"
    assert "message Customer" in latest.schema.schema_str
    assert [r.name for r in latest.schema.references] == [f"{pkg}/address.proto"]
    fdp = descriptor_pb2.FileDescriptorProto.FromString(
        base64.b64decode(client.get_version(f"{zurau_topic}-value", 1, fmt="serialized").schema.schema_str)
    )
    assert [m.name for m in fdp.message_type] == ["Customer"]
    assert list(fdp.dependency) == [f"{pkg}/address.proto", "google/protobuf/timestamp.proto"]
    # a second serializer re-registers the same descriptor: same id, no new version
    ProtobufSerializer(mod.Customer, client)(records[0], ctx)
    assert client.get_versions(f"{zurau_topic}-value") == [1]

    # v2 as text: a field renumbered is a removal plus an addition (compatible); a changed
    # scalar kind is not (Confluent's FIELD_SCALAR_KIND_CHANGED), and the client sees the 409
    refs = latest.schema.references
    v2 = files[f"{pkg}/customer.proto"].replace("string name = 1;", "string name = 7;")
    client.register_schema(f"{zurau_topic}-value", Schema(v2, "PROTOBUF", refs))
    bad = files[f"{pkg}/customer.proto"].replace("string name = 1;", "double name = 7;")
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(f"{zurau_topic}-value", Schema(bad, "PROTOBUF", refs))
    assert e.value.http_status_code == 409
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(f"{zurau_topic}-value", Schema('syntax = "proto3"; message { }', "PROTOBUF"))
    assert e.value.error_code == 42201


def test_protobuf_over_rest_subject_with_slash_serialized_and_verbose(zurau_registry: object) -> None:
    import httpx

    subject = f"dir/{uuid.uuid4().hex[:6]}.proto"
    path = f"/subjects/{subject.replace('/', '%2F')}"
    text = 'syntax = "proto3";\npackage x;\n// a comment\nmessage A {   int32 n = 1; }\n'
    with httpx.Client(base_url=zurau_registry.url, timeout=30) as http:  # type: ignore[attr-defined]
        sid = http.post(f"{path}/versions", json={"schema": text, "schemaType": "PROTOBUF"}).json()["id"]
        stored = http.get(f"{path}/versions/1").json()
        assert stored["schemaType"] == "PROTOBUF" and "// a comment" not in stored["schema"]
        serialized = http.get(f"/schemas/ids/{sid}", params={"format": "serialized"}).json()["schema"]
        assert descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized)).package == "x"
        # the descriptor form of the same schema is the same schema: same id, no new version
        again = http.post(f"{path}/versions", json={"schema": serialized, "schemaType": "PROTOBUF"})
        assert again.json() == {"id": sid}
        assert http.post(path, json={"schema": serialized, "schemaType": "PROTOBUF"}).json()["version"] == 1
        changed = text.replace("int32 n = 1", "string n = 1")
        verdict = http.post(
            f"/compatibility{path}/versions/latest", params={"verbose": "true"},
            json={"schema": changed, "schemaType": "PROTOBUF"},
        ).json()
        assert verdict == {"is_compatible": False, "messages": ["FIELD_SCALAR_KIND_CHANGED #/A/1 (new schema reading version 1)"]}
        assert http.get(f"{path}/versions").json() == [1]
