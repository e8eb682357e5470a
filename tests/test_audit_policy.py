"""The CI audit step's policy (benchmarks/reliability/audit.py) on pip-audit reports."""

from __future__ import annotations

from benchmarks.reliability.audit import verdict


def test_a_known_vulnerability_fails_the_step() -> None:
    report = {
        "dependencies": [
            {
                "name": "requests",
                "version": "2.19.0",
                "vulns": [{"id": "PYSEC-2018-28", "fix_versions": ["2.20.0"]}],
            },
            {"name": "numpy", "version": "2.0.0", "vulns": []},
        ]
    }
    code, lines = verdict(report, "", offline_ok=False)
    assert code == 1
    assert any("VULNERABLE requests 2.19.0: PYSEC-2018-28 (fixed in 2.20.0)" in ln for ln in lines)


def test_an_unreachable_service_fails_closed_unless_told_to_warn() -> None:
    err = "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='pypi.org'): Max retries exceeded"
    code, lines = verdict(None, err, offline_ok=False)
    assert code == 1 and "NOT audited" in lines[0]
    code, lines = verdict(None, err, offline_ok=True)
    assert code == 0 and "passing unaudited" in lines[-1]


def test_clean_and_inconclusive_reports_pass_and_say_which() -> None:
    clean = {"dependencies": [{"name": "numpy", "version": "2.0.0", "vulns": []}]}
    assert verdict(clean, "", False) == (
        0,
        [
            "dependency audit: 1 of 1 distributions audited",
            "dependency audit: no known vulnerabilities",
        ],
    )
    unknown = {"dependencies": [{"name": "numpy", "skip_reason": "Dependency not found on PyPI"}]}
    code, lines = verdict(unknown, "", False)
    assert code == 0 and lines[-1].startswith("AUDIT INCONCLUSIVE")
    code, lines = verdict(None, "Traceback: something else", False)
    assert code == 1 and "pip-audit failed" in lines[0]
