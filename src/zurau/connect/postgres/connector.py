"""The PostgreSQL CDC source connector (also known by Debezium's class name
``io.debezium.connector.postgresql.PostgresConnector``).

One task does the work (a replication slot has one reader); ``tasks.max`` above 1 still gives one
task, as with Debezium. The connector validates the configuration (Debezium's setting names) and
passes it on to :class:`~zurau.connect.postgres.source_task.PostgresSourceTask`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zurau.connect.api import ConfigDef, ConfigValue, SourceConnector, Task
from zurau.connect.postgres.config import CONFIG_DEF, PostgresConnectorConfig, validate_config
from zurau.connect.postgres.source_task import PostgresSourceTask


class PostgresConnector(SourceConnector):
    """Debezium-compatible change data capture from PostgreSQL through pgoutput."""

    def __init__(self) -> None:
        self.config: dict[str, str] = {}

    def version(self) -> str:
        from zurau import __version__

        return __version__

    def start(self, config: dict[str, str]) -> None:
        PostgresConnectorConfig.from_props(config)  # raises ConfigException naming the bad setting
        self.config = dict(config)

    def exactly_once_support(self, config: Mapping[str, str]) -> str | None:
        """SUPPORTED (KIP-618): every record's offset names its exact place in the change stream
        (commit LSN, event LSN, part; or the snapshot's progress), a restarted task resumes just
        after the last committed one, and the slot's flush position is acknowledged only once the
        transaction holding those offsets committed, so the changes after it are still there."""
        return "SUPPORTED"

    def task_class(self) -> type[Task]:
        return PostgresSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config)]

    def stop(self) -> None:
        self.config = {}

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        return validate_config(config)


__all__ = ["PostgresConnector"]
