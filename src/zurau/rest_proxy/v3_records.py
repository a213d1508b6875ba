"""(being written: see the REST proxy work in progress)"""

from __future__ import annotations

from starlette.routing import BaseRoute

from zurau.rest_proxy.proxy_api import ProxyApi


def routes(api: ProxyApi) -> list[BaseRoute]:
    return []
