"""Ship a registered fine-tune inside the package, with its evaluation in the model card.

``python -m rag_app.training.publish MODEL_DIR REPORT.json`` copies ``MODEL_DIR`` (a registry
version) to ``retriever/models/embeddings/NAME/vN`` and records, per development set, the leading measure
of each retriever overall and by split group (statements trained on, seen papers, unseen papers).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from retriever.models.embedding_registry import PACKAGED_EMBEDDINGS_DIR, RegisteredEmbedder


def eval_metrics(report: dict[str, Any]) -> dict[str, Any]:
    provenance = report["provenance"]
    metrics: dict[str, Any] = {"date": provenance.get("date"), "commit": provenance.get("git_commit")}
    for evaluation in report["sets"]:
        primary = evaluation["primary"]
        metrics[evaluation["query_set"]["name"]] = {
            "measure": primary,
            "group_sizes": evaluation.get("group_sizes", {}),
            "retrievers": {
                scores["name"]: {
                    "all": scores["aggregate"].get(primary),
                    **{group: values.get(primary) for group, values in scores.get("groups", {}).items()},
                }
                for scores in evaluation["retrievers"]
            },
        }
    return metrics


def publish(model_dir: Path, report_path: Path, target_root: Path = PACKAGED_EMBEDDINGS_DIR) -> Path:
    model = RegisteredEmbedder.read(model_dir)
    card = dict(model.card)
    card["metrics"] = eval_metrics(json.loads(report_path.read_text(encoding="utf-8")))
    card["data"] = {key: value for key, value in card.get("data", {}).items() if key != "index"}
    target = target_root / model.name / f"v{model.version}"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(model_dir, target)
    RegisteredEmbedder(model.name, model.version, target, card).write_card()
    return target


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python -m rag_app.training.publish MODEL_DIR REPORT.json")
    print(publish(Path(sys.argv[1]), Path(sys.argv[2])))
