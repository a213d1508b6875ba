"""Protobuf schemas: ``.proto`` text or a base64 ``FileDescriptorProto``, compiled by protoc.

A schema string is either ``.proto`` source (proto2 or proto3) or, as confluent-kafka's
ProtobufSerializer sends it, the base64 of a serialized ``FileDescriptorProto``. Either way it is
compiled with protoc (grpcio-tools ships it as a library, with the ``google/protobuf/*.proto``
well-known types): the schema and its references are written into a private temporary directory
under their reference names (``import "name"`` finds them there) and protoc returns a descriptor
per file, or errors with line and column that become Confluent's 42201.

A descriptor input is first printed as text (:mod:`~zurau.schema_formats.protobuf_printer`) and
that text compiled, so both inputs are validated the same way and stored as the same canonical
text; ``?format=serialized`` serves the compiled descriptor back as base64.

Compiling is pure (same text and references, same result), so results are cached (bounded LRU).
"""

from __future__ import annotations

import ast
import base64
import binascii
import os
import re
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor_pool import DescriptorPool

from zurau.schema_formats.errors import RegistryError, invalid_schema
from zurau.schema_formats.protobuf_printer import print_proto

MAIN_FILE = "__schema__.proto"  # the name the schema itself is compiled under (no reference may use it)
WELL_KNOWN_PREFIX = "google/protobuf/"
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]+$")
_CACHE_SIZE = 512


@dataclass(frozen=True)
class ProtoDependency:
    """A referenced file: its import name, where it came from (None: a well-known type) and its descriptors."""

    name: str
    subject: str | None
    version: int | None
    file: ProtobufFile


@dataclass
class ProtobufFile:
    """A compiled schema: its descriptor and, by import name, every file it (transitively) imports."""

    fdp: descriptor_pb2.FileDescriptorProto
    files: dict[str, descriptor_pb2.FileDescriptorProto] = field(default_factory=dict)
    origin: dict[str, tuple[str, int]] = field(default_factory=dict)  # import name -> (subject, version)
    _pool: DescriptorPool | None = None
    _texts: dict[bool, str] = field(default_factory=dict)

    def pool(self) -> DescriptorPool:
        """A descriptor pool holding this file and its imports (for options and type lookups)."""
        if self._pool is None:
            pool = DescriptorPool()
            added: set[str] = set()

            def add(fdp: descriptor_pb2.FileDescriptorProto) -> None:
                if fdp.name in added:
                    return
                added.add(fdp.name)
                for dep in fdp.dependency:
                    if dep in self.files:
                        add(self.files[dep])
                pool.Add(fdp)

            for name in ("google/protobuf/descriptor.proto",):
                if name not in self.files:
                    add(descriptor_pb2.FileDescriptorProto.FromString(descriptor_pb2.DESCRIPTOR.serialized_pb))
            for fdp in self.files.values():
                add(fdp)
            add(self.fdp)
            self._pool = pool
        return self._pool

    def text(self, normalize: bool = False) -> str:
        """The canonical ``.proto`` text (computed once per form)."""
        if normalize not in self._texts:
            self._texts[normalize] = print_proto(self.fdp, self.pool(), normalize)
        return self._texts[normalize]

    def serialized(self) -> str:
        """Base64 of the serialized descriptor (Confluent's ``format=serialized``)."""
        return base64.standard_b64encode(self.fdp.SerializeToString()).decode("ascii")


def _include_dir() -> str:
    import grpc_tools

    return os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")


def _safe_name(name: str) -> str:
    parts = name.split("/")
    if not name or name.startswith("/") or "\\" in name or any(p in ("", ".", "..") for p in parts):
        raise invalid_schema(f"Invalid reference name {name!r}: a relative .proto path is expected")
    return name


def _descriptors_from_generated(code: bytes) -> descriptor_pb2.FileDescriptorProto:
    """The serialized descriptor embedded in protoc's generated Python (``AddSerializedFile(b'...')``)."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "AddSerializedFile"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, bytes)
        ):
            return descriptor_pb2.FileDescriptorProto.FromString(node.args[0].value)
    raise RegistryError(500, 50001, "protoc produced no descriptor")


_lock = threading.Lock()
_cache: OrderedDict[tuple[object, ...], ProtobufFile] = OrderedDict()


def compile_proto(text: str, deps: list[ProtoDependency]) -> ProtobufFile:
    """Compile ``.proto`` source with its dependencies; 42201 with protoc's messages if invalid."""
    key = (text, tuple((d.name, d.subject, d.version, d.file.text()) for d in deps))
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    result = _compile(text, deps)
    with _lock:
        _cache[key] = result
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return result


def _compile(text: str, deps: list[ProtoDependency]) -> ProtobufFile:
    from grpc_tools import _protoc_compiler

    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    origin: dict[str, tuple[str, int]] = {}
    sources: dict[str, str] = {}
    for dep in deps:
        name = _safe_name(dep.name)
        if name == MAIN_FILE:
            raise invalid_schema(f"Invalid reference name {name!r}: reserved for the schema itself")
        sources[name] = dep.file.text()
        if dep.subject is not None and dep.version is not None:
            origin[name] = (dep.subject, dep.version)
        for sub_name, sub in dep.file.files.items():
            files.setdefault(sub_name, sub)
        for sub_name, where in dep.file.origin.items():
            origin.setdefault(sub_name, where)
        # transitive imports of a reference are written too, so protoc finds them
        for sub_name, sub in dep.file.files.items():
            if sub_name not in sources and not sub_name.startswith(WELL_KNOWN_PREFIX):
                sources[sub_name] = print_proto(sub)
    sources[MAIN_FILE] = text
    with tempfile.TemporaryDirectory(prefix="zurau-proto-") as tmp:
        for name, source in sources.items():
            path = os.path.join(tmp, *name.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
        try:
            generated = _protoc_compiler.get_protos(MAIN_FILE.encode(), [tmp.encode(), _include_dir().encode()])
        except _protoc_compiler.ProtocErrors as e:
            problems = "; ".join(
                f"{_where(err.filename.decode(errors='replace'))}{err.line + 1}:{err.column + 1}: "
                f"{err.message.decode(errors='replace')}"
                for err in e.errors()
            )
            raise invalid_schema(problems or str(e)) from None
    main: descriptor_pb2.FileDescriptorProto | None = None
    for _module_path, code in generated:
        fdp = _descriptors_from_generated(code)
        if fdp.name == MAIN_FILE:
            main = fdp
        else:
            files[fdp.name] = fdp
    if main is None:
        raise RegistryError(500, 50001, "protoc did not compile the schema")
    if main.syntax not in ("proto2", "proto3", ""):
        raise invalid_schema(f"Unsupported syntax {main.syntax!r}: proto2 and proto3 are supported")
    return ProtobufFile(main, files, origin)


def _where(filename: str) -> str:
    return "line " if filename == MAIN_FILE else f"{filename}:"


def decode_descriptor(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The descriptor a base64 schema string holds, or None if it is not base64 of one."""
    stripped = text.strip()
    if not stripped or not _BASE64.match(stripped):
        return None
    try:
        raw = base64.b64decode("".join(stripped.split()), validate=True)
        fdp = descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (binascii.Error, ValueError, Exception):  # DecodeError derives from Exception
        return None
    if not (fdp.message_type or fdp.enum_type or fdp.service or fdp.package or fdp.syntax):
        return None
    return fdp


def parse_protobuf(text: str, deps: list[ProtoDependency]) -> ProtobufFile:
    """A schema string (``.proto`` text or base64 descriptor) compiled against its references."""
    fdp = decode_descriptor(text)
    if fdp is not None:
        known = {d.name for d in deps}
        for dep in fdp.dependency:
            if dep not in known and not dep.startswith(WELL_KNOWN_PREFIX):
                raise invalid_schema(f"Import {dep!r} is not among the schema's references")
        if fdp.syntax == "editions":
            raise invalid_schema("Unsupported syntax 'editions': proto2 and proto3 are supported")
        fdp.name = MAIN_FILE
        try:
            text = print_proto(fdp, _pool_for_descriptor(fdp, deps))
        except (KeyError, IndexError) as e:
            raise invalid_schema(f"Malformed descriptor: {e}") from e
    return compile_proto(text, deps)


def _well_known(name: str) -> descriptor_pb2.FileDescriptorProto | None:
    """A ``google/protobuf/*.proto`` descriptor from the protobuf package, if it has one."""
    import importlib

    stem = name[len(WELL_KNOWN_PREFIX) :].removesuffix(".proto")
    if not stem.isidentifier():
        return None
    try:
        module = importlib.import_module(f"google.protobuf.{stem}_pb2")
    except ImportError:
        return None
    return descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)


def _pool_for_descriptor(fdp: descriptor_pb2.FileDescriptorProto, deps: list[ProtoDependency]) -> DescriptorPool | None:
    """A pool holding a sent descriptor and its imports, so its custom options print by name
    (None if the imports cannot be resolved: protoc then reports what is missing)."""
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for dep in deps:
        files.update(dep.file.files)
        named = descriptor_pb2.FileDescriptorProto()
        named.CopyFrom(dep.file.fdp)
        named.name = dep.name  # compiled alone it was MAIN_FILE; here it is imported by this name
        files[dep.name] = named
    for name in list(fdp.dependency):
        if name not in files and name.startswith(WELL_KNOWN_PREFIX):
            known = _well_known(name)
            if known is not None:
                files[name] = known
    try:
        return ProtobufFile(fdp, files).pool()
    except (TypeError, ValueError, KeyError):
        return None
