"""Bad TLS, token and listening settings of ``placement serve`` and ``solve --server``: exit
2 with one line naming the option and the file, found before anything starts (no gRPC core
abort, no gRPC log lines, no exit 3), with real certificates and real processes."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from placement.api.client import Client
from placement.solver import InputError
from tests.conftest import REPO
from tests.service_harness import make_certificates

TINY = str(REPO / "instances" / "gpu" / "tiny.json")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tls")
    out = make_certificates(folder)
    out["garbage"] = folder / "garbage.pem"
    out["garbage"].write_text("this is not a certificate\n")
    out["token"] = folder / "token"
    out["token"].write_text("s3cret\n")
    out["empty"] = folder / "empty"
    out["empty"].write_text("# no token here\n\n")
    out["missing"] = folder / "missing.pem"
    return out


def _run(*args: Any, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "placement.api.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def _one_line_usage_error(proc: subprocess.CompletedProcess[str], *names: str) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("placement: error: "), lines[0]
    for name in names:
        assert name in lines[0], (name, lines[0])
    assert proc.stdout == ""
    return lines[0]


# What solve --server is given (besides the instance and the server); what the line names.
CLIENT_CASES = {
    "cert without key": (
        ["--ca", "ca", "--cert", "client_cert"],
        ["--cert", "--key", "client.pem"],
    ),
    "key without cert": (["--ca", "ca", "--key", "client_key"], ["--key", "--cert", "client.key"]),
    "missing CA": (["--ca", "missing"], ["--ca", "missing.pem"]),
    "CA that is not a CA": (["--ca", "client_cert"], ["--ca", "client.pem", "not a CA"]),
    "CA file that is no PEM": (["--ca", "garbage"], ["--ca", "garbage.pem"]),
    "key of another certificate": (
        ["--ca", "ca", "--cert", "client_cert", "--key", "server_key"],
        ["--key", "server.key", "do not match"],
    ),
    "certificate given as key": (
        ["--ca", "ca", "--cert", "client_cert", "--key", "client_cert"],
        ["--key", "client.pem"],
    ),
    "key given as certificate": (
        ["--ca", "ca", "--cert", "client_key", "--key", "client_key"],
        ["--cert", "client.key"],
    ),
    "missing token file": (["--token-file", "missing"], ["--token-file", "missing.pem"]),
    "token file without a token": (["--token-file", "empty"], ["--token-file", "empty"]),
}


@pytest.mark.parametrize("case", list(CLIENT_CASES))
def test_solve_on_a_server_with_bad_tls_or_token_files(files: dict[str, Path], case: str) -> None:
    options, names = CLIENT_CASES[case]
    args = [files.get(a, a) for a in options]
    # Nothing listens on port 1: the files must be refused before any connection.
    proc = _run("solve", TINY, "--server", "127.0.0.1:1", *args)
    line = _one_line_usage_error(proc, *names)
    assert "Check failed" not in proc.stderr and "E0000" not in line


SERVER_CASES = {
    "cert without key": (["--tls-cert", "server_cert"], ["--tls-cert", "--tls-key"]),
    "key without cert": (["--tls-key", "server_key"], ["--tls-key", "--tls-cert"]),
    "key of another certificate": (
        ["--tls-cert", "server_cert", "--tls-key", "client_key"],
        ["--tls-key", "client.key", "do not match"],
    ),
    "certificate that is no PEM": (
        ["--tls-cert", "garbage", "--tls-key", "server_key"],
        ["--tls-cert", "garbage.pem"],
    ),
    "missing key": (
        ["--tls-cert", "server_cert", "--tls-key", "missing"],
        ["--tls-key", "missing.pem"],
    ),
    "client CA that is not a CA": (
        ["--tls-cert", "server_cert", "--tls-key", "server_key", "--client-ca", "server_cert"],
        ["--client-ca", "server.pem", "not a CA"],
    ),
    "token file without a token": (["--token-file", "empty"], ["--token-file", "empty"]),
    "unknown limit": (["--limit", "foo=3"], ["--limit", "foo", "jobs", "nodes", "items"]),
}


@pytest.mark.parametrize("case", list(SERVER_CASES))
def test_serve_with_bad_settings_exits_2_before_starting(
    files: dict[str, Path], tmp_path: Path, case: str
) -> None:
    options, names = SERVER_CASES[case]
    args = [files.get(a, a) for a in options]
    proc = _run("serve", "--port", "0", "--workers", "1", "--db", tmp_path / "j.db", *args)
    _one_line_usage_error(proc, *names)
    assert "serving on" not in proc.stderr


def test_serve_on_a_port_in_use_exits_2_before_the_workers_start(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _run("serve", "--port", port, "--workers", "1", "--db", tmp_path / "j.db")
    line = _one_line_usage_error(proc, "--port", f"127.0.0.1:{port}", "in use")
    assert "internal error" not in line


def test_the_client_refuses_a_certificate_without_its_key(files: dict[str, Path]) -> None:
    with pytest.raises(InputError, match="cert.*key"):
        Client("127.0.0.1:1", ca=files["ca"], cert=files["client_cert"])
    with pytest.raises(InputError, match="not a CA"):
        Client("127.0.0.1:1", ca=files["client_cert"])
