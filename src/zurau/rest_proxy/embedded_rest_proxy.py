"""``EmbeddedRestProxy``: a REST proxy in this process, for tests.

Runs :class:`~zurau.rest_proxy.server.RestProxyServer` on its own thread and event loop,
listening on an ephemeral 127.0.0.1 port, against any Kafka-compatible bootstrap server::

    with EmbeddedBroker() as broker, EmbeddedRestProxy(broker.bootstrap_servers) as proxy:
        requests.get(f"{proxy.url}/v3/clusters")

Extra keyword arguments are proxy properties with dots or underscores
(``consumer_instance_timeout_ms=1000``, ``**{"schema.registry.url": registry.url}``).
"""

from __future__ import annotations

from typing import Any

from zurau.edge_service import EmbeddedService
from zurau.rest_proxy.proxy_config import RestProxyConfig
from zurau.rest_proxy.server import RestProxyServer


class EmbeddedRestProxy(EmbeddedService[RestProxyServer]):
    thread_name = "zurau-embedded-rest-proxy"

    def __init__(self, bootstrap_servers: str, **props: Any) -> None:
        super().__init__()
        values = {"listeners": "http://127.0.0.1:0", "bootstrap.servers": bootstrap_servers}
        values.update({k.replace("_", "."): str(v) for k, v in props.items()})
        self.config = RestProxyConfig.from_props(values)

    def new_server(self) -> RestProxyServer:
        return RestProxyServer(self.config)

    def start(self) -> EmbeddedRestProxy:
        super().start()
        return self

    def __enter__(self) -> EmbeddedRestProxy:
        return self.start()
