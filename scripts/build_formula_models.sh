#!/usr/bin/env bash
# Rebuild the shipped formula models (retriever/models/formula_weights/): the formula encoder, trained on
# sympy rewrites, and the MaRF fusion layer, trained on the development corpus (Stacks project + HoTT
# book + thesis sample from ../shared) with the thesis's split holding statements out. Then build the
# fusion vectors of the development index and compare every retrieval variant on every development
# set (eval/runs/formula). The models are copied into the package, which makes them the default
# `formula.models = "packaged"`.
# About 70 minutes on 2 CPU cores (train 36, fusion vectors 21, evaluation 10); on a GPU machine set
# RAG_APP_FORMULA__DEVICE=cuda and
# RAG_APP_EMBEDDING__DEVICE=cuda (the same code, the device from settings).
set -euo pipefail
cd "$(dirname "$0")/.."
RAG=.venv/bin/rag-app
DATA="${RAG_APP_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/rag-app}"
INDEX="$DATA/eval/index/packaged-all-MiniLM-L6-v2-unicode-math"   # the development index (`eval --dev` builds it too)
SHARED="${RAG_APP_EVALUATION__SHARED_DIR:-$(cd .. && pwd)/shared}"
OUT="$DATA/models/formula/dev-$(date +%Y%m%d-%H%M%S)"

$RAG ingest "$SHARED/corpora/stacks-project" "$SHARED/corpora/hott-book/main.tex" \
    "$SHARED/corpora/thesis-sample/data_sample.csv" --index "$INDEX"
$RAG train formula --index "$INDEX" --out "$OUT"
rm -rf retriever/models/formula_weights.new
mkdir -p retriever/models/formula_weights.new
cp -r "$OUT/card.json" "$OUT/encoder" "$OUT/fusion" retriever/models/formula_weights.new/
rm -rf retriever/models/formula_weights
mv retriever/models/formula_weights.new retriever/models/formula_weights
$RAG build-fusion --index "$INDEX" --rebuild
$RAG eval --dev -r dense -r hybrid -r hybrid-formula -r fusion -r fusion-maxsim -r formula \
    --split "$OUT/split.json" --no-ingest-corpus --out eval/runs/formula
