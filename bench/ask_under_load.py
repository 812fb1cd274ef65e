"""Benchmark: answer latency while an ingest works beside it on the same CPUs (issue 48, point 6).

The quoting answer with the model asked every time (``bench/ask_latency.py``'s ``model-always``) on
the demo corpus, the first N of its questions, three ways in one run, side by side:

- ``idle``: nothing else running;
- ``beside ingest, nice 0``: ``rag-app ingest`` of the Stacks project running at full priority
  (``ingestion.nice = 0``, the behaviour before this benchmark);
- ``beside ingest, nice N``: the same ingest at the default lowered priority (``ingestion.nice``).

Each loaded run starts a fresh ingest into a temporary index and waits until it is parsing and
embedding before the first question; the ingest is stopped after the last. Each run measures its own
floors under its own load (bench/floors.py: the questions' embedding alone, the model's prompt reading
rate), so each figure is also given as a ratio: a slowdown the floors share is the machine's, one beyond
them is the answer's.

    python bench/ask_under_load.py [--questions 8] [--corpus ../shared/corpora/stacks-project] [--out bench/results]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ask_latency

from rag_app import Settings
from rag_app.result_files import json_text
from rag_app.serving.packaged_models import resolve_gguf

ROOT = Path(__file__).resolve().parents[1]
WARM_UP_S = 20.0  # an ingest's first seconds load models; the load that matters comes after


@contextlib.contextmanager
def ingest_beside(corpus: Path, nice: int | None, workdir: Path) -> Iterator[None]:
    if nice is None:
        yield
        return
    env = {**os.environ, "RAG_APP_INGESTION__NICE": str(nice), "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    log = (workdir / f"ingest-nice{nice}.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "rag_app.cli", "ingest", str(corpus), "--index", str(workdir / f"load-{nice}")],
        stdout=log, stderr=subprocess.STDOUT, env=env,
    )  # fmt: skip
    time.sleep(WARM_UP_S)
    try:
        if process.poll() is not None:
            raise RuntimeError(f"the ingest beside ended early (exit {process.returncode}); see {log.name}")
        yield
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=30)
        if process.poll() is None:
            process.kill()
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=8, help="the first N questions of bench/ask_latency.py")
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared/corpora/stacks-project")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results")
    args = parser.parse_args()
    questions = ask_latency.QUESTIONS[: args.questions]
    default_nice = Settings().ingestion.nice
    conditions: dict[str, int | None] = {
        "idle": None,
        "beside ingest, nice 0": 0,
        f"beside ingest, nice {default_nice}": default_nice,
    }
    runs: dict[str, Any] = {}
    for name, nice in conditions.items():
        with tempfile.TemporaryDirectory() as work:
            workdir = Path(work)
            base = Settings(data_dir=workdir / "data", index_dir=workdir / "index")
            base.data_dir.mkdir(parents=True)
            base.llm.local_model = str(resolve_gguf(base.llm.local_model, Settings().data_dir))
            settings = ask_latency.model_always(base)
            with ingest_beside(args.corpus, nice, workdir):
                runs[name] = ask_latency.ask_all(settings, settings.data_dir / "llm-server.log", questions)
        print(name, json.dumps(runs[name]["summary"]), flush=True)
    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "questions": args.questions,
        "corpus_beside": str(args.corpus),
        "runs": runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ask_under_load.json").write_text(json_text(result))
    (args.out / "ask_under_load.md").write_text(markdown(result))
    print(markdown(result))


def markdown(result: dict[str, Any]) -> str:
    runs = result["runs"]
    names = list(runs)
    rows = [
        ("first token p50 (ms)", "first_token_ms", "p50"),
        ("first token p95 (ms)", "first_token_ms", "p95"),
        ("full answer p50 (ms)", "full_answer_ms", "p50"),
        ("full answer p95 (ms)", "full_answer_ms", "p95"),
        ("retrieval p50 (ms)", "retrieval_ms", "p50"),
    ]
    lines = [
        "# Answer latency beside an ingest (embedded default, quoting answer, model asked every time)",
        "",
        f"{result['machine']['cpus']} CPUs, {result['date']}; the first {result['questions']} questions of "
        f"bench/ask_latency.py on the demo corpus; the ingest beside: `rag-app ingest {result['corpus_beside']}`.",
        "",
        "| measure | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---:" for _ in names) + " |",
    ]
    for label, key, quantile in rows:
        lines.append(f"| {label} | " + " | ".join(str(runs[n]["summary"][key][quantile]) for n in names) + " |")
    idle = runs[names[0]]["summary"]["first_token_ms"]["p50"]
    ratios = ", ".join(f"{n}: {runs[n]['summary']['first_token_ms']['p50'] / idle:.1f}x" for n in names[1:])
    lines += [
        "| first token p50 / p95, in query embeddings (floor) | "
        + " | ".join(ask_latency.pair(runs[n]["summary"], "first_token_x_embedding") for n in names)
        + " |",
        "| full answer p50 / p95, in prompt tokens the model reads meanwhile (floor) | "
        + " | ".join(ask_latency.pair(runs[n]["summary"], "full_answer_in_prompt_tokens") for n in names)
        + " |",
        "| floor: query embedding p50 (ms) | "
        + " | ".join(str(runs[n]["floors"]["query_embedding"]["p50_ms"]) for n in names)
        + " |",
        "| floor: the model's prompt tokens/s | "
        + " | ".join(str(runs[n]["floors"]["model"]["prompt_tokens_per_s"]) for n in names)
        + " |",
    ]
    lines += ["", f"First token p50 against idle: {ratios} (target: at most 3x)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
