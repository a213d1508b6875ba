"""A JWKS served over https (an identity provider's ``jwks_uri``): fetched at start-up with the
trusted CA, and fetched again in the background when a token names a key id it lacks (a rotated
key), while the keys in hand keep being served."""

from __future__ import annotations

import http.server
import json
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from zurau.broker.auth.oauthbearer import JwksKeySource, JwksValidator
from zurau.protocol.sasl.oauthbearer import TokenValidationError
from zurau.testing.certificates import TestCA


class _Jwks:
    def __init__(self) -> None:
        self.doc: dict[str, Any] = {"keys": []}
        self.requests = 0


@pytest.fixture
def idp(tmp_path: Path) -> Iterator[tuple[str, _Jwks, str]]:
    ca = TestCA(tmp_path)
    server_pem = ca.issue("idp", "localhost", server=True)
    state = _Jwks()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            state.requests += 1
            body = json.dumps(state.doc).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(server_pem.cert, server_pem.key)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://localhost:{httpd.server_address[1]}/jwks", state, str(ca.cert_path)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _jwk(key: ec.EllipticCurvePrivateKey, kid: str) -> dict[str, Any]:
    return {**json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key())), "kid": kid}


def _token(key: ec.EllipticCurvePrivateKey, kid: str) -> str:
    now = int(time.time())
    return jwt.encode({"sub": "svc", "iat": now, "exp": now + 60}, key, algorithm="ES256", headers={"kid": kid})


def test_https_jwks_fetch_and_key_rotation(idp: tuple[str, _Jwks, str]) -> None:
    url, state, cafile = idp
    old, new = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    state.doc = {"keys": [_jwk(old, "k1")]}
    validator = JwksValidator(JwksKeySource(url, backoff_ms=0, cafile=cafile))
    assert state.requests == 1
    assert validator(_token(old, "k1")).principal == "svc"
    # The provider rotates to k2: the first token with k2 fails (as Kafka's resolver does) and
    # starts a fetch; once it lands, k2 tokens pass.
    state.doc = {"keys": [_jwk(old, "k1"), _jwk(new, "k2")]}
    with pytest.raises(TokenValidationError, match="no key in the JWKS"):
        validator(_token(new, "k2"))
    deadline = time.monotonic() + 10
    while True:
        try:
            assert validator(_token(new, "k2")).principal == "svc"
            break
        except TokenValidationError:
            assert time.monotonic() < deadline, "the rotated key was never fetched"
            time.sleep(0.05)
    assert state.requests >= 2


def test_untrusted_https_jwks_is_not_used(idp: tuple[str, _Jwks, str]) -> None:
    url, state, _cafile = idp
    key = ec.generate_private_key(ec.SECP256R1())
    state.doc = {"keys": [_jwk(key, "k1")]}
    validator = JwksValidator(JwksKeySource(url, backoff_ms=60_000))  # system CAs: the test CA is unknown
    with pytest.raises(TokenValidationError, match="no key in the JWKS"):
        validator(_token(key, "k1"))
