"""An S3-compatible server for tests: moto's standalone server in its own process on 127.0.0.1.

Why moto: the tiered-storage tests need a real S3 endpoint over HTTP (so the ``s3`` plugin runs
its real client, signing, multipart uploads, ranged GETs, retries and connection errors), started
by ``make test`` from the package index alone. Stores closer to S3 (MinIO, SeaweedFS, Garage,
Ceph's RGW, S3Proxy) ship as Go/Rust binaries, Java jars or containers that are not installable
from PyPI; LocalStack needs Docker. moto's server (``moto[server]``, ``python -m moto.server``) is
a pure-Python, in-memory implementation of the S3 REST API, including multipart uploads (with
S3's 5 MiB smallest part), ranged GETs and error codes such as ``NoSuchKey``. It accepts any
credentials and does not check signatures.

:class:`S3Server` (a :class:`~zurau.testing.broker_process.ServerProcess`): ``start()`` returns once
the port accepts connections, ``stop()`` is SIGTERM then SIGKILL, ``kill()`` is ``kill -9``, all
by the process id of the process it started; as a context manager the server lives for the block.
Its data is in memory: a stopped server forgets every bucket. :meth:`S3Server.create_bucket` and
:meth:`S3Server.reset` speak plain HTTP (no SDK needed). :meth:`S3Server.plugin_configs` gives
the ``s3`` plugin's settings for it.

Only the standard library is imported here (moto runs in the child process).
"""

from __future__ import annotations

import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from zurau.testing.broker_process import HOST, ServerProcess, free_port

#: Credentials and region the clients use: moto accepts any.
ACCESS_KEY_ID = "testing"
SECRET_ACCESS_KEY = "testing"
REGION = "us-east-1"


class S3Server(ServerProcess):
    """moto's S3 server on 127.0.0.1:``port`` (a free one by default); its log in ``log_path``."""

    start_timeout = 30.0

    def __init__(self, port: int | None = None, *, log_path: Path | None = None) -> None:
        port = port or free_port()
        if log_path is None:
            log_path = Path(tempfile.gettempdir()) / f"zurau-moto-s3-{port}.log"
        super().__init__(port, log_path)

    def command(self) -> list[str]:
        return [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(self.port)]

    @property
    def endpoint_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def _request(self, method: str, path: str) -> None:
        request = urllib.request.Request(f"{self.endpoint_url}{path}", method=method, data=b"")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
        except urllib.error.HTTPError as e:
            body = e.read().decode(errors="replace")
            raise RuntimeError(f"{method} {path} on the S3 server: HTTP {e.code}: {body}") from None

    def create_bucket(self, bucket: str) -> None:
        """Create ``bucket`` (PUT /<bucket>; moto does not check signatures)."""
        self._request("PUT", f"/{bucket}")

    def reset(self) -> None:
        """Forget every bucket and object (moto's reset call)."""
        self._request("POST", "/moto-api/reset")

    def plugin_configs(self, bucket: str, **more: str) -> dict[str, str]:
        """The ``s3`` plugin's settings (prefix removed) for ``bucket`` on this server."""
        return {
            "s3.bucket": bucket,
            "s3.endpoint.url": self.endpoint_url,
            "s3.region": REGION,
            "s3.access.key.id": ACCESS_KEY_ID,
            "s3.secret.access.key": SECRET_ACCESS_KEY,
            **more,
        }


__all__ = ["ACCESS_KEY_ID", "REGION", "SECRET_ACCESS_KEY", "S3Server"]
