"""GPU check: the embedder and `train embed`'s trainer on CUDA, on the generated training questions.

The GPU path (``embedding.device = "cuda"``, ``training.embed.device = "cuda"``) is tested on CPU by
units; this runs it for real where a GPU is lent. Two steps:

    # here: the statements the questions are about, plus seeded distractors, and the questions
    python bench/gpu_training_check.py export --index DEV_INDEX --out .gpu
    # on the GPU machine (bench/results/gpu_training_check.json)
    python bench/gpu_training_check.py run --data .gpu --model .gpu/minilm --out $OUT --stub-missing

``run`` embeds the pool on CPU and on CUDA (vectors compared, speed), then fine-tunes the embedder on CUDA
with `EmbeddingTrainer` (the class `rag-app train embed` uses: LoRA by default, and the full model) on
80 % of the questions (split by statement) and scores base and fine-tuned models on the other 20 %:
Hit@10 and MRR@10 over the pool, dense only. ``--stub-missing`` stands in empty modules for the packages
of the index and the servers (Chroma, BM25, the OpenAI client, ...) that the GPU image lacks and that
the embedder and the trainer never call: only they are checked.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import json
import random
import sys
import time
import types
from pathlib import Path

ABSENT_ON_THE_GPU_IMAGE = (
    "chromadb", "bm25s", "Stemmer", "openai", "defusedxml", "bs4", "ir_measures", "pebble", "orjson",
    "pybase64", "overrides", "jsonschema", "httpx2", "opentelemetry",
)  # fmt: skip


class _Absent(type):
    """What an absent package's names are: classes (exceptions, for ``except`` clauses), empty when iterated
    (module-level constants such as stopword lists), with absent attributes in turn."""

    def __iter__(cls) -> object:
        return iter(())

    def __getattr__(cls, name: str) -> type:
        return _Absent(name, (Exception,), {})

    def __call__(cls, *args: object, **kwargs: object) -> type:  # a measure built at import time, say
        return cls

    def __matmul__(cls, other: object) -> type:  # ir_measures' ``nDCG@10``
        return cls

    def __truediv__(cls, other: object) -> type:
        return cls


def _absent_attribute(name: str) -> type:
    if name.startswith("__"):  # __file__, __spec__ ...: asked by inspect and importlib, absent as usual
        raise AttributeError(name)
    return _Absent(name, (Exception,), {})


class _EmptyModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of the packages above give modules whose every attribute is :class:`_Absent`."""

    def find_spec(self, name: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name.split(".")[0] in ABSENT_ON_THE_GPU_IMAGE:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = types.ModuleType(spec.name)
        module.__path__ = []  # a package: its submodules import too
        module.__getattr__ = _absent_attribute  # type: ignore[method-assign]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def export(index: Path, out: Path, distractors: int, seed: int) -> None:
    from rag_app import MathRAG, Settings

    generated = Path("eval/training-data/generated-questions.jsonl")
    questions = [json.loads(line) for line in generated.read_text().splitlines()[1:]]
    store = MathRAG(Settings(index_dir=index)).index.store
    ids = sorted(store.all_ids())
    wanted = {q["statement_id"] for q in questions}
    others = random.Random(seed).sample([i for i in ids if i not in wanted], distractors)
    records = store.get(sorted(wanted) + others)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "records.jsonl").open("w") as handle:
        for record in records:
            handle.write(json.dumps({**record.to_dict(), "proof": ""}, ensure_ascii=False) + "\n")
    with (out / "questions.jsonl").open("w") as handle:
        for question in questions:
            handle.write(
                json.dumps({"question": question["question"], "statement_id": question["statement_id"]}) + "\n"
            )
    print(f"{len(records)} statements, {len(questions)} questions in {out}")


def _scores(embedder: object, questions: list[dict[str, str]], records: list[object]) -> dict[str, float]:
    import numpy as np

    documents = embedder.embed_documents([r.search_text() for r in records])  # type: ignore[attr-defined]
    queries = embedder.embed_queries([q["question"] for q in questions])  # type: ignore[attr-defined]
    position = {r.id: row for row, r in enumerate(records)}  # type: ignore[attr-defined]
    similarity = np.asarray(queries) @ np.asarray(documents).T
    hits, reciprocal = 0, 0.0
    for row, question in enumerate(questions):
        top = np.argsort(-similarity[row])[:10].tolist()
        gold = position[question["statement_id"]]
        if gold in top:
            hits += 1
            reciprocal += 1 / (top.index(gold) + 1)
    return {"hit@10": round(hits / len(questions), 3), "mrr@10": round(reciprocal / len(questions), 3)}


def run(data: Path, model: Path, out: Path, seed: int, device: str = "cuda", epochs: int = 4) -> None:
    import numpy as np
    import torch
    from safetensors.torch import load_file, save_file

    from ingestion.records import StatementRecord
    from rag_app.settings import EmbedTrainingSettings
    from rag_app.training.embedding_trainer import EmbeddingTrainer
    from rag_app.training.training_pairs import TrainingPair
    from retriever.models.embedder import Embedder

    name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    result: dict[str, object] = {"device": name, "model": str(model), "torch": torch.__version__}
    # The carried copy is float16 (to travel); the trainer starts from float32 as the packaged model does.
    full = Path(f"/tmp/{model.name}-fp32")
    if not full.exists():
        import shutil

        shutil.copytree(model, full)
        weights = load_file(str(model / "model.safetensors"))
        save_file(
            {k: v.float() for k, v in weights.items()}, str(full / "model.safetensors"), metadata={"format": "pt"}
        )
    records = [
        StatementRecord.from_dict(json.loads(line)) for line in (data / "records.jsonl").read_text().splitlines()
    ]
    by_id = {record.id: record for record in records}
    questions = [json.loads(line) for line in (data / "questions.jsonl").read_text().splitlines()]
    questions = [q for q in questions if q["statement_id"] in by_id]
    statements = sorted({q["statement_id"] for q in questions})
    random.Random(seed).shuffle(statements)
    held_out = set(statements[: len(statements) // 5])
    train = [q for q in questions if q["statement_id"] not in held_out]
    test = [q for q in questions if q["statement_id"] in held_out]
    result.update(statements=len(records), train_questions=len(train), test_questions=len(test))

    vectors = {}
    for where in ("cpu", device):
        embedder = Embedder(str(full), device=where, batch_size=128)
        embedder.embed_documents(["warm up"])
        started = time.perf_counter()
        vectors[where] = np.asarray(embedder.embed_documents([r.search_text() for r in records]))
        result[f"embed_{where}_statements_per_s"] = round(len(records) / (time.perf_counter() - started), 1)
    result[f"{device}_vs_cpu_min_cosine"] = round(float((vectors["cpu"] * vectors[device]).sum(axis=1).min()), 5)
    base = Embedder(str(full), device=device, batch_size=128)
    result["base"] = _scores(base, test, records)

    pairs = [TrainingPair(q["question"], q["statement_id"], "llm_question") for q in train]
    for kind, lora in (("lora", True), ("full", False)):
        settings = EmbedTrainingSettings(lora=lora, epochs=epochs, batch_size=32, hard_negatives=False, seed=seed)
        trainer = EmbeddingTrainer(settings, Embedder(str(full), device=device), device=device)
        run = trainer.train(pairs, by_id, Path(f"/tmp/train-{kind}"), resume=False)
        tuned = Embedder(str(full if lora else run.weights_dir), device=device, batch_size=128)
        if lora:  # the served embedder loads an adapter this way (Embedder.model, registry entries)
            tuned.model.load_adapter(str(run.weights_dir))
        result[kind] = {"steps": run.steps, "seconds": run.seconds, "final_loss": run.final_loss,
                        **_scores(tuned, test, records)}  # fmt: skip
        print(kind, result[kind], flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_training_check.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["export", "run"])
    parser.add_argument("--index", type=Path)
    parser.add_argument("--data", type=Path, default=Path(".gpu"))
    parser.add_argument("--model", type=Path, default=Path(".gpu/minilm"))
    parser.add_argument("--out", type=Path, default=Path(".gpu"))
    parser.add_argument("--distractors", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--stub-missing", action="store_true")
    parser.add_argument("--device", default="cuda", help="cpu: a dry run of the same steps")
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    if args.stub_missing:
        sys.meta_path.insert(0, _EmptyModules())
    if args.step == "export":
        export(args.index, args.out, args.distractors, args.seed)
    else:
        run(args.data, args.model, args.out, args.seed, args.device, args.epochs)


if __name__ == "__main__":
    main()
