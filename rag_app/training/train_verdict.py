"""Training the verdict cross-encoder (``python -m rag_app.training.train_verdict``) and measuring it.

The pairs (:mod:`rag_app.training.verdict_data`): questions made from statements of the
Stacks project, the HoTT book and the thesis sample (:mod:`rag_app.training.verdict_pairs`), a fifth of the
statements held out. The labelled sets' tuning halves are not trained on by default (``--tuning-weight 0``): the
answer's calibration and thresholds are fitted on them (``bench/verdict_answers.py fit``), so they must be halves
the reader never saw; the untouched halves are only measured. The model
(:mod:`rag_app.answering.verdict_cross_encoder`) is the packaged MiniLM with a LoRA adapter and a five-logit head,
trained by sentence-transformers' ``CrossEncoderTrainer`` with the cross-entropy loss; one temperature is fitted on
the held-out made pairs.

Written: the model directory (``--out``, the packaged one by default) and ``bench/results/verdict_cross_encoder.
{json,md}`` with the reliability plot ``verdict_cross_encoder_reliability.png``. About 15 minutes on 2 CPUs;
``--device cuda`` trains on a GPU.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from rag_app.answering.verdict_cross_encoder import (
    ADAPTER,
    CARD,
    KIND,
    PACKAGED_DIR,
    VerdictCrossEncoder,
    statement_text,
)
from rag_app.answering.verdict_reader import LABELS, SETTLING, fit_temperature, softmax
from rag_app.datasets.query_set import QuerySet
from rag_app.datasets.set_halves import TUNE, UNTOUCHED
from rag_app.training.verdict_data import (
    LABELLED_SETS,
    QUESTIONS,
    ROOT,
    LabelledPair,
    docno,
    labelled_pairs,
    made_pairs,
    markdown,
    measure,
    nearest_statements,
    reliability_plot,
    said_thresholds,
    sampled,
)
from rag_app.training.verdict_pairs import make_pairs

BASE_MODEL = "packaged:all-MiniLM-L6-v2"
_LORA_TARGETS = r".*encoder\.layer\.\d+\..*\.(query|key|value|dense)$"


def train(rows: list[dict], out: Path, args: argparse.Namespace) -> None:
    """Fit the adapter and the head on ``rows`` (question, statement, label) and save them under ``out``."""
    from datasets import Dataset
    from peft import LoraConfig, TaskType
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import CrossEntropyLoss
    from transformers import set_seed

    from retriever.models.cross_encoder_reranker import load_cross_encoder
    from retriever.models.embedding_registry import resolve_embedder

    set_seed(args.seed)
    base = Path(resolve_embedder(BASE_MODEL, None).model_path)
    model = load_cross_encoder(base, None, args.max_length, args.device, labels=len(LABELS))
    model.add_adapter(LoraConfig(task_type=TaskType.SEQ_CLS, r=args.lora_r, lora_alpha=2 * args.lora_r,
                                 lora_dropout=0.05, target_modules=_LORA_TARGETS,
                                 modules_to_save=["classifier", "pooler"]))  # fmt: skip
    random.Random(args.seed).shuffle(rows)
    work = Path(tempfile.mkdtemp(prefix="verdict-training-"))  # the trainer's output dir: nothing is kept there
    training = CrossEncoderTrainingArguments(
        output_dir=str(work), num_train_epochs=args.epochs, per_device_train_batch_size=args.batch_size,
        learning_rate=args.learning_rate, warmup_ratio=0.06, save_strategy="no", logging_steps=50, seed=args.seed,
        report_to="none", use_cpu=args.device == "cpu", max_steps=args.max_steps or -1,
    )  # fmt: skip
    trainer = CrossEncoderTrainer(model=model, args=training, train_dataset=Dataset.from_list(rows),
                                  loss=CrossEntropyLoss(model))  # fmt: skip
    trainer.train()
    shutil.rmtree(out / ADAPTER, ignore_errors=True)
    model[0].model.save_pretrained(str(out / ADAPTER))  # the adapter, the pooler and the head alone
    halve(out / ADAPTER / "adapter_model.safetensors")
    shutil.rmtree(work, ignore_errors=True)


def halve(weights: Path) -> None:
    """The stored weights in float16: half the size the package ships, logits equal to 1e-4 (loaded into float32)."""
    from safetensors.torch import load_file, save_file

    save_file({name: tensor.half() for name, tensor in load_file(weights).items()}, weights)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--out", type=Path, default=PACKAGED_DIR)
    parser.add_argument("--report", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--statements", type=int, default=6000, help="statements whose made pairs are used")
    parser.add_argument("--tuning-weight", type=int, default=0,
                        help="times a tuning-half pair is trained on (0: the halves stay clean for the calibration)")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--max-steps", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=128, help="tokens per pair (256: twice the time)")
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--lora-r", type=int, default=16)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--measure-only", action="store_true", help="measure the model in --out, do not train")
    args = parser.parse_args()
    started = time.monotonic()

    from rag_app.datasets.dev_corpora import HOTT, STACKS, THESIS_SAMPLE, read_corpus
    from rag_app.pipeline import demo_corpus_path

    corpus = [*read_corpus(args.shared, STACKS), *read_corpus(args.shared, HOTT),
              *read_corpus(args.shared, THESIS_SAMPLE)]  # fmt: skip
    demo = read_corpus(demo_corpus_path().parent, demo_corpus_path().name)
    by_docno = {docno(record): record for record in [*corpus, *demo]}
    made_all = make_pairs(corpus, random.Random(args.seed))
    made = made_pairs(sampled(made_all, args.statements, random.Random(args.seed)), {r.id: r for r in corpus})
    sets = [QuerySet.load(QUESTIONS / name) for name in LABELLED_SETS]
    pairs: list[LabelledPair] = [*made, *labelled_pairs(sets, by_docno, nearest_statements(sets, corpus))]
    texts = [(pair.question, statement_text(pair.statement)) for pair in pairs]
    labels = [LABELS.index(pair.label) for pair in pairs]
    if not args.measure_only:
        rows = []
        for (question, statement), label, pair in zip(texts, labels, pairs, strict=True):
            times = 1 if pair.side == "fit" else args.tuning_weight if pair.side == TUNE else 0
            rows += [{"question": question, "statement": statement, "label": label}] * times
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / CARD).write_text(json.dumps({"kind": KIND, "labels": list(LABELS), "base_model": BASE_MODEL,
                                                 "max_length": args.max_length}))  # fmt: skip
        train(rows, args.out, args)
    trained_seconds = round(time.monotonic() - started)
    measured = [n for n, pair in enumerate(pairs) if pair.side != "fit"]  # what was not trained on
    pairs, texts, labels = [pairs[n] for n in measured], [texts[n] for n in measured], [labels[n] for n in measured]
    model = VerdictCrossEncoder(args.out, args.device, batch_size=32)
    model.temperature = 1.0
    logits = model.logits(texts)
    calibrating = np.array([pair.side == "held out" for pair in pairs])
    temperature = fit_temperature(logits[calibrating], np.array(labels)[calibrating])
    probabilities = softmax(logits / temperature)
    thresholds = said_thresholds(probabilities, pairs)
    report = measure(probabilities, pairs, thresholds)
    provenance = {
        "kind": KIND,
        "identity": f"verdict-cross-encoder-{time.strftime('%Y%m%d')}",
        "labels": list(LABELS),
        "base_model": BASE_MODEL,
        "max_length": args.max_length,
        "temperature": temperature,
        "said_thresholds": thresholds,
        "trained": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "training": {key: value for key, value in vars(args).items() if key not in ("shared", "out", "report")},
        "pairs_made": len(made_all),
        "pairs": dict(Counter(f"{pair.source} / {pair.side}" for pair in pairs)),
        "seconds": trained_seconds,
    }
    (args.out / CARD).write_text(json.dumps({**provenance, "measured": report}, indent=1, default=str) + "\n")
    settles = probabilities[:, [LABELS.index(label) for label in SETTLING]].sum(axis=1)
    truth = np.array([pair.label in SETTLING for pair in pairs], dtype=float)
    curves = {}
    for name, side in (("corpus pairs held out", "held out"), ("labelled sets, tuning halves", TUNE),
                       ("labelled sets, untouched", UNTOUCHED)):  # fmt: skip
        mask = np.array([pair.side == side for pair in pairs])
        curves[name] = (settles[mask], truth[mask])
    args.report.mkdir(parents=True, exist_ok=True)
    reliability_plot(args.report / "verdict_cross_encoder_reliability.png", curves)
    (args.report / "verdict_cross_encoder.json").write_text(
        json.dumps({"provenance": provenance, "measured": report}, indent=1, default=str) + "\n"
    )
    made_by = (
        f"Made by `{' '.join(['python -m rag_app.training.train_verdict'])}` on {provenance['trained']} "
        f"({trained_seconds} s on {args.device}): {len(made_all)} pairs made from the corpus, those of "
        f"{args.statements} statements used; tuning halves x{args.tuning_weight}; {args.epochs} epoch(s), batch "
        f"{args.batch_size}, LoRA r {args.lora_r}, {args.max_length} tokens; temperature {temperature:.2f}; "
        f"said-thresholds (wrong at most 1 in 100 on the tuning halves): {json.dumps(thresholds)}. The reliability "
        "plot: `verdict_cross_encoder_reliability.png`."
    )
    (args.report / "verdict_cross_encoder.md").write_text(markdown("Verdict cross-encoder", made_by, report))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
