"""A real `placement serve` process on loopback for the service tests, and its worker pids
(:mod:`placement.api.server.probe`), plus test certificates."""

from __future__ import annotations

import datetime
from pathlib import Path

from placement.api.server.probe import (  # noqa: F401 - re-exported for the tests
    Server,
    alive,
    busy_worker,
    cpu_ticks,
    settle,
    start_server,
    stops_computing,
    wait_until,
    worker_pids,
)
from tests.conftest import REPO

INSTANCES = REPO / "instances" / "gpu"


def make_certificates(folder: Path) -> dict[str, Path]:
    """A CA, a server certificate for localhost/127.0.0.1, a client certificate, a second
    client certificate of the same CA named ``stranger`` (``stranger_client_cert``), and a
    second CA with its own client certificate (a client the server must refuse)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def key() -> ec.EllipticCurvePrivateKey:
        return ec.generate_private_key(ec.SECP256R1())

    def build(subject, subject_key, issuer, issuer_key, ca: bool, san=None):  # type: ignore[no-untyped-def]
        b = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(subject_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if san:
            b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return b.sign(issuer_key, hashes.SHA256())

    def write(path: Path, data: bytes) -> Path:
        path.write_bytes(data)
        return path

    def pem_key(k) -> bytes:  # type: ignore[no-untyped-def]
        return k.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def pem(cert) -> bytes:  # type: ignore[no-untyped-def]
        return cert.public_bytes(serialization.Encoding.PEM)

    out: dict[str, Path] = {}
    for prefix in ("", "other_"):
        ca_key = key()
        ca = build(name(f"{prefix}test-ca"), ca_key, name(f"{prefix}test-ca"), ca_key, True)
        out[f"{prefix}ca"] = write(folder / f"{prefix}ca.pem", pem(ca))
        client_key = key()
        client = build(name(f"{prefix}client"), client_key, ca.subject, ca_key, False)
        out[f"{prefix}client_cert"] = write(folder / f"{prefix}client.pem", pem(client))
        out[f"{prefix}client_key"] = write(folder / f"{prefix}client.key", pem_key(client_key))
        if not prefix:
            server_key = key()
            san = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            server = build(name("localhost"), server_key, ca.subject, ca_key, False, san)
            out["server_cert"] = write(folder / "server.pem", pem(server))
            out["server_key"] = write(folder / "server.key", pem_key(server_key))
            stranger_key = key()
            stranger = build(name("stranger"), stranger_key, ca.subject, ca_key, False)
            out["stranger_client_cert"] = write(folder / "stranger.pem", pem(stranger))
            out["stranger_client_key"] = write(folder / "stranger.key", pem_key(stranger_key))
    return out
