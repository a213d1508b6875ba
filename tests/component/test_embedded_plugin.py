"""The pytest plugin: registered once through its entry point; the README's example passes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import zurau.pytest_plugin

pytest_plugins = ["pytester"]

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    text = README.read_text()
    marker = text.index("<!-- the example below runs in tests/component/test_embedded_plugin.py -->")
    match = re.search(r"```python\n(.*?)```", text[marker:], re.S)
    assert match, "the README lost its pytest plugin example"
    return match.group(1)


def test_plugin_is_registered_exactly_once(request: pytest.FixtureRequest) -> None:
    pm = request.config.pluginmanager
    registered = [p for p in pm.get_plugins() if p is zurau.pytest_plugin]
    assert len(registered) == 1
    assert pm.get_plugin("zurau") is zurau.pytest_plugin  # the pytest11 entry point's name
    assert "zurau_topic" in "\n".join(request.config.getini("markers"))


def test_readme_example_passes_in_a_fresh_pytest_run(pytester: pytest.Pytester) -> None:
    example = readme_example()
    assert 8 <= len(example.strip().splitlines()) <= 14, "keep the README example about ten lines"
    pytester.makepyfile(test_readme=example)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_fixtures_in_sync_and_async_tests(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import pytest

@pytest.fixture(scope="session")
def zurau_broker_configs():
    return {"num_partitions": 4}
"""
    )
    pytester.makepyfile(
        test_fixtures="""
import asyncio
import pytest

seen = []

def test_default_topic(zurau_broker, zurau_topic):
    t = zurau_broker.broker.image.get(zurau_topic)
    assert t is not None and t.num_partitions == 1
    assert zurau_broker.config.get("num.partitions") == 4
    assert zurau_topic.startswith("test_default_topic-")
    seen.append((zurau_broker, zurau_topic))

@pytest.mark.zurau_topic(partitions=2, configs={"cleanup.policy": "compact"})
def test_marked_topic(zurau_broker, zurau_topic):
    t = zurau_broker.broker.image.get(zurau_topic)
    assert t.num_partitions == 2 and t.configs == {"cleanup.policy": "compact"}
    assert zurau_broker is seen[0][0], "one broker per session"
    assert zurau_broker.broker.image.get(seen[0][1]) is None, "the previous test's topic is gone"

def test_async_client(zurau_broker, zurau_topic):
    from zurau.client import ClientConfig, Producer

    async def go():
        async with Producer(ClientConfig.load(bootstrap_servers=zurau_broker.bootstrap_servers)) as p:
            return await (await p.send(zurau_topic, b"x"))

    assert asyncio.run(go()).offset == 0

@pytest.mark.zurau_topic(partition=2)
def test_bad_marker(zurau_topic):
    pass
"""
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*unknown zurau_topic marker arguments: partition*"])
