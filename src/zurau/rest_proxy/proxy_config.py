"""The REST proxy's configuration, with Confluent kafka-rest's property names.

* ``listeners`` (default ``http://127.0.0.1:8082``; Confluent binds ``0.0.0.0``): the first
  listener is served, ``http://`` or ``https://`` (then ``ssl.keystore.location`` is a PEM file
  holding the certificate chain and the private key, or ``ssl.certificate.location`` and
  ``ssl.key.location`` name two PEM files; ``ssl.key.password`` decrypts the key);
* ``bootstrap.servers`` (default ``127.0.0.1:9092``; ``PLAINTEXT://`` prefixes are dropped);
* ``client.*``: Kafka client settings for every client the proxy opens (``client.security.protocol``,
  ``client.sasl.mechanism``, ``client.ssl.ca.location`` ...; see :mod:`zurau.client.security`);
  ``producer.*`` and ``consumer.*`` apply to the producer / to the consumers only, and win over
  ``client.*`` there;
* ``schema.registry.url``: the registry for AVRO, JSONSCHEMA and PROTOBUF records (unset: those
  formats are refused with 42206);
* ``id`` (default empty) names this instance in consumer instance URLs and client ids;
  ``host.name`` is the host put in the ``base_uri`` of v2 consumer instances (default: the
  listener's host);
* ``consumer.instance.timeout.ms`` (300000): a v2 consumer instance not used for this long is
  closed and leaves its group; ``consumer.request.timeout.ms`` (1000): how long a v2 poll waits
  for records; ``consumer.request.max.bytes`` (67108864): most bytes one v2 poll returns;
* ``max.request.bytes`` (Zurau's, default 64 MiB): largest request body that is not a stream of
  records (larger: 413); each record of a streamed produce is held to ``producer.max.request.size``;
* ``authentication.method`` (``NONE`` or ``BASIC``), ``authentication.realm`` (``KafkaRest``),
  ``authentication.roles`` (``*``), and the users: ``authentication.users.file`` (Zurau's name
  for the file Confluent reaches through a JAAS ``PropertyFileLoginModule``; Jetty's format
  ``user: password[,role...]``) or ``java.security.auth.login.config`` (a JAAS file whose
  ``KafkaRest`` entry names that file with ``file="..."``).

Unknown keys are kept in ``extra`` and otherwise ignored, as Confluent ignores them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from zurau.client.config import ClientConfig
from zurau.client.errors import ClientConfigError
from zurau.config import ConfigDef, ConfigError, ConfigType, Range, ValidString

CLIENT_PREFIX = "client."
PRODUCER_PREFIX = "producer."
CONSUMER_PREFIX = "consumer."

_INT, _STR, _LIST = ConfigType.INT, ConfigType.STRING, ConfigType.LIST

#: The proxy's own settings (``listeners``, ``bootstrap.servers`` and the prefixed client
#: settings are read apart: see :meth:`RestProxyConfig.from_props`).
REST_PROXY_CONFIG = (
    ConfigDef()
    .define("schema.registry.url", _STR, None, documentation="Schema registry URL (first of a list).")
    .define("id", _STR, "", documentation="This instance's id (consumer instance URLs, client ids).")
    .define("host.name", _STR, None, documentation="Host name in the base_uri of v2 consumer instances.")
    .define("consumer.instance.timeout.ms", _INT, 300_000, validator=Range.at_least(1),
            documentation="Idle time after which a v2 consumer instance is closed.")
    .define("consumer.request.timeout.ms", _INT, 1_000, validator=Range.at_least(0),
            documentation="Longest wait of a v2 poll for records.")
    .define("consumer.request.max.bytes", _INT, 67_108_864, validator=Range.at_least(1),
            documentation="Most bytes of records one v2 poll returns.")
    .define("max.request.bytes", _INT, 64 * 1024 * 1024, validator=Range.at_least(1024),
            documentation="Largest request body that is not a stream of records.")
    .define("authentication.method", _STR, "NONE", validator=ValidString(("NONE", "BASIC"), case_insensitive=True),
            documentation="NONE or BASIC (HTTP basic authentication).")
    .define("authentication.realm", _STR, "KafkaRest", documentation="Realm of the basic authentication.")
    .define("authentication.roles", _LIST, "*", documentation="Roles allowed in; * for every user.")
    .define("authentication.users.file", _STR, None, documentation="Users file: user: password[,role...].")
    .define("java.security.auth.login.config", _STR, None, documentation="JAAS file naming the users file.")
    .define("ssl.keystore.location", _STR, None, documentation="PEM file: certificate chain and key (https).")
    .define("ssl.certificate.location", _STR, None, documentation="PEM certificate chain (https).")
    .define("ssl.key.location", _STR, None, documentation="PEM private key (https).")
    .define("ssl.key.password", _STR, None, documentation="Password of the private key.", sensitive=True)
)

_FIELDS = {
    "schema.registry.url": "schema_registry_url",
    "id": "instance_id",
    "host.name": "host_name",
    "consumer.instance.timeout.ms": "consumer_instance_timeout_ms",
    "consumer.request.timeout.ms": "consumer_request_timeout_ms",
    "consumer.request.max.bytes": "consumer_request_max_bytes",
    "max.request.bytes": "max_request_bytes",
    "authentication.method": "auth_method",
    "authentication.realm": "auth_realm",
    "authentication.roles": "auth_roles",
    "authentication.users.file": "users_file",
    "java.security.auth.login.config": "jaas_config",
    "ssl.keystore.location": "ssl_keystore_location",
    "ssl.certificate.location": "ssl_certificate_location",
    "ssl.key.location": "ssl_key_location",
    "ssl.key.password": "ssl_key_password",
}


class RestProxyConfigError(ValueError):
    pass


@dataclass(frozen=True)
class RestProxyConfig:
    scheme: str = "http"
    host: str = "127.0.0.1"
    port: int = 8082
    bootstrap_servers: str = "127.0.0.1:9092"
    schema_registry_url: str | None = None
    instance_id: str = ""
    host_name: str | None = None
    consumer_instance_timeout_ms: int = 300_000
    consumer_request_timeout_ms: int = 1_000
    consumer_request_max_bytes: int = 67_108_864
    max_request_bytes: int = 64 * 1024 * 1024
    auth_method: str = "NONE"
    auth_realm: str = "KafkaRest"
    auth_roles: tuple[str, ...] = ("*",)
    users_file: str | None = None
    jaas_config: str | None = None
    ssl_keystore_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: str | None = None
    client_props: Mapping[str, str] = field(default_factory=dict)
    producer_props: Mapping[str, str] = field(default_factory=dict)
    consumer_props: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> RestProxyConfig:
        kw: dict[str, Any] = {}
        own: dict[str, str] = {}
        client: dict[str, str] = {}
        producer: dict[str, str] = {}
        consumer: dict[str, str] = {}
        extra: dict[str, str] = {}
        for key, raw in props.items():
            value = str(raw).strip()
            if key == "listeners":
                first = value.split(",")[0].strip()
                url = urlsplit(first if "://" in first else f"http://{first}")
                if url.scheme not in ("http", "https"):
                    raise RestProxyConfigError(f"listeners={value}: only http and https listeners are supported")
                if url.port is None:
                    raise RestProxyConfigError(f"listeners={value}: a port is required")
                kw["scheme"] = url.scheme
                kw["host"] = url.hostname or "0.0.0.0"
                kw["port"] = url.port
            elif key == "bootstrap.servers":
                servers = [s.strip().split("://", 1)[-1] for s in value.split(",") if s.strip()]
                if not servers:
                    raise RestProxyConfigError("bootstrap.servers is empty")
                kw["bootstrap_servers"] = ",".join(servers)
            elif key in _FIELDS:
                own[key] = value
            elif key.startswith(CLIENT_PREFIX):
                client[key[len(CLIENT_PREFIX):]] = value
            elif key.startswith(PRODUCER_PREFIX):
                producer[key[len(PRODUCER_PREFIX):]] = value
            elif key.startswith(CONSUMER_PREFIX):
                consumer[key[len(CONSUMER_PREFIX):]] = value
            else:
                extra[key] = value
        try:
            parsed = REST_PROXY_CONFIG.parse({k: v for k, v in own.items() if v != "" or k == "id"})
        except ConfigError as e:
            raise RestProxyConfigError(str(e)) from None
        for key, name in _FIELDS.items():
            setting: Any = parsed[key]
            if key == "authentication.method":
                setting = setting.upper()
            elif key == "authentication.roles":
                setting = tuple(r for r in setting if r) or ("*",)
            elif key == "schema.registry.url" and setting:
                setting = setting.split(",")[0].strip().rstrip("/")
            kw[name] = setting
        kw.update(client_props=client, producer_props=producer, consumer_props=consumer, extra=extra)
        config = cls(**kw)
        if config.scheme == "https" and not (config.ssl_keystore_location or config.ssl_certificate_location):
            raise RestProxyConfigError("an https listener needs ssl.keystore.location or ssl.certificate.location")
        config.client_config()  # refuses client settings the client does not understand, at start-up
        return config

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def client_config(self, role: str | None = None, overrides: Mapping[str, str] | None = None) -> ClientConfig:
        """The Kafka client settings of the proxy's clients: ``client.*``, then ``producer.*``
        or ``consumer.*`` for ``role``, then ``overrides`` (a user's SASL credentials)."""
        props = {"bootstrap.servers": self.bootstrap_servers, "client.id": f"zurau-rest-proxy{'-' + self.instance_id if self.instance_id else ''}"}
        props.update(self.client_props)
        if role == "producer":
            props.update(self.producer_props)
        elif role == "consumer":
            props.update(self.consumer_props)
        props.update(overrides or {})
        try:
            return ClientConfig.from_props(props)
        except ClientConfigError as e:
            raise RestProxyConfigError(f"the Kafka client settings (client.*): {e}") from None
