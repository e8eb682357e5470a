"""Dependency vulnerability audit for CI: pip-audit over the installed environment, with a
policy for what pip-audit leaves open.

- A known vulnerability in an installed distribution: exit 1, listing it and the fixed
  versions.
- The vulnerability service (PyPI's JSON API) unreachable after ``--attempts`` tries: exit 1
  with a message saying so (fail closed: an unaudited build is not reported as audited).
  ``PLACEMENT_AUDIT_OFFLINE=warn`` turns this into a warning for an offline machine.
- Distributions the service does not know (a private or mirrored version, or a service that
  serves no per-version data): listed as not audited; if none at all could be audited the
  step says AUDIT INCONCLUSIVE in capitals and passes (nothing in our power fixes it).

    python benchmarks/reliability/audit.py            # what .ci/run runs
    python benchmarks/reliability/audit.py --report pip-audit.json   # apply the policy only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

NETWORK_SIGNS = (
    "connectionerror",
    "max retries exceeded",
    "temporary failure in name resolution",
    "timed out",
    "connection refused",
    "network is unreachable",
    "httpsconnectionpool",
    "service unavailable",
)


def verdict(report: dict[str, Any] | None, stderr: str, offline_ok: bool) -> tuple[int, list[str]]:
    """(exit code, lines to print) for a pip-audit JSON report (None: no report) and its
    stderr."""
    if report is None:
        lowered = stderr.lower()
        if any(sign in lowered for sign in NETWORK_SIGNS):
            lines = [
                "dependency audit: the vulnerability service (PyPI's JSON API) could not be "
                "reached; the build is NOT audited",
                *stderr.strip().splitlines()[-3:],
            ]
            if offline_ok:
                return 0, [*lines, "PLACEMENT_AUDIT_OFFLINE=warn: passing unaudited"]
            return 1, [*lines, "failing (set PLACEMENT_AUDIT_OFFLINE=warn on an offline machine)"]
        return 1, ["dependency audit: pip-audit failed:", *stderr.strip().splitlines()[-5:]]
    deps = report.get("dependencies", [])
    vulnerable = [d for d in deps if d.get("vulns")]
    skipped = [d for d in deps if "skip_reason" in d]
    audited = len(deps) - len(skipped)
    lines = [f"dependency audit: {audited} of {len(deps)} distributions audited"]
    if skipped:
        lines.append(
            f"  not audited ({len(skipped)}): "
            + ", ".join(f"{d['name']} {d.get('version', '')}".strip() for d in skipped[:12])
            + (" ..." if len(skipped) > 12 else "")
        )
    for d in vulnerable:
        for v in d["vulns"]:
            fixes = ", ".join(v.get("fix_versions", [])) or "no fixed version"
            lines.append(
                f"  VULNERABLE {d['name']} {d.get('version', '')}: {v.get('id')} (fixed in {fixes})"
            )
    if vulnerable:
        return 1, [*lines, f"dependency audit: {len(vulnerable)} vulnerable distributions: failing"]
    if deps and audited == 0:
        return 0, [
            *lines,
            "AUDIT INCONCLUSIVE: the vulnerability service knows none of the installed versions",
        ]
    return 0, [*lines, "dependency audit: no known vulnerabilities"]


def run_pip_audit(attempts: int) -> tuple[dict[str, Any] | None, str]:
    stderr = ""
    for attempt in range(attempts):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip_audit",
                "--skip-editable",
                "--progress-spinner",
                "off",
                "--format",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        stderr = proc.stderr
        try:
            return json.loads(proc.stdout), stderr
        except json.JSONDecodeError:
            if not any(sign in stderr.lower() for sign in NETWORK_SIGNS):
                return None, stderr
        if attempt + 1 < attempts:
            time.sleep(10)
    return None, stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attempts", type=int, default=3)
    ap.add_argument("--report", help="apply the policy to a saved pip-audit JSON report")
    args = ap.parse_args()
    offline_ok = os.environ.get("PLACEMENT_AUDIT_OFFLINE") == "warn"
    if args.report:
        with open(args.report) as fh:
            report, stderr = json.load(fh), ""
    else:
        report, stderr = run_pip_audit(args.attempts)
    code, lines = verdict(report, stderr, offline_ok)
    print("\n".join(lines), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
