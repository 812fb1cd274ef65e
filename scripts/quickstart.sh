#!/usr/bin/env bash
# Set everything up, ingest the demo corpus if the index is empty, and start the chat on localhost.
set -euo pipefail
cd "$(dirname "$0")/.."
export RAG_APP_STARTED_AT="${RAG_APP_STARTED_AT:-$(date +%s)}"  # `rag-app ui` prints the time to a usable chat
# llama.cpp (the local model's server) is built in the background when it is not cached: the chat opens and
# searches at once, and its answers take the model's reading once the build is in (issue 94).
RAG_APP_LLAMA_BUILD=background bash scripts/setup.sh
export HF_HUB_OFFLINE=1  # every model is packaged: nothing is fetched from a hub
exec .venv/bin/rag-app ui --demo "$@"
