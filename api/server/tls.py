"""Checking the TLS and token files of the service and its client before gRPC sees them.

gRPC core aborts the process on a certificate without its key (``Check failed:
private_key != nullptr``) and logs its own lines on a malformed PEM; so every file is read and
checked here first, with the standard library's ``ssl`` module (OpenSSL, as gRPC uses):
a certificate and key that do not match, a PEM that is not one, a CA file with no CA
certificate. Each problem is an :class:`~placement.solver.InputError` naming the option and
the file, one line (the CLI exits 2).
"""

from __future__ import annotations

import ssl
from pathlib import Path

from placement.solver import InputError

__all__ = ["read_ca", "read_key_pair", "read_token_lines"]


def _read(option: str, path: str | Path, what: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError.single(option, str(path), f"a readable {what} ({exc.strerror})") from None
    if b"-----BEGIN " not in data:
        raise InputError.single(option, str(path), f"a {what} (no PEM block in the file)")
    return data


def _reason(exc: ssl.SSLError) -> str:
    return (exc.reason or str(exc)).lower().replace("_", " ")


def read_ca(option: str, path: str | Path) -> bytes:
    """The PEM bytes of a CA file; raises InputError unless it holds a CA certificate."""
    data = _read(option, path, "PEM CA certificate file")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(cadata=data.decode("ascii", "replace"))
    except (ssl.SSLError, ValueError):
        raise InputError.single(
            option, str(path), "a PEM CA certificate file (no certificate in the file)"
        ) from None
    if context.cert_store_stats().get("x509_ca", 0) == 0:
        raise InputError.single(
            option,
            str(path),
            "a CA certificate (this certificate is not a CA: no basicConstraints CA:TRUE)",
        )
    return data


def read_key_pair(
    cert_option: str, cert: str | Path | None, key_option: str, key: str | Path | None
) -> tuple[bytes, bytes] | None:
    """The PEM bytes of a certificate and its private key (None when neither is given);
    raises InputError when only one is given, a file is unreadable or malformed, or the key
    does not belong to the certificate."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        given, missing = (cert_option, key_option) if key is None else (key_option, cert_option)
        raise InputError.single(
            given,
            str(cert if key is None else key),
            f"{missing} as well ({cert_option} and {key_option} go together)",
        )
    cert_data = _read(cert_option, cert, "PEM certificate file")
    key_data = _read(key_option, key, "PEM private key file")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(cadata=cert_data.decode("ascii", "replace"))
    except (ssl.SSLError, ValueError):
        raise InputError.single(
            cert_option, str(cert), "a PEM certificate file (no certificate in the file)"
        ) from None
    try:
        # An encrypted key would prompt on the terminal: gRPC takes no passphrase anyway.
        context.load_cert_chain(str(cert), str(key), password=lambda: b"")
    except ssl.SSLError as exc:
        reason = _reason(exc)
        if "mismatch" in reason:
            raise InputError.single(
                key_option,
                str(key),
                f"the private key of the certificate {cert} (they do not match)",
            ) from None
        raise InputError.single(
            key_option, str(key), "a PEM private key file (no unencrypted private key in the file)"
        ) from None
    return cert_data, key_data


def read_token_lines(option: str, path: str | Path) -> tuple[str, ...]:
    """Tokens in a file, one per line (blank lines and ``#`` comments ignored); raises
    InputError when the file is unreadable, not text, or holds no token."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError.single(
            option, str(path), f"a readable token file ({exc.strerror})"
        ) from None
    except UnicodeDecodeError:
        raise InputError.single(
            option, str(path), "a text file of tokens (it is not UTF-8)"
        ) from None
    lines = (s.strip() for s in text.splitlines())
    tokens = tuple(s for s in lines if s and not s.startswith("#"))
    if not tokens:
        raise InputError.single(option, str(path), "a token file (no token in it)")
    if any(any(c.isspace() or not c.isprintable() for c in t) for t in tokens):
        raise InputError.single(option, str(path), "one token per line (no spaces in a token)")
    return tokens
