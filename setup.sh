#!/usr/bin/env bash
# One command that sets everything up: a virtual environment in .venv with placement
# (editable), its development tools, the optional Ray extra (the tests run batches on a
# local Ray instance), the sharding peer (TorchRec's planner) and scikit-learn for the real
# federated training of `placement bench fl-training`.
# Usage: ./setup.sh   (then: source .venv/bin/activate)
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "placement needs Python >= 3.11")'
"$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[dev,ray,sharding-peers,fl-training]"
# The sharding family's peer, TorchRec's planner as it ships (CPU torch 2.13.0 from this
# machine's disk); torchrec without its dependencies, which would pull the CUDA fbgemm-gpu
# (the sharding-peers extra in pyproject.toml says more).
.venv/bin/python -m pip install --quiet --no-deps "torchrec==1.9.2"
.venv/bin/placement --help >/dev/null
echo "placement is installed in .venv; activate it with: source .venv/bin/activate"
