#!/usr/bin/env bash
# Build llama.cpp for this CPU and install it into .venv: the script ships inside the rag_app package
# (rag_app/serving/build_llama_cpp.sh, so that an installed rag-app builds its own server with `rag-app llm build`);
# this is its old address, kept for scripts/setup.sh and whoever runs it by hand. Same arguments, same environment.
exec bash "$(dirname "$0")/../rag_app/serving/build_llama_cpp.sh" "$@"
