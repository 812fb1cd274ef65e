#!/usr/bin/env bash
# Train and evaluate the candidate default embedding: a LoRA adapter on the packaged all-MiniLM-L6-v2,
# trained with `train embed` on the development corpus (Stacks project + HoTT book + thesis sample
# from ../shared, pairs that need no LLM), then compared with the base on every development set,
# seen and unseen papers apart. With PUBLISH=1 the result is copied into retriever/models/embeddings/ (to
# ship it; then point EmbeddingSettings.model at packaged:math-minilm-l6) -- do that only when it
# beats the base on the development sets.
# About 45 minutes on 2 CPU cores (of which ~12 embedding the corpus the first time); minutes on a GPU
# (RAG_APP_TRAINING__EMBED__DEVICE=cuda RAG_APP_EMBEDDING__DEVICE=cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
RAG=.venv/bin/rag-app
BASE=packaged:all-MiniLM-L6-v2
NAME=math-minilm-l6
DATA="${RAG_APP_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/rag-app}"
INDEX="$DATA/eval/index/packaged-all-MiniLM-L6-v2-unicode-math"   # the base model's development index (`eval --dev` builds it too)
SHARED="${RAG_APP_EVALUATION__SHARED_DIR:-$(cd .. && pwd)/shared}"
export RAG_APP_EMBEDDING__MODEL=$BASE

$RAG ingest "$SHARED/corpora/stacks-project" "$SHARED/corpora/hott-book/main.tex" \
    "$SHARED/corpora/thesis-sample/data_sample.csv" --index "$INDEX"
$RAG train embed --index "$INDEX" --name "$NAME" --base "$BASE" --max-pairs 6400 --learning-rate 3e-4 \
    --json | tee /tmp/train-embed.json
MODEL_DIR=$(.venv/bin/python -c 'import json,sys; print(json.load(open(sys.argv[1]))["directory"])' /tmp/train-embed.json)
$RAG eval --dev --embedder "$BASE" --embedder "registry:$NAME" --split "$MODEL_DIR/split.json" \
    --out eval/runs/embedding
if [ "${PUBLISH:-0}" = 1 ]; then
    .venv/bin/python -m rag_app.training.publish "$MODEL_DIR" eval/runs/embedding/report.json
fi
