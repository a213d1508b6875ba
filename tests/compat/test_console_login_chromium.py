"""The console's login page in a real browser (Debian's headless Chromium through Selenium, as
tests/compat/test_console_chromium.py): against a SASL_PLAINTEXT (SCRAM) listener with ACLs, a
visitor opening the topics page gets the login form; a wrong password shows the broker's refusal
on the form; the right one shows the topics page with that user's topics only, with no error in
the browser's console; logging out brings the form back. Screenshots go to
``$ZURAU_ARTIFACTS/zurau-console-login-screenshots`` (default: the temp dir).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.compat.test_console_chromium import error_banner, open_page
from tests.support.browser import console_errors, headless_chromium, screenshot_dir
from tests.support.sasl_broker import SASL, USERS, create_topics, sasl_broker
from zurau.console.embedded_console import EmbeddedConsole


@pytest.fixture(scope="module")
def screenshots() -> Path:
    return screenshot_dir("zurau-console-login-screenshots")


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with headless_chromium(900) as driver:
        yield driver


def submit_login(driver: WebDriver, user: str, password: str) -> None:
    form = driver.find_element(By.CSS_SELECTOR, "[data-testid=login-form]")
    for name, value in (("username", user), ("password", password)):
        field = form.find_element(By.NAME, name)
        field.clear()
        field.send_keys(value)
    form.find_element(By.CSS_SELECTOR, "[data-testid=login-button]").click()


def test_logging_in_through_the_page_shows_the_users_topics(browser: WebDriver, screenshots: Path) -> None:
    suffix = uuid.uuid4().hex[:6]
    mine, theirs = f"alice-{suffix}", f"bob-{suffix}"
    with sasl_broker() as broker, EmbeddedConsole(
        broker.listener_address("SASL_PLAINTEXT"), client_properties=SASL
    ) as console:
        create_topics(broker, mine, theirs)
        console_errors(browser)
        open_page(browser, console.url + "/#/topics", "[data-testid=login-form]")
        assert browser.find_element(By.TAG_NAME, "h1").text == "Log in"
        assert not browser.find_element(By.ID, "nav").is_displayed()
        assert console_errors(browser) == []  # asking who is logged in is not an error
        browser.save_screenshot(str(screenshots / "login.png"))

        submit_login(browser, "alice", "not-her-password")
        WebDriverWait(browser, 20).until(
            lambda d: d.find_element(By.CSS_SELECTOR, "[data-testid=login-error]").is_displayed()
        )
        refusal = browser.find_element(By.CSS_SELECTOR, "[data-testid=login-error]").text
        assert refusal.startswith("login failed:") and "invalid credentials" in refusal, refusal
        browser.save_screenshot(str(screenshots / "login-refused.png"))
        console_errors(browser)  # the refused POST is logged by the browser as a 401 load

        submit_login(browser, "alice", USERS["alice"])
        WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, f"tr[data-topic='{mine}']"))
        assert browser.find_elements(By.CSS_SELECTOR, f"tr[data-topic='{theirs}']") == []
        assert browser.find_element(By.CSS_SELECTOR, "[data-testid=user-name]").text == "user alice"
        assert error_banner(browser) is None
        browser.save_screenshot(str(screenshots / "topics-as-alice.png"))
        assert console_errors(browser) == []

        # the session survives a reload (the cookie), and a page that changes nothing works
        open_page(browser, console.url + f"/#/topics/{mine}", "[data-testid=config-table] tbody tr")
        assert error_banner(browser) is None and console_errors(browser) == []

        browser.find_element(By.CSS_SELECTOR, "[data-testid=logout]").click()
        WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=login-form]"))
        assert "logged out" in browser.find_element(By.CSS_SELECTOR, "[data-testid=login-error]").text
        open_page(browser, console.url + "/#/topics", "[data-testid=login-form]")
        assert console_errors(browser) == []
