"""Throwaway certificates for tests, generated at test time: a CA, a server certificate for
127.0.0.1/localhost and client certificates, as PEM files in a directory (``cryptography``;
nothing is checked in). Used by the embedded broker's TLS listeners
(``EmbeddedBroker(security="SASL_SSL")``) and by Zurau's own tests.

Keys are ECDSA P-256; the CA is valid for two days, issued certificates for one (``expired=True``
gives one that ended yesterday). Files: ``<ca name>.pem`` for the CA and, per issued certificate,
``<stem>.crt``, ``<stem>.key`` (PKCS#8, unencrypted) and ``<stem>.pem`` (key then certificate: a
PEM key store as ``ssl.keystore.location`` takes it).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pem:
    """A certificate and its key: ``cert``/``key`` paths, and ``keystore`` (key then chain, one file)."""

    cert: Path
    key: Path
    keystore: Path


def _name(common_name: str, unit: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COUNTRY_NAME, "GB"), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example")]
    if unit:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, unit))
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


class TestCA:
    """A throwaway certificate authority writing PEM files into ``directory``."""

    __test__ = False  # not a pytest test class

    def __init__(self, directory: Path, name: str = "Zurau Test CA") -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        subject = _name(name)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.cert_path = directory / f"{name.replace(' ', '-').lower()}.pem"
        self.cert_path.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    @property
    def pem(self) -> str:
        return self.cert_path.read_text()

    def issue(
        self, file_stem: str, common_name: str, *, unit: str | None = None, server: bool = False, expired: bool = False
    ) -> Pem:
        """A certificate signed by this CA (valid for a day; ``expired``: ended yesterday)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=3 if expired else 0)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, unit))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
        cert = builder.sign(self._key, hashes.SHA256())
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        paths = Pem(
            self.directory / f"{file_stem}.crt", self.directory / f"{file_stem}.key", self.directory / f"{file_stem}.pem"
        )
        paths.cert.write_bytes(cert_pem)
        paths.key.write_bytes(key_pem)
        paths.keystore.write_bytes(key_pem + cert_pem)
        return paths
