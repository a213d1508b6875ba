"""The broker process's collector settings (zurau.gc_tuning), checked in a fresh interpreter each
time so this test process's own collector is left alone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from zurau.config import ConfigError
from zurau.gc_tuning import SERVER_THRESHOLD, parse_threshold

_PROBE = (
    "import gc; from zurau.gc_tuning import tune_for_server; "
    "before = gc.get_threshold(); result = tune_for_server(); "
    "print(before, result, gc.get_threshold(), gc.get_freeze_count() > 0)"
)


def _probe(env_value: str | None) -> str:
    env = dict(os.environ)
    env.pop("ZURAU_GC_THRESHOLD", None)
    if env_value is not None:
        env["ZURAU_GC_THRESHOLD"] = env_value
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_server_settings_raise_generation_zero_and_freeze_startup_objects() -> None:
    out = _probe(None)
    assert out.startswith("(700, 10, 10) ")  # Python's defaults beforehand
    assert out.endswith(f"{SERVER_THRESHOLD} {SERVER_THRESHOLD} True")


def test_environment_overrides_the_thresholds() -> None:
    assert _probe("5000, 15, 5").endswith("(5000, 15, 5) (5000, 15, 5) True")


def test_default_keeps_pythons_collector_untouched() -> None:
    assert _probe("default") == "(700, 10, 10) None (700, 10, 10) False"


@pytest.mark.parametrize("bad", ["", "1,2", "a,b,c", "-1,10,10", "1,2,3,4", "10000;10;10"])
def test_malformed_values_are_refused_with_the_variable_named(bad: str) -> None:
    with pytest.raises(ConfigError, match="ZURAU_GC_THRESHOLD"):
        parse_threshold(bad)


def test_parse_accepts_spaces_and_default_in_any_case() -> None:
    assert parse_threshold(" 100 , 2 ,3 ") == (100, 2, 3)
    assert parse_threshold("DEFAULT") is None
