"""Generate :mod:`zurau.protocol.messages`: a ``TypedDict`` per message, from our schemas.

Run ``python -m zurau.protocol.gen_types`` after changing a schema (``--check`` only compares and
exits 1 when the checked-in file is stale; ``tests/unit/test_messages_generated.py`` does the
same). :func:`render` is pure; only :func:`main` touches the file system.

What is generated, and the choices made:

* One class per API body, named ``<Api>Request`` / ``<Api>Response`` (``FetchRequest``), one per
  data struct (``ConsumerProtocolSubscription``), and one per nested struct, named by its path:
  the parent's class name followed by the field's name in CamelCase (``FetchRequestTopics`` is an
  element of ``FetchRequest["topics"]``, ``FetchRequestTopicsPartitions`` one of its partitions).
  Nested classes come before the classes that use them.
* A class covers the union of all versions of its message: every field of the schema is a key,
  whatever the version; a comment on each field gives the versions it exists in (when not all),
  where it may be null and where it is tagged.
* Every key is ``NotRequired`` (``total=False``): the encoder fills a missing key with its default,
  so a message being built names only what it needs. The decoder, for its part, always returns
  every key (fields absent from the decoded version hold their default), so ``msg["key"]`` is safe
  on a decoded message.
* Value types are what the codec decodes: ints for every integer width, ``float``, ``bool``,
  ``str``, ``bytes``, ``uuid.UUID``, lists for arrays, nested classes for structs, and ``| None``
  where some version allows null. Records fields are :data:`Records` (``Any``): a ``memoryview``
  when decoded, and any bytes-like object or a file region to be sent without copying when
  encoded.
"""

from __future__ import annotations

import argparse
import keyword
import sys
from pathlib import Path

from zurau.protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UINT16,
    UUID,
    ApiSchema,
    Array,
    DataSchema,
    Field,
    FieldType,
    Struct,
    parse_versions,
)
from zurau.protocol.schemas import ALL, DATA

TARGET = Path(__file__).with_name("messages.py")

_SCALARS = {
    INT8: "int",
    INT16: "int",
    INT32: "int",
    INT64: "int",
    UINT16: "int",
    FLOAT64: "float",
    BOOL: "bool",
    STRING: "str",
    BYTES: "bytes",
    RECORDS: "Records",
    UUID: "uuid.UUID",
}

_HEADER = '''"""Typed views of every message Zurau has a schema for. GENERATED: do not edit.

Regenerate with ``python -m zurau.protocol.gen_types`` after changing a schema in
:mod:`zurau.protocol.schemas`; a unit test fails while this file is stale. See
:mod:`zurau.protocol.gen_types` for the naming and typing rules. In short: one ``TypedDict`` per
request, response, data struct and nested struct; each covers all versions of its message; every
key may be left out when encoding (it takes its default) and is present after decoding.
"""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

Records = Any
"""A records field: a ``memoryview`` when decoded; bytes-like or a sendfile region when encoded."""
'''


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _spec(rng: tuple[int, int]) -> str:
    lo, hi = rng
    if hi >= 1 << 15:
        return f"v{lo}+"
    return f"v{lo}" if lo == hi else f"v{lo}-{hi}"


def _is_empty(rng: tuple[int, int]) -> bool:
    return rng[0] > rng[1]


class _Renderer:
    """Collects class definitions; nested classes are appended before the class that uses them."""

    def __init__(self) -> None:
        self.classes: list[tuple[str, list[str], list[str]]] = []  # name, docstring parts, field lines
        self.names: set[str] = set()
        self.shared: dict[Struct, str] = {}  # within one message: identical structs share a class
        self.uses: dict[str, list[str]] = {}

    def message(self, class_name: str, fields: tuple[Field, ...], doc: str, lo: int, hi: int) -> None:
        self.shared = {}
        self.uses = {}
        self._struct(class_name, fields, doc, lo, hi)

    def _struct(self, class_name: str, fields: tuple[Field, ...], doc: str, lo: int, hi: int) -> None:
        if class_name in self.names:
            raise ValueError(f"two messages would both be called {class_name}")
        self.names.add(class_name)
        body = []
        for f in fields:
            if not f.name.isidentifier() or keyword.iskeyword(f.name):
                raise ValueError(f"{class_name}.{f.name} cannot be a TypedDict key")
            py = self._type(f.type, f"{class_name}{_camel(f.name)}", f"{class_name}.{f.name}", lo, hi)
            if not _is_empty(f.nullable_range):
                py += " | None"
            notes = []
            vr = f.version_range
            if vr[0] > lo or vr[1] < hi:
                notes.append(_spec(vr) if not _is_empty(vr) else "no version")
            if not _is_empty(f.nullable_range):
                notes.append(f"nullable {_spec(f.nullable_range)}")
            if f.tag is not None and not _is_empty(f.tagged_range):
                notes.append(f"tagged {_spec(f.tagged_range)} (tag {f.tag})")
            comment = f"  # {', '.join(notes)}" if notes else ""
            body.append(f"    {f.name}: {py}{comment}")
        # A shared struct's uses are all known only once the message is done: keep the list.
        self.classes.append((class_name, self.uses.get(class_name, [doc]), body))

    def text(self) -> str:
        blocks = []
        for name, doc, body in self.classes:
            one_line = f'    """{" ".join(doc)}"""'
            docstring = one_line if len(one_line) <= 110 else '    """' + "\n    ".join(doc) + '\n    """'
            head = [f"class {name}(TypedDict, total=False):", docstring]
            blocks.append("\n".join(head + ([""] + body if body else [])))
        return "".join(f"\n\n{block}\n" for block in blocks)

    def _type(
        self, t: FieldType, nested_name: str, field_name: str, lo: int, hi: int, element: bool = False
    ) -> str:
        if isinstance(t, Array):
            return f"list[{self._type(t.of, nested_name, field_name, lo, hi, element=True)}]"
        if isinstance(t, Struct):
            use = f"{'An element' if element else 'The value'} of ``{field_name}``."
            name = self.shared.get(t)
            if name is not None:
                self.uses[name].append(use.replace("An ", "Also an ").replace("The ", "Also the "))
                return name
            self.shared[t] = nested_name
            self.uses[nested_name] = [use]
            self._struct(nested_name, t.fields, use, lo, hi)
            return nested_name
        try:
            return _SCALARS[t]
        except KeyError:
            raise ValueError(f"unknown type {t!r} of {field_name}") from None


def _api_doc(schema: ApiSchema, kind: str) -> str:
    flexible = parse_versions(schema.flexible)
    flex = f"; flexible {_spec(flexible)}" if not _is_empty(flexible) else ""
    return f"{schema.name} {kind} (api key {schema.key}), v{schema.min_version}-{schema.max_version}{flex}."


def render() -> str:
    """The text of ``messages.py`` for the schemas as they are now."""
    r = _Renderer()
    for key in sorted(ALL):
        schema = ALL[key]
        lo, hi = schema.min_version, schema.max_version
        r.message(f"{schema.name}Request", schema.request, _api_doc(schema, "request"), lo, hi)
        r.message(f"{schema.name}Response", schema.response, _api_doc(schema, "response"), lo, hi)
    for name in sorted(DATA):
        data: DataSchema = DATA[name]
        doc = f"{data.name}, v{data.min_version}-{data.max_version} (a data struct, not an API body)."
        r.message(data.name, data.fields, doc, data.min_version, data.max_version)
    return _HEADER + r.text()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m zurau.protocol.gen_types", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--check", action="store_true", help="only report whether messages.py is up to date")
    parser.add_argument("--output", type=Path, default=TARGET, help=f"file to write (default {TARGET})")
    args = parser.parse_args(argv)
    text = render()
    current = args.output.read_text(encoding="utf-8") if args.output.exists() else None
    if args.check:
        if current != text:
            print(f"{args.output} is stale: run python -m zurau.protocol.gen_types", file=sys.stderr)
            return 1
        return 0
    if current != text:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
