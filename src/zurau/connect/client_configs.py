"""The security settings of a Connect worker's Kafka clients, as Kafka Connect derives them.

Security settings are ``security.protocol``, ``ssl.*``, ``sasl.*`` and
``enable.sasl.oauthbearer.unsecure.jwt`` (:mod:`zurau.client.security` lists the understood ones).

* The worker's own clients (the config, offset and status topics, the ``connect`` group, offset
  administration) use the worker's un-prefixed settings.
* The source tasks' producer uses the worker's ``producer.``-prefixed settings only, and the sink
  tasks' consumer the ``consumer.``-prefixed ones: as in Kafka Connect, they do *not* inherit the
  un-prefixed settings, so a secured cluster needs e.g. ``producer.security.protocol`` too.
* The admin client of topic creation (KIP-158) starts from the un-prefixed settings and applies
  the ``admin.``-prefixed ones on top (Kafka's backwards-compatible rule).
* A connector may override its tasks' clients with ``producer.override.*``,
  ``consumer.override.*`` and ``admin.override.*`` (KIP-458), as the worker's
  ``connector.client.config.override.policy`` allows: ``All`` (Kafka's default since 3.0) any
  setting, ``Principal`` only ``security.protocol``, ``sasl.mechanism`` and ``sasl.jaas.config``,
  ``None`` nothing. A disallowed or invalid override is a validation error of the connector's
  config (HTTP 400 when it is created).

Of the overrides, the security settings are applied; other client settings (``acks`` ...) are
accepted and not applied. Invariant: every :class:`ClientSecurity` returned here passed
:meth:`ClientSecurity.from_props`, so an ``ssl.*``/``sasl.*`` setting the client cannot honour is
refused rather than ignored.
"""

from __future__ import annotations

from collections.abc import Mapping

from zurau.client.errors import ClientConfigError
from zurau.client.security import ClientSecurity

PRODUCER, CONSUMER, ADMIN = "producer", "consumer", "admin"
CLIENT_KINDS = (PRODUCER, CONSUMER, ADMIN)
OVERRIDE_POLICY = "connector.client.config.override.policy"
POLICIES = ("All", "Principal", "None")
PRINCIPAL_OVERRIDABLE = ("security.protocol", "sasl.mechanism", "sasl.jaas.config")


def is_security_key(key: str) -> bool:
    return key in ("security.protocol", "enable.sasl.oauthbearer.unsecure.jwt") or key.startswith(("ssl.", "sasl."))


def security_props(props: Mapping[str, str], prefix: str = "") -> dict[str, str]:
    """The security settings under ``prefix`` (stripped); empty values count as unset."""
    out: dict[str, str] = {}
    for key, value in props.items():
        if key.startswith(prefix) and is_security_key(key[len(prefix):]) and str(value).strip():
            out[key[len(prefix):]] = str(value)
    return out


def client_security_props(worker_props: Mapping[str, str]) -> dict[str, str]:
    """The worker properties that are client security settings, un-prefixed or under ``producer.``,
    ``consumer.`` or ``admin.`` (prefixes kept)."""
    out: dict[str, str] = {}
    for prefix in ("", *(f"{kind}." for kind in CLIENT_KINDS)):
        out.update({prefix + k: v for k, v in security_props(worker_props, prefix).items()})
    return out


def worker_client_props(worker_props: Mapping[str, str], kind: str | None) -> dict[str, str]:
    """The security settings of the worker's own clients (``kind`` None) or of its tasks'
    producer, consumer or admin client before connector overrides (module docstring)."""
    if kind is None:
        return security_props(worker_props)
    if kind == ADMIN:
        return {**security_props(worker_props), **security_props(worker_props, "admin.")}
    return security_props(worker_props, f"{kind}.")


def parse_policy(value: str | None) -> str:
    """The override policy's canonical name; Kafka's class names are accepted too."""
    name = (value or "All").strip()
    for policy in POLICIES:
        if name.lower() in (policy.lower(), f"org.apache.kafka.connect.connector.policy.{policy}"
                                              f"ConnectorClientConfigOverridePolicy".lower()):
            return policy
    raise ClientConfigError(f"{OVERRIDE_POLICY}={value}: must be one of {', '.join(POLICIES)}")


def override_errors(worker_props: Mapping[str, str], connector_config: Mapping[str, str],
                    policy: str) -> dict[str, str]:
    """``{connector setting: error}`` for the client overrides ``policy`` (see
    :func:`parse_policy`) does not allow (Kafka's message), or whose resulting security settings
    are invalid."""
    errors: dict[str, str] = {}
    for kind in CLIENT_KINDS:
        prefix = f"{kind}.override."
        keys = [key for key in connector_config if key.startswith(prefix)]
        for key in keys:
            name = key[len(prefix):]
            if policy == "None" or (policy == "Principal" and name not in PRINCIPAL_OVERRIDABLE):
                errors[key] = (f"The '{policy}' policy does not allow '{name}' to be overridden in the "
                               "connector configuration.")
        security_keys = [key for key in keys if is_security_key(key[len(prefix):]) and key not in errors]
        if security_keys:
            try:
                task_client_security(worker_props, kind, connector_config)
            except ClientConfigError as e:
                for key in security_keys:
                    errors[key] = f"the tasks' {kind} client: {e}"
    return errors


def task_client_security(worker_props: Mapping[str, str], kind: str,
                         connector_config: Mapping[str, str]) -> ClientSecurity:
    """The security of a task's ``kind`` client: the worker's settings for it, then the
    connector's ``<kind>.override.*`` security settings (checked by :func:`override_errors`)."""
    props = {**worker_client_props(worker_props, kind), **security_props(connector_config, f"{kind}.override.")}
    return ClientSecurity.from_props(props)


def check_worker_clients(worker_props: Mapping[str, str]) -> None:
    """Raise :class:`ClientConfigError` (naming the client) unless every client's settings are valid."""
    for kind in (None, *CLIENT_KINDS):
        try:
            ClientSecurity.from_props(worker_client_props(worker_props, kind))
        except ClientConfigError as e:
            where = f"the tasks' {kind} ({kind}.*)" if kind else "the worker's clients"
            raise ClientConfigError(f"{where}: {e}") from None
    parse_policy(worker_props.get(OVERRIDE_POLICY))
