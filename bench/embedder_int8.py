"""Benchmark (issue 60, point 1): a sentence-transformers embedder with its linear layers in int8, on 2 CPUs.

The quantized copy the issue asks about, for a model that llama.cpp does not read (EmbeddingGemma-300M):
torch's dynamic quantization (``torch.ao.quantization.quantize_dynamic``: weights stored in int8,
activations quantized per batch, fbgemm kernels) made in memory in a second, no file written. The same
seeded sample of statements is embedded by the model as it is (fp32) and by the int8 copy, in turns, so
that both see the same load on the cores; the int8 vectors are compared with the fp32 ones (cosine), and
a copy that loses agreement or buys no speed is not worth a setting.

    python bench/embedder_int8.py --index DIR --spec PATH --out bench/results/embedders-gemma/int8.json
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import numpy as np
import torch

from rag_app.training.index_store import open_index_store
from retriever.models.embedder import Embedder


def int8_copy(embedder: Embedder) -> Embedder:
    """The same embedder whose model's ``nn.Linear`` layers run in int8 (a deep copy: the original stays)."""
    quantized = copy.copy(embedder)
    model = copy.deepcopy(embedder.model)
    quantized.__dict__["model"] = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    return quantized


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--spec", required=True, help="a sentence-transformers embedder spec or path")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sample", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2, help="turns of fp32 then int8 (the rate is their best)")
    parser.add_argument("--max-seq-length", type=int, default=128)
    args = parser.parse_args()
    store, _ = open_index_store(args.index)
    texts = [r.search_text() for r in random.Random(60).sample(list(store.iter_records()), args.sample)]
    queries = [r.name or r.search_text()[:80] for r in random.Random(61).sample(list(store.iter_records()), 32)]
    fp32 = Embedder(args.spec, batch_size=16, max_seq_length=args.max_seq_length)
    fp32.embed_documents(texts[:2])  # load the model: not part of the rate
    started = time.perf_counter()
    int8 = int8_copy(fp32)
    seconds_to_quantize = time.perf_counter() - started
    int8.embed_documents(texts[:2])
    rates: dict[str, list[float]] = {"fp32": [], "int8": []}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, embedder in (("fp32", fp32), ("int8", int8)):
            started = time.perf_counter()
            vectors[name] = embedder.embed_documents(texts)
            rates[name].append(len(texts) / (time.perf_counter() - started))
    documents = np.sum(vectors["fp32"] * vectors["int8"], axis=1)
    query_agreement = np.sum(fp32.embed_queries(queries) * int8.embed_queries(queries), axis=1)
    report = {
        "spec": args.spec,
        "statements": len(texts),
        "max_seq_length": args.max_seq_length,
        "cpus": os.cpu_count(),
        "seconds_to_quantize": round(seconds_to_quantize, 1),
        "statements_per_s": {name: round(max(values), 2) for name, values in rates.items()},
        "every_round": {name: [round(v, 2) for v in values] for name, values in rates.items()},
        "cosine_int8_to_fp32": {
            "documents_mean": round(float(documents.mean()), 4),
            "documents_min": round(float(documents.min()), 4),
            "queries_mean": round(float(query_agreement.mean()), 4),
            "queries_min": round(float(query_agreement.min()), 4),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
