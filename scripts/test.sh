#!/usr/bin/env bash
# Set up (if needed), lint, and run the test suite: every test (CI runs this). `--fast` runs the fast
# tier only (no `slow` or `llm` tests: a few minutes, for a change's first check). Other arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False
.venv/bin/ruff check . || exit 1
if [ "${1:-}" = "--fast" ]; then
    shift
    set -- -m "not slow and not llm" "$@"
fi
.venv/bin/python -m pytest "$@"
status=$?
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests" >&2
    exit 1
fi
exit "$status"
