"""Avro reader/writer compatibility, per the Avro specification's schema resolution.

``check(reader, writer)`` answers "can data written with ``writer`` be read with ``reader``?" and
returns the reasons it cannot (empty: compatible). Schemas are fastavro-parsed dicts
(:func:`fastavro.parse_schema` with ``expand=False``): named types appear once in full and are
referred to later by full name, which ``named`` (full name -> definition) resolves.

Rules (Avro spec, "Schema Resolution"; Confluent runs Avro's ``SchemaCompatibility``):

* a writer union: every branch must be readable; a reader union: some branch reads the writer;
* primitives match, or the writer's promotes: int -> long, float, double; long -> float, double;
  float -> double; string <-> bytes;
* records: names match (unqualified, or the writer's full name is a reader alias); each reader field is found
  in the writer by name or by one of the field's aliases, or has a default; writer-only fields
  are skipped; matched field types are checked recursively;
* enums: names match, and every writer symbol is a reader symbol unless the reader has a default;
* arrays (items), maps (values) recursively; fixed: names and sizes equal.

Logical types are annotations on their underlying types and do not change the verdict.
"""

from __future__ import annotations

from typing import Any

PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
PROMOTIONS = {
    ("int", "long"),
    ("int", "float"),
    ("int", "double"),
    ("long", "float"),
    ("long", "double"),
    ("float", "double"),
    ("string", "bytes"),
    ("bytes", "string"),
}


def check(
    reader: Any, writer: Any, reader_named: dict[str, Any], writer_named: dict[str, Any]
) -> list[str]:
    """Reasons ``reader`` cannot read data written with ``writer`` (empty list: it can)."""
    out: list[str] = []
    _check(reader, writer, reader_named, writer_named, "", out, set())
    return out


def _resolve(schema: Any, named: dict[str, Any]) -> Any:
    while isinstance(schema, str) and schema not in PRIMITIVES:
        if schema not in named:
            return schema
        schema = named[schema]
    if isinstance(schema, dict) and schema.get("type") in PRIMITIVES:
        return schema["type"]  # {"type": "int", "logicalType": ...} reads as "int"
    return schema


def _kind(schema: Any) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, str):
        return schema
    return str(schema.get("type"))


def _aliases(schema: dict[str, Any]) -> set[str]:
    name = schema.get("name", "")
    ns = name.rsplit(".", 1)[0] if "." in name else ""
    out = set()
    for alias in schema.get("aliases", ()):
        out.add(alias if "." in alias or not ns else f"{ns}.{alias}")
        out.add(alias)
    return out


def _names_match(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    """Avro's ``schemaNameEquals``: equal unqualified names, or the writer's full name is one of
    the reader's aliases (so a namespace change alone is compatible, as in Avro's checker)."""
    r, w = reader.get("name", ""), writer.get("name", "")
    return r.rsplit(".", 1)[-1] == w.rsplit(".", 1)[-1] or w in _aliases(reader)


def _check(
    reader: Any,
    writer: Any,
    rn: dict[str, Any],
    wn: dict[str, Any],
    path: str,
    out: list[str],
    seen: set[tuple[str, str]],
) -> None:
    r, w = _resolve(reader, rn), _resolve(writer, wn)
    rk, wk = _kind(r), _kind(w)
    if wk == "union":
        for i, branch in enumerate(w):
            _check(r, branch, rn, wn, f"{path}/{i}", out, seen)
        return
    if rk == "union":
        for branch in r:
            trial: list[str] = []
            _check(branch, w, rn, wn, path, trial, set(seen))
            if not trial:
                return
        out.append(f"TYPE_MISMATCH at '{path or '/'}': the reader's union has no branch for the writer's {wk}")
        return
    if rk in PRIMITIVES or wk in PRIMITIVES:
        if rk != wk and (wk, rk) not in PROMOTIONS:
            out.append(f"TYPE_MISMATCH at '{path or '/'}': reader type {rk} cannot read writer type {wk}")
        return
    if rk != wk:
        out.append(f"TYPE_MISMATCH at '{path or '/'}': reader type {rk} cannot read writer type {wk}")
        return
    if rk == "array":
        _check(r["items"], w["items"], rn, wn, f"{path}/items", out, seen)
    elif rk == "map":
        _check(r["values"], w["values"], rn, wn, f"{path}/values", out, seen)
    elif rk == "fixed":
        if not _names_match(r, w):
            out.append(f"NAME_MISMATCH at '{path or '/'}': expected {w.get('name')}, found {r.get('name')}")
        elif r.get("size") != w.get("size"):
            out.append(f"FIXED_SIZE_MISMATCH at '{path}/size': expected {w.get('size')}, found {r.get('size')}")
    elif rk == "enum":
        if not _names_match(r, w):
            out.append(f"NAME_MISMATCH at '{path or '/'}': expected {w.get('name')}, found {r.get('name')}")
            return
        missing = [s for s in w.get("symbols", ()) if s not in r.get("symbols", ())]
        if missing and "default" not in r:
            out.append(f"MISSING_ENUM_SYMBOLS at '{path}/symbols': the reader lacks {missing}")
    elif rk == "record":
        if not _names_match(r, w):
            out.append(f"NAME_MISMATCH at '{path or '/'}': expected {w.get('name')}, found {r.get('name')}")
            return
        pair = (str(r.get("name")), str(w.get("name")))
        if pair in seen:  # recursive types: this pair is being checked further up
            return
        seen = seen | {pair}
        writer_fields = {f["name"]: f for f in w.get("fields", ())}
        for i, rf in enumerate(r.get("fields", ())):
            wf = writer_fields.get(rf["name"])
            if wf is None:
                for alias in rf.get("aliases", ()):
                    if alias in writer_fields:
                        wf = writer_fields[alias]
                        break
            if wf is None:
                if "default" not in rf:
                    out.append(
                        f"READER_FIELD_MISSING_DEFAULT_VALUE at '{path}/fields/{i}': the field "
                        f"'{rf['name']}' has no default value and is missing in the writer's schema"
                    )
                continue
            _check(rf["type"], wf["type"], rn, wn, f"{path}/fields/{i}/type", out, seen)
    else:
        out.append(f"TYPE_MISMATCH at '{path or '/'}': unknown type {rk}")
