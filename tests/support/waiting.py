"""Polling for a condition in tests that drive threads or other processes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(check: Callable[[], Any], timeout: float = 40.0, what: str = "condition") -> Any:
    """Call ``check`` every 0.1 s until it returns something truthy and return that; fail the
    test after ``timeout`` seconds. ``timeout`` is a bound, never a measure: on a loaded machine
    the condition may take long, so it is generous."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"{what} not reached within {timeout:.0f} s"
        time.sleep(0.1)
