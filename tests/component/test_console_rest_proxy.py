"""The console's REST proxy page (``--rest-proxy-url``): the proxy beside the cluster, up or down,
the clusters it serves (one of them the console's own), a proxy asking for credentials shown as
up, a proxy that is gone shown as down with the reason while the console keeps serving, and the
setting checked where the registry's and Connect's are."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tests.support.broker_process import free_port
from zurau import EmbeddedBroker
from zurau.cli.main import app as cli_app
from zurau.console.console_config import ConsoleConfig, ConsoleConfigError
from zurau.console.embedded_console import EmbeddedConsole
from zurau.rest_proxy.embedded_rest_proxy import EmbeddedRestProxy


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as b:
        yield b


def test_the_rest_proxy_beside_the_cluster(broker: EmbeddedBroker) -> None:
    with EmbeddedRestProxy(broker.bootstrap_servers) as proxy, EmbeddedConsole(
        broker.bootstrap_servers, rest_proxy_url=proxy.url + "/"
    ) as console, httpx.Client(base_url=console.url, timeout=30) as http:
        assert http.get("/api/info").json()["rest_proxy_url"] == proxy.url  # trailing slash dropped
        status = http.get("/api/rest-proxy").json()
        own = http.get("/api/overview").json()["cluster_id"]
        assert status["up"] is True and status["auth_required"] is False and status["error"] is None
        assert status["url"] == proxy.url and status["latency_ms"] >= 0
        assert [c["cluster_id"] for c in status["clusters"]] == [own]
        assert status["clusters"][0]["self"] == f"{proxy.url}/v3/clusters/{own}"
        assert status["same_cluster"] is True
        page = http.get("/static/console.js").text
        assert "/api/rest-proxy" in page and 'data-nav="rest-proxy"' in http.get("/").text


def test_a_proxy_asking_for_credentials_is_up(broker: EmbeddedBroker, tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.write_text("alice: secret\n")
    with EmbeddedRestProxy(broker.bootstrap_servers, **{
        "authentication.method": "BASIC", "authentication.users.file": str(users)
    }) as proxy, EmbeddedConsole(broker.bootstrap_servers, rest_proxy_url=proxy.url) as console:
        status = httpx.get(console.url + "/api/rest-proxy", timeout=30).json()
        assert status["up"] is True and status["auth_required"] is True
        assert "REST proxy: Unauthorized (HTTP 401)" in status["error"]
        assert status["clusters"] == [] and status["same_cluster"] is None


def test_a_proxy_that_is_gone_and_one_not_configured(broker: EmbeddedBroker) -> None:
    gone = f"http://127.0.0.1:{free_port()}"
    with EmbeddedConsole(broker.bootstrap_servers, rest_proxy_url=gone) as console, httpx.Client(
        base_url=console.url, timeout=30
    ) as http:
        status = http.get("/api/rest-proxy").json()
        assert status["up"] is False and f"REST proxy at {gone} is unreachable" in status["error"]
        assert http.get("/api/overview").status_code == 200  # the console keeps serving
    with EmbeddedConsole(broker.bootstrap_servers) as console:
        r = httpx.get(console.url + "/api/rest-proxy", timeout=30)
        assert r.status_code == 404 and "--rest-proxy-url" in r.json()["error"] and r.json()["kind"] == "service"
        assert httpx.get(console.url + "/api/info", timeout=30).json()["rest_proxy_url"] is None


def test_the_setting_is_checked() -> None:
    with pytest.raises(ConsoleConfigError, match="--rest-proxy-url must be an http"):
        ConsoleConfig.create(rest_proxy_url="127.0.0.1:8082")
    assert ConsoleConfig.create(rest_proxy_url="  ").rest_proxy_url is None
    result = CliRunner().invoke(cli_app, ["console", "--port", "0", "--rest-proxy-url", "ftp://x"])
    assert result.exit_code == 1 and "--rest-proxy-url must be an http(s) URL" in result.output
