#!/usr/bin/env bash
# Set everything up, ingest the demo corpus if the index is empty, and start the chat on localhost.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1  # every model is packaged: nothing is fetched from a hub
exec .venv/bin/rag-app ui --demo "$@"
