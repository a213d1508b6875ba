"""The console's settings: where it listens and which services it shows.

``bootstrap_servers`` is any Kafka-compatible cluster (Kafka's ``host:port[,host:port]``);
``registry_url``, ``connect_url`` and ``metrics_url`` are optional: a page for a service that is
not configured says so instead of failing. ``lag_sample_interval`` is the seconds between two lag
samples of a watched group (see :mod:`~zurau.console.groups_view`).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from zurau.client.config import ClientConfig, parse_bootstrap
from zurau.client.errors import ClientConfigError


class ConsoleConfigError(ValueError):
    pass


def _url(name: str, value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    parsed = urlparse(value.strip())
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConsoleConfigError(f"{name} must be an http(s) URL like http://127.0.0.1:8081, not {value!r}")
    return value.strip().rstrip("/")


@dataclass(frozen=True)
class ConsoleConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    bootstrap_servers: str = "127.0.0.1:9092"
    registry_url: str | None = None
    connect_url: str | None = None
    metrics_url: str | None = None
    lag_sample_interval: float = 5.0
    request_timeout_ms: int = 15_000

    @classmethod
    def create(
        cls,
        *,
        host: str = "127.0.0.1",
        port: int = 8080,
        bootstrap_servers: str = "127.0.0.1:9092",
        registry_url: str | None = None,
        connect_url: str | None = None,
        metrics_url: str | None = None,
        lag_sample_interval: float = 5.0,
        request_timeout_ms: int = 15_000,
    ) -> ConsoleConfig:
        """Checked construction: raises :class:`ConsoleConfigError` naming the bad setting."""
        if not 0 <= port <= 65535:
            raise ConsoleConfigError(f"--port must be 0-65535, not {port}")
        try:
            parse_bootstrap(bootstrap_servers)
        except ClientConfigError as e:
            raise ConsoleConfigError(f"--bootstrap-server: {e}") from None
        if not lag_sample_interval > 0:
            raise ConsoleConfigError("the lag sample interval must be positive")
        return cls(
            host=host,
            port=port,
            bootstrap_servers=bootstrap_servers,
            registry_url=_url("--registry-url", registry_url),
            connect_url=_url("--connect-url", connect_url),
            metrics_url=_url("--metrics-url", metrics_url),
            lag_sample_interval=lag_sample_interval,
            request_timeout_ms=request_timeout_ms,
        )

    def client_config(self) -> ClientConfig:
        return ClientConfig(
            bootstrap_servers=parse_bootstrap(self.bootstrap_servers),
            client_id="zurau-console",
            request_timeout_ms=self.request_timeout_ms,
            connection_setup_timeout_ms=min(5_000, self.request_timeout_ms),
        )


__all__ = ["ConsoleConfig", "ConsoleConfigError"]
