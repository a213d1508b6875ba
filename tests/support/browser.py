"""Debian's headless Chromium for the console's browser tests, driven by Selenium through
/usr/bin/chromedriver (nothing is downloaded; ``make test`` installs both packages)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@contextmanager
def headless_chromium(height: int = 1100) -> Iterator[WebDriver]:
    """A headless Chromium window 1400 pixels wide that keeps the page's console log."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", f"--window-size=1400,{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def screenshot_dir(name: str) -> Path:
    """``$ZURAU_ARTIFACTS/<name>`` (default: the temp dir), emptied first: the last run's
    screenshots stay there for people and CI to pick up."""
    path = Path(os.environ.get("ZURAU_ARTIFACTS") or tempfile.gettempdir()) / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def console_errors(driver: WebDriver) -> list[dict[str, Any]]:
    """Browser log entries at SEVERE level since the last call (reading the log clears it)."""
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
