"""Protobuf schemas in the registry: compilation (protoc), the canonical printed text, the
descriptor (base64) form, and compatibility verdicts as Confluent's Protobuf schema diff gives
them (its published diff examples: change, verdict)."""

from __future__ import annotations

import pytest

from zurau.schema_formats.protobuf_compatibility import check
from zurau.schema_formats.protobuf_schema import ProtobufFile, ProtoDependency, parse_protobuf
from zurau.schema_registry.errors import RegistryError

P3 = 'syntax = "proto3";\n'


def compile_(text: str, deps: list[ProtoDependency] | None = None) -> ProtobufFile:
    return parse_protobuf(text, deps or [])


RICH_PROTO3 = P3 + """package shop.v1;
import "google/protobuf/timestamp.proto";
import "google/protobuf/descriptor.proto";
option java_package = "com.shop";
option optimize_for = SPEED;
extend google.protobuf.FieldOptions { string label = 50001; }
message Order {
  option deprecated = true;
  string id = 1 [(label) = "pk", deprecated = true];
  google.protobuf.Timestamp at = 2;
  map<string, Line> lines = 3;
  oneof pay { string card = 4; bytes token = 5; }
  optional int64 discount = 6;
  repeated int32 tags = 7 [packed = false];
  State state = 8 [json_name = "st"];
  message Line { uint32 qty = 1; double price = 2; }
  enum State { option allow_alias = true; NEW = 0; OPEN = 1; STARTED = 1; reserved 9 to 11; reserved "OLD"; }
  reserved 20, 30 to max;
  reserved "legacy";
}
service Orders { rpc Get(Order) returns (stream Order); }
"""

RICH_PROTO2 = """syntax = "proto2";
package legacy;
message M {
  required int32 a = 1;
  optional string s = 2 [default = "q\\"uote"];
  optional bytes b = 3 [default = "\\001z"];
  optional Kind k = 4 [default = TWO];
  optional double d = 5 [default = inf];
  optional group G = 6 { optional int32 x = 1; }
  extensions 100 to 199;
}
enum Kind { ONE = 1; TWO = 2; }
extend M { optional int32 more = 150; }
"""


@pytest.mark.parametrize("text", [RICH_PROTO3, RICH_PROTO2], ids=["proto3", "proto2"])
def test_printed_text_compiles_back_to_the_same_schema(text: str) -> None:
    schema = compile_(text)
    printed = schema.text()
    again = compile_(printed)
    assert again.text() == printed
    assert again.fdp == schema.fdp
    # the descriptor (base64) form, as confluent-kafka's serializer sends it, is the same schema
    assert compile_(schema.serialized()).text() == printed


def test_canonical_text_keeps_options_and_normalize_sorts_them() -> None:
    printed = compile_(RICH_PROTO3).text()
    assert '[deprecated = true, (shop.v1.label) = "pk"]' in printed
    assert "option java_package" in printed and "optional int64 discount = 6;" in printed
    assert "map<string, .shop.v1.Order.Line> lines = 3;" in printed
    normal = compile_(RICH_PROTO3).text(normalize=True)
    assert normal.index('import "google/protobuf/descriptor.proto"') < normal.index('import "google/protobuf/timestamp.proto"')
    assert normal.index("option java_package") < normal.index("option optimize_for")
    # formatting and comments do not change the canonical text
    spaced = RICH_PROTO3.replace("message Order {", "// orders\nmessage   Order\n{")
    assert compile_(spaced).text() == printed


@pytest.mark.parametrize(
    "text, message",
    [
        (P3 + "message A { int32 x = 1 }", 'Expected ";"'),
        (P3 + "message A { Missing x = 1; }", '"Missing" is not defined'),
        (P3 + "message A { int32 x = 1; int32 y = 1; }", "has already been used"),
        (P3 + 'import "nowhere.proto"; message A {}', "nowhere.proto"),
        ("Zm9vYmFy", "Expected top-level statement"),  # base64, but not of a descriptor
    ],
)
def test_invalid_schemas_get_42201_with_protoc_message(text: str, message: str) -> None:
    with pytest.raises(RegistryError) as e:
        compile_(text)
    assert e.value.error_code == 42201 and message in e.value.message


def test_bad_reference_names_are_refused() -> None:
    dep = compile_(P3 + "message D {}")
    with pytest.raises(RegistryError) as e:
        compile_(P3 + 'import "../d.proto";', [ProtoDependency("../d.proto", "d", 1, dep)])
    assert e.value.error_code == 42201


def verdict(original: str, update: str, deps_o: list[ProtoDependency] | None = None,
            deps_u: list[ProtoDependency] | None = None) -> list[str]:
    """Confluent's diff of original -> update: the reader ``update`` reading ``original``'s data."""
    return check(compile_(update, deps_u), compile_(original, deps_o))


MSG = P3 + "package foo;\nmessage TestMessage {\n%s\n}\n%s"


@pytest.mark.parametrize(
    "original, update, incompatible",
    [
        # fields added, removed, renumbered, renamed: compatible
        (MSG % ("string a = 1;", ""), MSG % ("string a = 1; string b = 2;", ""), []),
        (MSG % ("string a = 1; string b = 2;", ""), MSG % ("string a = 1;", ""), []),
        (MSG % ("string a = 1;", ""), MSG % ("string a = 2;", ""), []),
        (MSG % ("string a = 1;", ""), MSG % ("string renamed = 1;", ""), []),
        # proto2 required fields
        ('syntax = "proto2"; message T { optional string a = 1; }',
         'syntax = "proto2"; message T { optional string a = 1; required string b = 2; }', ["REQUIRED_FIELD_ADDED #/T/2"]),
        ('syntax = "proto2"; message T { optional string a = 1; required string b = 2; }',
         'syntax = "proto2"; message T { optional string a = 1; }', ["REQUIRED_FIELD_REMOVED #/T/2"]),
        # scalar kinds: wire-compatible groups pass, others do not
        (MSG % ("int32 a = 1;", ""), MSG % ("int64 a = 1;", ""), []),
        (MSG % ("uint64 a = 1;", ""), MSG % ("bool a = 1;", ""), []),
        (MSG % ("string a = 1;", ""), MSG % ("bytes a = 1;", ""), []),
        (MSG % ("fixed32 a = 1;", ""), MSG % ("sfixed32 a = 1;", ""), []),
        (MSG % ("int32 a = 1;", ""), MSG % ("Status a = 1;", "enum Status { A = 0; B = 1; }"), []),
        (MSG % ("int32 a = 1;", ""), MSG % ("string a = 1;", ""), ["FIELD_SCALAR_KIND_CHANGED #/TestMessage/1"]),
        (MSG % ("int32 a = 1;", ""), MSG % ("sint32 a = 1;", ""), ["FIELD_SCALAR_KIND_CHANGED #/TestMessage/1"]),
        (MSG % ("float a = 1;", ""), MSG % ("double a = 1;", ""), ["FIELD_SCALAR_KIND_CHANGED #/TestMessage/1"]),
        (MSG % ("int32 a = 1;", ""), MSG % ("T2 a = 1;", "message T2 { string s = 1; }"), ["FIELD_KIND_CHANGED #/TestMessage/1"]),
        (MSG % ("map<string, int32> m = 2;", ""), MSG % ("map<string, string> m = 2;", ""),
         ["FIELD_SCALAR_KIND_CHANGED #/TestMessage/2"]),
        # message-typed fields: the name (resolved), then the message itself
        (MSG % ("T2 a = 1;", "message T2 { string s = 1; }"), MSG % ("T3 a = 1;", "message T3 { string s = 1; }"),
         ["MESSAGE_REMOVED #/T2", "FIELD_NAMED_TYPE_CHANGED #/TestMessage/1"]),
        (MSG % ("Status a = 1; message Status { string s = 1; }", ""),
         MSG % (".foo.TestMessage.Status a = 1; message Status { string s = 1; }", ""), []),
        (MSG % ("T2 a = 1;", "message T2 { string s = 1; }"), MSG % ("T2 a = 1;", "message T2 { int32 s = 1; }"),
         ["FIELD_SCALAR_KIND_CHANGED #/T2/1", "FIELD_NAMED_TYPE_CHANGED #/TestMessage/1"]),
        # labels: optional <-> repeated is fine for messages and string/bytes, not for numbers
        (MSG % ("optional T2 a = 1;", "message T2 {}"), MSG % ("repeated T2 a = 1;", "message T2 {}"), []),
        (MSG % ("optional string a = 1;", ""), MSG % ("repeated string a = 1;", ""), []),
        (MSG % ("optional int32 a = 1;", ""), MSG % ("repeated int32 a = 1;", ""), ["FIELD_NUMERIC_LABEL_CHANGED #/TestMessage/1"]),
        # messages added, reordered, removed; package and enum constant changes
        (MSG % ("string a = 1;", ""), MSG % ("string a = 1;", "message T2 { string s = 1; }"), []),
        (MSG % ("string a = 1;", "message T2 {}"), P3 + "package foo; message T2 {} message TestMessage { string a = 1; }", []),
        (MSG % ("string a = 1;", "message T2 {}"), MSG % ("string a = 1;", ""), ["MESSAGE_REMOVED #/T2"]),
        (MSG % ("string a = 1;", ""), (MSG % ("string a = 1;", "")).replace("package foo;", "package bar;"), []),
        (MSG % ("S a = 1;", "enum S { A = 0; B = 1; }"), MSG % ("S a = 1;", "enum S { A = 0; C = 1; D = 2; }"), []),
        # oneofs
        (MSG % ("string a = 1; string b = 2;", ""), MSG % ("string a = 1; oneof o { string b = 2; int32 c = 3; }", ""), []),
        (MSG % ("string a = 1; string b = 2;", ""), MSG % ("oneof o { string a = 1; string b = 2; }", ""),
         ["MULTIPLE_FIELDS_MOVED_TO_ONEOF #/TestMessage/o"]),
        (MSG % ("oneof o { string a = 1; string b = 2; }", ""), MSG % ("oneof o { string a = 1; string b = 2; int32 c = 3; }", ""), []),
        (MSG % ("oneof o { string a = 1; string b = 2; int32 c = 3; }", ""), MSG % ("oneof o { string a = 1; string b = 2; }", ""),
         ["ONEOF_FIELD_REMOVED #/TestMessage/o/3"]),
        (MSG % ("oneof o { string a = 1; } string b = 2;", ""), MSG % ("oneof o { string a = 1; string b = 2; }", ""),
         ["FIELD_MOVED_TO_EXISTING_ONEOF #/TestMessage/o"]),
        (MSG % ("oneof o { string a = 1; int32 b = 2; }", ""), MSG % ("oneof o { string a = 1; string b = 2; }", ""),
         ["FIELD_SCALAR_KIND_CHANGED #/TestMessage/o/2"]),
    ],
)
def test_confluent_protobuf_rules(original: str, update: str, incompatible: list[str]) -> None:
    assert sorted(verdict(original, update)) == sorted(incompatible)


def test_referenced_messages_are_compared_unless_the_same_subject_version() -> None:
    home_v1 = compile_(P3 + "package demo; message Home { int32 id = 1; bool on = 2; }")
    home_v2 = compile_(P3 + "package demo; message Home { string id = 1; bool on = 2; }")
    user = P3 + 'import "home.proto"; message User { demo.Home h = 1; }'
    same = [ProtoDependency("home.proto", "home", 1, home_v1)]
    assert verdict(user, user, same, same) == []
    assert sorted(verdict(user, user, same, [ProtoDependency("home.proto", "home", 2, home_v2)])) == [
        "FIELD_NAMED_TYPE_CHANGED #/User/1",
        "FIELD_SCALAR_KIND_CHANGED #/Home/1",
    ]
    # moving the message out of the import into the schema itself is compatible, the reverse is not
    local = P3 + "message User { Home h = 1; } message Home { int32 id = 1; bool on = 2; }"
    assert verdict(user, local, same, []) == []
    assert "MESSAGE_REMOVED #/Home" in verdict(local, user, [], same)
