"""What a benchmark measured: the exact Zurau commit and the client libraries' full versions.

A report names ``git rev-parse HEAD`` of the checkout it ran from, with ``+dirty`` when the work
tree differs from that commit (modified, staged, deleted or untracked files: any of them may be
code that ran), so a number can be traced to the code behind it. Client versions are the Python
package's and, for confluent-kafka, the librdkafka it wraps (its version string and the hex
number librdkafka reports), for each library the benchmark used.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Client libraries a benchmark may drive, by import name.
CLIENTS = ("confluent_kafka", "kafka", "aiokafka")


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip() or f"git {' '.join(args)} failed ({done.returncode})")
    return done.stdout


def zurau_revision(root: Path = ROOT) -> str:
    """``<full commit id>`` of the checkout at ``root``, plus ``+dirty`` if its tree has changes.

    Outside a git checkout (or without git): ``unknown (<why>)``.
    """
    try:
        commit = _git(root, "rev-parse", "HEAD").strip()
        changes = _git(root, "status", "--porcelain", "--untracked-files=normal").strip()
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        return f"unknown ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
    return commit + ("+dirty" if changes else "")


def _version_text(v: object) -> str:
    """confluent-kafka's ``version()``/``libversion()`` give ``(text, int)``; some builds give text."""
    if isinstance(v, tuple) and v:
        text = str(v[0])
        return f"{text} (0x{v[1]:08x})" if len(v) > 1 and isinstance(v[1], int) else text
    return str(v)


def client_version(name: str) -> str:
    """``<distribution> <version>`` of one client library (by import name), importing it if needed."""
    if name == "confluent_kafka":
        import confluent_kafka

        ck = confluent_kafka.version()
        ck_text = ck[0] if isinstance(ck, tuple) else ck
        return f"confluent-kafka {ck_text} (librdkafka {_version_text(confluent_kafka.libversion())})"
    if name in ("kafka", "aiokafka"):
        module = importlib.import_module(name)
        return f"{'kafka-python' if name == 'kafka' else name} {module.__version__}"
    raise ValueError(f"unknown client library {name!r} (known: {', '.join(CLIENTS)})")


def clients_used(names: Iterable[str] | None = None) -> list[str]:
    """Versions of ``names``, or of every known client this process has imported (those it used)."""
    chosen = list(names) if names is not None else [n for n in CLIENTS if n in sys.modules]
    return [client_version(n) for n in chosen]


def provenance_line(root: Path = ROOT, clients: Iterable[str] | None = None) -> str:
    """One Markdown-ready sentence: ``Zurau at <commit>[+dirty]; clients: <versions>.``"""
    used = clients_used(clients)
    return f"Zurau at {zurau_revision(root)}; clients: {', '.join(used) if used else 'none'}."
