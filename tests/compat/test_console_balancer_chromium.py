"""The console's Balancer page in a real browser (Debian's headless Chromium through Selenium and
/usr/bin/chromedriver), against an in-process three-node cluster with the balancer disabled (so
the controller moves nothing the test does not ask for) and a topic on brokers 1 and 2 only.

The page lists the three brokers with their replica counts as Metadata has them and the balancer
disabled; the dry-run plan moves replicas onto broker 3; Remove on broker 2 first previews the
plan of that removal, then, clicked again, marks it (the page and ``zurau balancer status`` show
it removing, and warns that a disabled balancer will not act on it yet); Cancel, clicked twice,
ends the removal and is then disabled, nothing being under way. No error reaches the browser's console.
Screenshots go to ``$ZURAU_ARTIFACTS/zurau-console-balancer-screenshots`` (default: the temp dir).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait
from typer.testing import CliRunner

from tests.compat.test_console_chromium import error_banner, open_page
from tests.support.browser import console_errors, headless_chromium, screenshot_dir
from tests.support.uneven_cluster import uneven_cluster
from zurau.cli.balancer import plan_of
from zurau.cli.main import app
from zurau.console.embedded_console import EmbeddedConsole
from zurau.embedded import EmbeddedCluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with uneven_cluster() as c:
        yield c


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with headless_chromium() as driver:
        yield driver


def cell(driver: WebDriver, broker: int, column: int) -> str:
    row = driver.find_element(By.CSS_SELECTOR, f"[data-testid=balancer-brokers] tr[data-broker='{broker}']")
    text: str = row.find_elements(By.TAG_NAME, "td")[column].text
    return text


def wait_for(driver: WebDriver, css: str, timeout: float = 30) -> None:
    WebDriverWait(driver, timeout).until(lambda d: d.find_elements(By.CSS_SELECTOR, css))


# The page re-renders its status every 3 s, replacing its elements: an element found just before
# a refresh is stale by the time it is read or clicked. Each read and click below finds its
# element again until one survives (the page keeps its state, such as an armed button, across a
# refresh, so a retried click does what the first would have done).
_STALE = (StaleElementReferenceException,)


def click(driver: WebDriver, css: str) -> None:
    def once(d: WebDriver) -> bool:
        d.find_element(By.CSS_SELECTOR, css).click()
        return True

    WebDriverWait(driver, 10, ignored_exceptions=_STALE).until(once)


def text_of(driver: WebDriver, css: str) -> str:
    found: list[str] = []

    def once(d: WebDriver) -> bool:
        found.append(d.find_element(By.CSS_SELECTOR, css).text)
        return True

    WebDriverWait(driver, 10, ignored_exceptions=_STALE).until(once)
    return found[-1]


def until(driver: WebDriver, check: object, timeout: float = 30) -> None:
    WebDriverWait(driver, timeout, ignored_exceptions=_STALE).until(check)  # type: ignore[arg-type]


def test_the_balancer_page_shows_the_load_plans_and_removes_a_broker(
    browser: WebDriver, cluster: EmbeddedCluster
) -> None:
    shots = screenshot_dir("zurau-console-balancer-screenshots")
    with EmbeddedConsole(cluster.bootstrap_servers, planner=plan_of) as console:
        console_errors(browser)
        open_page(browser, console.url + "/#/balancer", "[data-testid=balancer-brokers] tbody tr")
        assert browser.find_element(By.CSS_SELECTOR, "a[data-nav=balancer]").get_attribute("class") == "active"
        assert text_of(browser, "[data-testid=balancer-enabled] .n") == "false"
        until(browser, lambda d: [cell(d, b, 2) for b in (1, 2, 3)] == ["6", "6", "0"])
        until(browser, lambda d: all(cell(d, b, 7) == "serving" for b in (1, 2, 3)))
        assert browser.find_elements(By.CSS_SELECTOR, "[data-testid=no-moves]")

        click(browser, "[data-testid=balancer-plan-button]")
        wait_for(browser, "[data-testid=plan-moves] tbody tr")
        rows = browser.find_elements(By.CSS_SELECTOR, "[data-testid=plan-moves] tbody tr")
        assert all("3" in r.find_elements(By.TAG_NAME, "td")[3].text for r in rows)
        assert all(r.find_elements(By.TAG_NAME, "td")[5].text for r in rows)  # each move says why
        browser.save_screenshot(str(shots / "balancer-plan.png"))

        click(browser, "button[data-remove='2']")
        until(browser, lambda d: "if broker 2 is removed" in text_of(d, "[data-testid=balancer-plan]"))
        assert text_of(browser, "button[data-remove='2']") == "Really remove broker 2?"
        browser.save_screenshot(str(shots / "balancer-remove-preview.png"))
        click(browser, "button[data-remove='2']")
        wait_for(browser, "[data-testid=notice]")
        until(browser, lambda d: cell(d, 2, 7) == "removing")
        out = CliRunner().invoke(app, ["balancer", "status", "--json", "--bootstrap-server", cluster.bootstrap_servers])
        assert out.exit_code == 0, out.stdout + out.stderr
        assert {b["id"]: b["removing"] for b in json.loads(out.stdout)["brokers"]} == {1: False, 2: True, 3: False}
        until(browser, lambda d: text_of(d, "[data-testid=balancer-removing] .n") == "2")
        # the controller acts on the mark only once the balancer is enabled: the page says so
        assert "disabled" in text_of(browser, "[data-testid=balancer-disabled]")
        browser.save_screenshot(str(shots / "balancer-removing.png"))

        click(browser, "[data-testid=balancer-cancel]")
        assert text_of(browser, "[data-testid=balancer-cancel]").startswith("Really cancel")
        click(browser, "[data-testid=balancer-cancel]")
        until(browser, lambda d: cell(d, 2, 7) == "serving")
        assert "removal of broker(s) 2 ended" in text_of(browser, "[data-testid=notice]")
        until(browser, lambda d: not d.find_element(By.CSS_SELECTOR, "[data-testid=balancer-cancel]").is_enabled())
        assert error_banner(browser) is None
        assert console_errors(browser) == []
