"""``zurau schemas``: list, get, register, check, delete and configure schemas in a registry
that speaks Confluent Schema Registry's REST API (``--registry``, default http://127.0.0.1:8081).

The schema type of a file comes from ``--type`` or its extension: ``.avsc`` AVRO, ``.proto``
PROTOBUF, ``.json`` JSON. References are ``--reference name=subject:version`` (repeatable).
Registry errors print as ``error: <message> (error_code N)`` and exit 1; ``check`` exits 1 when
the schema is incompatible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from zurau.cli.common import CommandError
from zurau.cli.output import fail, print_json, print_lines
from zurau.cli.registry_client import DEFAULT_URL, RegistryClient, subject_path

app = typer.Typer(help="Manage schemas in a (Confluent-compatible) schema registry.", no_args_is_help=True)

RegistryOption = typer.Option(DEFAULT_URL, "--registry", "-r", help="Schema registry URL")
_BY_SUFFIX = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}
TYPES = ("AVRO", "JSON", "PROTOBUF")


def _guarded(action: Any) -> Any:
    try:
        return action()
    except CommandError as e:
        fail(str(e))


def _schema_body(file: Path, schema_type: str | None, references: list[str]) -> dict[str, Any]:
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as e:
        raise CommandError(f"cannot read {file}: {e.strerror or e}") from None
    kind = (schema_type or _BY_SUFFIX.get(file.suffix.lower(), "")).upper()
    if kind not in TYPES:
        raise CommandError(f"cannot tell the schema type of {file.name}: give --type {'|'.join(TYPES)}")
    refs = []
    for ref in references:
        name, eq, rest = ref.partition("=")
        subject, colon, version = rest.rpartition(":")
        if not (eq and colon and name and subject and version.lstrip("-").isdigit()):
            raise CommandError(f"--reference must be name=subject:version, not {ref!r}")
        refs.append({"name": name, "subject": subject, "version": int(version)})
    body: dict[str, Any] = {"schema": text, "schemaType": kind}
    if refs:
        body["references"] = refs
    return body


@app.command("list")
def list_subjects(
    registry: str = RegistryOption,
    prefix: str | None = typer.Option(None, "--prefix", help="Only subjects starting with this"),
    deleted: bool = typer.Option(False, "--deleted", help="Include soft-deleted subjects"),
) -> None:
    """List subjects."""
    client = RegistryClient(registry)
    print_lines(_guarded(lambda: client.get("/subjects", subjectPrefix=prefix, deleted=deleted or None)))


@app.command("get")
def get(
    subject: str | None = typer.Argument(None, help="Subject (or give --id)"),
    version: str = typer.Option("latest", "--version", "-v", help="Version number or latest"),
    schema_id: int | None = typer.Option(None, "--id", help="Get the schema with this id instead"),
    registry: str = RegistryOption,
    raw: bool = typer.Option(False, "--raw", help="Print only the schema text"),
) -> None:
    """Print a subject's version (subject, version, id, schema) or the schema with an id."""
    client = RegistryClient(registry)
    if schema_id is None and subject is None:
        fail("give a subject or --id")
    found = _guarded(lambda: client.schema_by_id(schema_id) if schema_id is not None else client.version(subject or "", version))
    if raw:
        print_lines([found["schema"]])
    else:
        print_json(found)


@app.command("register")
def register(
    subject: str = typer.Argument(..., help="Subject to register under"),
    file: Path = typer.Argument(..., help="Schema file (.avsc, .json, .proto)"),
    schema_type: str | None = typer.Option(None, "--type", "-t", help="AVRO, JSON or PROTOBUF"),
    reference: list[str] = typer.Option([], "--reference", help="name=subject:version (repeatable)"),
    normalize: bool = typer.Option(False, "--normalize", help="Normalize the schema first"),
    registry: str = RegistryOption,
) -> None:
    """Register a schema; prints its id."""
    client = RegistryClient(registry)
    body = _guarded(lambda: _schema_body(file, schema_type, reference))
    result = _guarded(
        lambda: client.request("POST", f"/subjects/{subject_path(subject)}/versions", body, normalize=normalize or None)
    )
    print_lines([str(result["id"])])


@app.command("check")
def check(
    subject: str = typer.Argument(..., help="Subject to check against"),
    file: Path = typer.Argument(..., help="Schema file (.avsc, .json, .proto)"),
    version: str = typer.Option("latest", "--version", "-v", help="Version to check against (or all)"),
    schema_type: str | None = typer.Option(None, "--type", "-t", help="AVRO, JSON or PROTOBUF"),
    reference: list[str] = typer.Option([], "--reference", help="name=subject:version (repeatable)"),
    registry: str = RegistryOption,
) -> None:
    """Check a schema against the subject's compatibility level; exit 1 when incompatible."""
    client = RegistryClient(registry)
    body = _guarded(lambda: _schema_body(file, schema_type, reference))
    path = f"/compatibility/subjects/{subject_path(subject)}/versions"
    if version != "all":
        path += f"/{version}"
    result = _guarded(lambda: client.request("POST", path, body, verbose=True))
    if result.get("is_compatible"):
        print_lines(["compatible"])
        return
    print_lines(["incompatible", *(f"  {m}" for m in result.get("messages", []))])
    raise typer.Exit(1)


@app.command("delete")
def delete(
    subject: str = typer.Argument(..., help="Subject"),
    version: str | None = typer.Option(None, "--version", "-v", help="Only this version (number or latest)"),
    permanent: bool = typer.Option(False, "--permanent", help="Hard delete (after a soft delete)"),
    registry: str = RegistryOption,
) -> None:
    """Delete a subject (or one version): soft, or permanent with --permanent."""
    client = RegistryClient(registry)
    path = f"/subjects/{subject_path(subject)}" + (f"/versions/{version}" if version is not None else "")
    result = _guarded(lambda: client.request("DELETE", path, permanent=permanent or None))
    print_lines([str(v) for v in result] if isinstance(result, list) else [str(result)])


@app.command("config")
def config(
    subject: str | None = typer.Argument(None, help="Subject (default: the global level)"),
    set_level: str | None = typer.Option(None, "--set", help="New compatibility level (BACKWARD, FULL_TRANSITIVE ...)"),
    registry: str = RegistryOption,
) -> None:
    """Print (or --set) the compatibility level, global or of a subject."""
    client = RegistryClient(registry)
    path = "/config" + (f"/{subject_path(subject)}" if subject is not None else "")
    if set_level is not None:
        result = _guarded(lambda: client.request("PUT", path, {"compatibility": set_level.upper()}))
        print_lines([result["compatibility"]])
    else:
        result = _guarded(lambda: client.get(path, defaultToGlobal=True if subject is not None else None))
        print_lines([result["compatibilityLevel"]])
