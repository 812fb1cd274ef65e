"""Benchmark (issue 60, point 1): statements/s of each embedder on 2 CPUs, and a Q8_0 copy of the GGUF model.

The same seeded sample of statements from an index, embedded one embedder at a time (nothing else
running): MiniLM through sentence-transformers, nomic-embed-text-v1.5 through llama.cpp as packaged (f16)
and as a Q8_0 copy quantized here by llama.cpp (``llama_model_quantize``, about a second). The Q8_0
copy's vectors are compared with the f16 ones (cosine), since a copy that buys no speed is not kept.
The floor is the default embedder (MiniLM, the first measured) in the same run: each rate is also given as a
ratio to it, so that a slower or busier machine does not move the comparison.

    python bench/experiments/embedder_speed.py --index DIR --out bench/results/embedders/speed.json

An experiment (bench/experiments/): it decided something once. Decision recorded in
docs/retrieval-and-evaluation.md, section "Issue 60: the stronger packaged embedder, and vectors that follow
in the background": statements/s of each candidate embedder on 2 CPUs.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the floors beside each figure

import numpy as np
from floors import ratio

from rag_app.training.index_store import open_index_store
from retriever.models.embedder_backends import embedder_for
from retriever.models.packaged_gguf import NOMIC_EMBED_TEXT_V1_5


def quantized_copy(source: Path, target: Path) -> Path:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    if llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(), ctypes.byref(params)) != 0:
        raise RuntimeError(f"llama.cpp could not quantize {source}")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sample", type=int, default=80)
    parser.add_argument("--max-seq-length", type=int, default=256)
    args = parser.parse_args()
    store, _ = open_index_store(args.index)
    texts = [r.search_text() for r in random.Random(60).sample(list(store.iter_records()), args.sample)]
    with tempfile.TemporaryDirectory() as scratch:
        q8 = quantized_copy(NOMIC_EMBED_TEXT_V1_5.path(), Path(scratch) / "nomic-embed-text-v1.5.q8_0.gguf")
        specs = ["packaged:all-MiniLM-L6-v2", "packaged:nomic-embed-text-v1.5", f"gguf:{q8}"]
        results, vectors = {}, {}
        for spec in specs:
            embedder = embedder_for(spec, max_seq_length=args.max_seq_length)
            embedder.embed_documents(texts[:2])  # load the model: not part of the rate
            started = time.perf_counter()
            vectors[spec] = embedder.embed_documents(texts)
            seconds = time.perf_counter() - started
            name = "nomic-embed-text-v1.5 Q8_0 (made here)" if spec.startswith("gguf:") else spec
            results[name] = {"statements_per_s": round(len(texts) / seconds, 2)}
        default_rate = results["packaged:all-MiniLM-L6-v2"]["statements_per_s"]
        for row in results.values():
            row["x_default_embedder"] = ratio(row["statements_per_s"], default_rate)
        agreement = np.sum(vectors[specs[1]] * vectors[specs[2]], axis=1)
        results["nomic-embed-text-v1.5 Q8_0 (made here)"]["cosine_to_f16"] = {
            "mean": round(float(agreement.mean()), 4),
            "min": round(float(agreement.min()), 4),
        }
    report = {
        "statements": len(texts),
        "max_seq_length": args.max_seq_length,
        "cpus": os.cpu_count(),
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
