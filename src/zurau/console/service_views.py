"""The schema registry, Kafka Connect and REST proxy pages, over their REST APIs.

Registry (Confluent's API): subjects, a subject's versions, one version, and a line diff between
two versions of a subject. Schemas are compared pretty-printed (JSON re-indented by two spaces,
keys in their stored order; other text as given), so that a diff shows the fields that changed
rather than one long line.

Connect (Kafka's REST API): connectors with their status (``/connectors?expand=status&expand=info``),
one connector's status and config, and restarts of a connector (``includeTasks``, ``onlyFailed``)
or one task.

REST proxy (Confluent's v3 API): whether it answers ``GET /v3/clusters`` (its latency, the
clusters it serves and whether one is the console's cluster). A proxy that asks for credentials
(401/403) is up; one that cannot be reached or answers 5xx is down, with the reason.
"""

from __future__ import annotations

import difflib
import json
import time
from typing import Any
from urllib.parse import quote

from zurau.console.service_clients import ConnectClient, RegistryClient, RestProxyClient, ServiceError


def _seg(text: str) -> str:
    return quote(text, safe="")


def pretty_schema(schema: str) -> str:
    try:
        return json.dumps(json.loads(schema), indent=2, ensure_ascii=False)
    except ValueError:
        return schema


async def subjects(reg: RegistryClient) -> dict[str, Any]:
    names = await reg.get_json("/subjects")
    out = []
    for name in sorted(names):
        versions = await reg.get_json(f"/subjects/{_seg(name)}/versions")
        out.append({"subject": name, "versions": versions, "latest": max(versions) if versions else None})
    return {"subjects": out}


async def subject_version(reg: RegistryClient, subject: str, version: str) -> dict[str, Any]:
    doc = await reg.get_json(f"/subjects/{_seg(subject)}/versions/{_seg(version)}")
    return {
        "subject": doc.get("subject", subject),
        "version": doc.get("version"),
        "id": doc.get("id"),
        "schema_type": doc.get("schemaType", "AVRO"),
        "schema": pretty_schema(doc.get("schema", "")),
        "references": doc.get("references", []),
    }


async def subject_versions(reg: RegistryClient, subject: str) -> dict[str, Any]:
    versions = await reg.get_json(f"/subjects/{_seg(subject)}/versions")
    latest = await subject_version(reg, subject, "latest") if versions else None
    compat: str | None = None
    try:
        cfg = await reg.get_json(f"/config/{_seg(subject)}", params={"defaultToGlobal": "true"})
        compat = cfg.get("compatibilityLevel") or cfg.get("compatibility")
    except ServiceError:
        compat = None
    return {"subject": subject, "versions": versions, "latest": latest, "compatibility": compat}


async def diff(reg: RegistryClient, subject: str, old: str, new: str) -> dict[str, Any]:
    a = await subject_version(reg, subject, old)
    b = await subject_version(reg, subject, new)
    lines = list(
        difflib.unified_diff(
            a["schema"].splitlines(),
            b["schema"].splitlines(),
            fromfile=f"{subject} v{a['version']}",
            tofile=f"{subject} v{b['version']}",
            lineterm="",
            n=3,
        )
    )
    return {
        "subject": subject,
        "from": a,
        "to": b,
        "diff": lines,
        "added": sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++")),
        "removed": sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---")),
    }


async def connectors(conn: ConnectClient) -> dict[str, Any]:
    found = await conn.get_json("/connectors", params=[("expand", "status"), ("expand", "info")])
    out = []
    # Connect answers a name list without ?expand support (old workers); ask each one then.
    if isinstance(found, list):
        found = {name: {"status": await conn.get_json(f"/connectors/{_seg(name)}/status")} for name in found}
    for name in sorted(found):
        entry = found[name] or {}
        status = entry.get("status") or {}
        info = entry.get("info") or {}
        tasks = status.get("tasks") or []
        out.append(
            {
                "name": name,
                "type": status.get("type") or info.get("type"),
                "state": (status.get("connector") or {}).get("state"),
                "worker": (status.get("connector") or {}).get("worker_id"),
                "class": (info.get("config") or {}).get("connector.class"),
                "tasks": [
                    {"id": t.get("id"), "state": t.get("state"), "worker": t.get("worker_id"), "trace": t.get("trace")}
                    for t in tasks
                ],
                "failed_tasks": sum(1 for t in tasks if t.get("state") == "FAILED"),
            }
        )
    return {"connectors": out}


async def connector(conn: ConnectClient, name: str) -> dict[str, Any]:
    status = await conn.get_json(f"/connectors/{_seg(name)}/status")
    config = await conn.get_json(f"/connectors/{_seg(name)}/config")
    return {"name": name, "status": status, "config": config}


async def restart(conn: ConnectClient, name: str, include_tasks: bool, only_failed: bool) -> dict[str, Any]:
    params = {"includeTasks": str(include_tasks).lower(), "onlyFailed": str(only_failed).lower()}
    body = await conn.send_json("POST", f"/connectors/{_seg(name)}/restart", params=params)
    return {"restarted": name, "answer": body}


async def restart_task(conn: ConnectClient, name: str, task: int) -> dict[str, Any]:
    await conn.send_json("POST", f"/connectors/{_seg(name)}/tasks/{task}/restart")
    return {"restarted": f"{name}/{task}"}


async def rest_proxy_status(proxy: RestProxyClient, cluster_id: str | None) -> dict[str, Any]:
    """Whether the proxy is up and which clusters it serves (``cluster_id``: the console's)."""
    out: dict[str, Any] = {"url": proxy.base_url, "up": False, "auth_required": False, "latency_ms": None,
                           "clusters": [], "same_cluster": None, "error": None}
    started = time.monotonic()
    try:
        doc = await proxy.get_json("/v3/clusters")
    except ServiceError as e:
        out["latency_ms"] = round((time.monotonic() - started) * 1000, 1)
        if e.status in (401, 403):  # it answered: up, but the console holds no credentials for it
            out.update(up=True, auth_required=True, error=e.message)
        else:
            out["error"] = e.message
        return out
    out["latency_ms"] = round((time.monotonic() - started) * 1000, 1)
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        out["error"] = "REST proxy: GET /v3/clusters did not answer a KafkaClusterList"
        return out
    clusters = [
        {"cluster_id": c.get("cluster_id"), "self": (c.get("metadata") or {}).get("self")}
        for c in data
        if isinstance(c, dict)
    ]
    out.update(up=True, clusters=clusters)
    if cluster_id:
        out["same_cluster"] = any(c["cluster_id"] == cluster_id for c in clusters)
    return out


__all__ = [
    "connector",
    "connectors",
    "diff",
    "pretty_schema",
    "restart",
    "restart_task",
    "rest_proxy_status",
    "subject_version",
    "subject_versions",
    "subjects",
]
