"""The web console in a real browser: Debian's headless Chromium driven by Selenium through
/usr/bin/chromedriver (nothing is downloaded; ``make test`` installs both packages).

Each page loads with no error in the browser's console log; the message browser finds one record
by a filter in a topic of 1,000,000 records within a bounded scan (and reports the bound when it
is smaller); a consumer group's lag chart shows the lag the test created; a share group made by
confluent-kafka's ShareConsumer is listed with its type and members, its page shows the member
and the start offsets, and its start offsets are reset from the page once it is empty; a config edited on the
page shows up in ``zurau configs describe``; bad input shows a clear error and the console keeps
serving. Screenshots of every page go to ``$ZURAU_ARTIFACTS/zurau-console-screenshots`` (default: the
temp dir), printed at the end.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait
from typer.testing import CliRunner

from tests.support.browser import console_errors, headless_chromium, screenshot_dir
from tests.support.connect_rest import ConnectRest
from zurau import EmbeddedBroker, EmbeddedRegistry
from zurau.cli.main import app as cli_app
from zurau.console.embedded_console import EmbeddedConsole

BIG = 1_000_000
NEEDLE_AT = 987_654


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(
        metrics_http_listener="http://127.0.0.1:0",
        **{"group.share.heartbeat.interval.ms": 300, "group.share.min.heartbeat.interval.ms": 100},
    ) as b:
        yield b


@pytest.fixture(scope="module")
def connect() -> Iterator[ConnectRest]:
    connectors = {
        "pg-source": {
            "class": "io.debezium.connector.postgresql.PostgresConnector",
            "type": "source",
            "state": "FAILED",
            "tasks": ["FAILED"],
        },
    }
    with ConnectRest(connectors) as c:
        yield c


@pytest.fixture(scope="module")
def registry(broker: EmbeddedBroker) -> Iterator[EmbeddedRegistry]:
    with EmbeddedRegistry(broker.bootstrap_servers) as r:
        yield r


@pytest.fixture(scope="module")
def console(
    broker: EmbeddedBroker, registry: EmbeddedRegistry, connect: ConnectRest
) -> Iterator[EmbeddedConsole]:
    with EmbeddedConsole(
        broker.bootstrap_servers,
        registry_url=registry.url,
        connect_url=connect.url,
        metrics_url=broker.metrics_url,
        lag_sample_interval=0.3,
    ) as c:
        yield c


@pytest.fixture(scope="module")
def screenshots(request: pytest.FixtureRequest) -> Iterator[Path]:
    """Where the screenshots go (see ``screenshot_dir``); their count is reported at the end."""
    path = screenshot_dir("zurau-console-screenshots")
    yield path
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    line = f"console screenshots: {path} ({len(list(path.glob('*.png')))} files)"
    if reporter is not None:
        reporter.write_line(line)
    else:
        print(line)


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with headless_chromium() as driver:
        yield driver


CHART_STATE = """
const svg = document.querySelector("[data-testid=lag-chart]");
if (!svg) return null;
const series = {};
for (const p of svg.querySelectorAll("path[data-series]")) series[p.dataset.series] = p.dataset.last;
return {points: svg.dataset.points || null, last: svg.dataset.last || null, series: series};
"""


def open_page(driver: WebDriver, url: str, ready_css: str, timeout: float = 30) -> None:
    """Load ``url`` afresh (a new hash alone would keep the previous page's elements until the
    next one renders) and wait for ``ready_css``."""
    driver.get("about:blank")
    driver.get(url)
    try:
        WebDriverWait(driver, timeout).until(lambda d: d.find_elements(By.CSS_SELECTOR, ready_css))
    except TimeoutException:
        raise AssertionError(
            f"{ready_css} did not appear on {url}; error shown: {error_banner(driver)!r}"
        ) from None


def error_banner(driver: WebDriver) -> str | None:
    box = driver.find_element(By.ID, "error")
    return box.text if box.is_displayed() else None


def create_topic(broker: EmbeddedBroker, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def test_every_page_loads_without_console_errors(
    browser: WebDriver,
    console: EmbeddedConsole,
    broker: EmbeddedBroker,
    registry: EmbeddedRegistry,
    screenshots: Path,
) -> None:
    topic = f"pages-{uuid.uuid4().hex[:6]}"
    create_topic(broker, topic, 2)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(20):
        p.produce(
            topic, key=b"k%d" % i, value=json.dumps({"i": i}).encode(), headers=[("h", b"v")], partition=i % 2
        )
    p.flush(30)
    group = "pages-" + topic
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    c.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
    c.close()
    sr = SchemaRegistryClient({"url": registry.url})
    subject = topic + "-value"
    sr.register_schema(
        subject,
        Schema(json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}), "AVRO"),
    )
    sr.register_schema(
        subject,
        Schema(
            json.dumps(
                {
                    "type": "record",
                    "name": "R",
                    "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": ""}],
                }
            ),
            "AVRO",
        ),
    )

    console_errors(browser)
    pages = [
        ("overview", "#/", "[data-testid=broker-table] tbody tr"),
        ("topics", "#/topics", f"tr[data-topic='{topic}']"),
        ("topic", f"#/topics/{topic}", "[data-testid=config-table] tbody tr"),
        ("messages", f"#/topics/{topic}/messages?start=beginning", "[data-testid=message-table] tbody tr"),
        ("groups", "#/groups", f"tr[data-group='{group}']"),
        ("group", f"#/groups/{group}", "[data-testid=lag-table] tbody tr"),
        ("schemas", "#/schemas", f"tr[data-subject='{subject}']"),
        ("schema-diff", f"#/schemas/{subject}?from=1&to=2", "[data-testid=schema-diff] .add"),
        ("connect", "#/connect", "tr[data-connector='pg-source']"),
        ("balancer", "#/balancer", "[data-testid=balancer-brokers] tbody tr"),
        (
            "metrics",
            "#/metrics",
            "[data-testid='metric-chart-kafka_server_brokertopicmetrics_messagesin'][data-points]",
        ),
    ]
    for name, fragment, ready in pages:
        open_page(browser, console.url + "/" + fragment, ready)
        assert error_banner(browser) is None, (name, error_banner(browser))
        assert browser.find_element(By.TAG_NAME, "h1").text
        browser.save_screenshot(str(screenshots / f"{name}.png"))
        assert console_errors(browser) == [], name
    # what the pages show
    open_page(browser, console.url + "/#/connect", "button[data-restart='pg-source']")
    browser.find_element(By.CSS_SELECTOR, "button[data-restart='pg-source']").click()
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=notice]"))
    assert "RUNNING" in browser.find_element(By.CSS_SELECTOR, "tr[data-connector='pg-source']").text
    open_page(browser, console.url + "/#/", "[data-testid=under-replicated]")
    assert browser.find_element(By.CSS_SELECTOR, "[data-testid=under-replicated] .n").text == "0"
    open_page(
        browser,
        console.url + f"/#/topics/{topic}/messages?start=beginning&partition=1",
        "[data-testid=message-table] tbody tr",
    )
    rows = browser.find_elements(By.CSS_SELECTOR, "[data-testid=message-table] tbody tr")
    assert [r.get_attribute("data-partition") for r in rows] == ["1"] * 10
    assert "h=v" in rows[0].text and '"i"' in rows[0].text


def test_message_browser_finds_a_record_by_filter_in_a_big_topic(
    browser: WebDriver, console: EmbeddedConsole, broker: EmbeddedBroker, screenshots: Path
) -> None:
    topic = f"big-{uuid.uuid4().hex[:6]}"
    create_topic(broker, topic, 4)
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 2_000_000,
            "compression.type": "lz4",
        }
    )
    for i in range(BIG):
        key = b"needle" if i == NEEDLE_AT else b"k%d" % i
        p.produce(topic, key=key, value=b'{"n":%d,"kind":"beat"}' % i, partition=i % 4)
        if i % 200_000 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    console_errors(browser)

    open_page(browser, console.url + f"/#/topics/{topic}/messages", "[data-testid=browse-form]")
    form = browser.find_element(By.CSS_SELECTOR, "[data-testid=browse-form]")
    for name, value in (("max_scan", "2000000"), ("time_budget_ms", "120000"), ("filter", 'key == "needle"')):
        field = form.find_element(By.NAME, name)
        field.clear()
        field.send_keys(value)
    form.find_element(By.CSS_SELECTOR, "[data-testid=browse-button]").click()
    WebDriverWait(browser, 150).until(lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=scan-stats]"))
    stats = browser.find_element(By.CSS_SELECTOR, "[data-testid=scan-stats]")
    rows = browser.find_elements(By.CSS_SELECTOR, "[data-testid=message-table] tbody tr")
    assert (
        len(rows) == 1 and "needle" in rows[0].text and f'"n": {NEEDLE_AT}' in rows[0].text.replace("\n", " ")
    )
    assert rows[0].get_attribute("data-partition") == str(NEEDLE_AT % 4)
    assert rows[0].get_attribute("data-offset") == str(NEEDLE_AT // 4)
    assert stats.get_attribute("data-stopped") == "end" and int(stats.get_attribute("data-scanned")) == BIG
    browser.save_screenshot(str(screenshots / "messages-big-filter.png"))

    # a smaller bound stops early and says so, without the record
    form = browser.find_element(By.CSS_SELECTOR, "[data-testid=browse-form]")
    max_scan = form.find_element(By.NAME, "max_scan")
    max_scan.clear()
    max_scan.send_keys("50000")
    form.find_element(By.CSS_SELECTOR, "[data-testid=browse-button]").click()
    WebDriverWait(browser, 30).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=scan-stats][data-stopped=max_scan]")
    )
    stats = browser.find_element(By.CSS_SELECTOR, "[data-testid=scan-stats]")
    assert stats.get_attribute("data-scanned") == "50000" and stats.get_attribute("data-matched") == "0"
    assert "scanned the maximum number of records" in stats.text and "Resume from" in stats.text
    assert console_errors(browser) == []


def test_group_lag_chart_shows_the_lag_the_test_created(
    browser: WebDriver, console: EmbeddedConsole, broker: EmbeddedBroker, screenshots: Path
) -> None:
    topic = f"lag-{uuid.uuid4().hex[:6]}"
    create_topic(broker, topic, 2)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i in range(2000):
        p.produce(topic, value=b"x", partition=i % 2)
    p.flush(30)
    group = "lag-" + topic
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    c.commit(offsets=[TopicPartition(topic, 0, 700), TopicPartition(topic, 1, 66)], asynchronous=False)
    c.close()
    expected = (1000 - 700) + (1000 - 66)
    console_errors(browser)
    open_page(browser, console.url + f"/#/groups/{group}", "[data-testid=lag-table] tbody tr")
    # the chart is redrawn at every sample: read it in one script, not element by element
    chart = WebDriverWait(browser, 20).until(
        lambda d: (c := d.execute_script(CHART_STATE)) and int(c["points"] or 0) >= 2 and c
    )
    assert chart["last"] == str(expected)
    assert chart["series"] == {f"{topic}-0": "300", f"{topic}-1": "934"}
    assert browser.find_element(By.CSS_SELECTOR, "[data-testid=total-lag] .n").text == str(expected)
    lags = [
        e.get_attribute("data-lag")
        for e in browser.find_elements(By.CSS_SELECTOR, "[data-testid=lag-table] td[data-lag]")
    ]
    assert lags == ["300", "934"]
    browser.save_screenshot(str(screenshots / "group-lag.png"))

    # reset with a dry-run preview, then apply: the lag goes to zero
    form = browser.find_element(By.CSS_SELECTOR, "[data-testid=reset-form]")
    form.find_element(By.CSS_SELECTOR, "select[name=mode] option[value=latest]").click()
    form.find_element(By.CSS_SELECTOR, "[data-testid=reset-preview]").click()
    WebDriverWait(browser, 20).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=reset-plan] tbody tr")
    )
    assert (
        "Plan (nothing changed yet)"
        in browser.find_element(By.CSS_SELECTOR, "[data-testid=reset-result]").text
    )
    assert httpx.get(f"{console.url}/api/groups/{group}", timeout=30).json()["total_lag"] == expected
    browser.find_element(By.CSS_SELECTOR, "[data-testid=reset-apply]").click()
    WebDriverWait(browser, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: (
            d.find_elements(By.CSS_SELECTOR, "[data-testid=total-lag] .n")
            and d.find_element(By.CSS_SELECTOR, "[data-testid=total-lag] .n").text == "0"
        )
    )
    assert console_errors(browser) == []


def test_share_group_page_shows_members_and_start_offsets_and_resets_them(
    browser: WebDriver, console: EmbeddedConsole, broker: EmbeddedBroker, screenshots: Path
) -> None:
    topic = f"share-{uuid.uuid4().hex[:6]}"
    create_topic(broker, topic, 2)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(10):
        p.produce(topic, value=b"x", partition=i % 2)
    p.flush(30)
    group = "sg-" + topic
    api = httpx.Client(base_url=console.url, timeout=30)
    sc = ShareConsumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "client.id": "chromium-test"}
    )
    try:
        sc.subscribe([topic])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            sc.poll(0.3)
            r = api.get(f"/api/share-groups/{group}")
            if r.status_code == 200 and [o["start_offset"] for o in r.json()["offsets"]] == [5, 5]:
                break
        console_errors(browser)
        open_page(browser, console.url + "/#/groups", f"tr[data-group='{group}'][data-type=share]")
        row = browser.find_element(By.CSS_SELECTOR, f"tr[data-group='{group}']")
        assert row.find_element(By.CSS_SELECTOR, "td[data-members]").text == "1" and "Stable" in row.text
        browser.save_screenshot(str(screenshots / "groups-with-share.png"))
        row.find_element(By.TAG_NAME, "a").click()
        WebDriverWait(browser, 20).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=share-offset-table] tbody tr")
        )
        assert browser.find_element(By.TAG_NAME, "h1").text == f"Share group {group}"
        starts = [
            e.get_attribute("data-start") for e in browser.find_elements(By.CSS_SELECTOR, "td[data-start]")
        ]
        assert starts == ["5", "5"]
        member = browser.find_element(By.CSS_SELECTOR, "[data-testid=member-table] tbody tr")
        assert "chromium-test" in member.text and f"{topic}-0, {topic}-1" in member.text
        browser.save_screenshot(str(screenshots / "share-group.png"))
        assert console_errors(browser) == []
        # applying while the member is there is refused with the broker's reason
        browser.find_element(By.CSS_SELECTOR, "[data-testid=reset-apply]").click()
        WebDriverWait(browser, 20).until(lambda d: error_banner(d))
        assert "is not empty" in (error_banner(browser) or "")
        console_errors(browser)  # the 409 is logged by the browser
    finally:
        sc.close()
    deadline = time.monotonic() + 20
    while api.get(f"/api/share-groups/{group}").json()["state"] != "Empty" and time.monotonic() < deadline:
        time.sleep(0.2)
    open_page(browser, console.url + f"/#/share-groups/{group}", "[data-testid=reset-form]")
    form = browser.find_element(By.CSS_SELECTOR, "[data-testid=reset-form]")
    form.find_element(By.CSS_SELECTOR, "select[name=mode] option[value=offset]").click()
    form.find_element(By.NAME, "value").send_keys("2")
    form.find_element(By.CSS_SELECTOR, "[data-testid=reset-preview]").click()
    WebDriverWait(browser, 20).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=reset-plan] tbody tr")
    )
    assert (
        "Plan (nothing changed yet)"
        in browser.find_element(By.CSS_SELECTOR, "[data-testid=reset-result]").text
    )
    browser.find_element(By.CSS_SELECTOR, "[data-testid=reset-apply]").click()
    WebDriverWait(browser, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: (
            [e.get_attribute("data-start") for e in d.find_elements(By.CSS_SELECTOR, "td[data-start]")]
            == ["2", "2"]
        )
    )
    assert [o["start_offset"] for o in api.get(f"/api/share-groups/{group}").json()["offsets"]] == [2, 2]
    api.close()
    assert console_errors(browser) == []


def test_editing_a_config_shows_up_in_configs_describe(
    browser: WebDriver, console: EmbeddedConsole, broker: EmbeddedBroker, screenshots: Path
) -> None:
    topic = f"cfg-{uuid.uuid4().hex[:6]}"
    create_topic(broker, topic, 1)
    console_errors(browser)
    open_page(browser, console.url + f"/#/topics/{topic}", "input[data-config='retention.ms']")
    field = browser.find_element(By.CSS_SELECTOR, "input[data-config='retention.ms']")
    field.clear()
    field.send_keys("7200000")
    browser.find_element(By.CSS_SELECTOR, "button[data-save='retention.ms']").click()
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=notice]"))
    browser.save_screenshot(str(screenshots / "config-edited.png"))
    result = CliRunner().invoke(
        cli_app, ["configs", "describe", "--topic", topic, "--bootstrap-server", broker.bootstrap_servers]
    )
    assert result.exit_code == 0, result.stderr
    assert "retention.ms=7200000" in result.stdout
    assert console_errors(browser) == []


def test_bad_input_shows_a_clear_error_and_the_console_keeps_serving(
    browser: WebDriver, console: EmbeddedConsole, broker: EmbeddedBroker, screenshots: Path
) -> None:
    topic = f"bad-{uuid.uuid4().hex[:6]}"
    create_topic(broker, topic, 1)
    base = console.url + f"/#/topics/{topic}/messages"
    open_page(browser, base + "?start=beginning&filter=value.n%20%3E", "[data-testid=browse-failed]")
    assert "syntax error" in (error_banner(browser) or "")
    browser.save_screenshot(str(screenshots / "bad-filter.png"))
    open_page(browser, base + "?start=offset&offset=99&partition=0", "[data-testid=browse-failed]")
    assert "offset 99 is beyond the log" in (error_banner(browser) or "")
    open_page(browser, console.url + "/#/topics/no-such-topic-here", "h1")
    WebDriverWait(browser, 10).until(lambda d: error_banner(d))
    assert "does not exist" in (error_banner(browser) or "")
    open_page(browser, console.url + "/#/", "[data-testid=broker-table] tbody tr")
    assert error_banner(browser) is None
    console_errors(browser)  # the failed requests above are logged by the browser as 4xx loads
