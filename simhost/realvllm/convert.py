"""Run by `make vllm` in an engine venv's Python: a GGUF file → a Hugging Face model folder vLLM serves.

    python convert.py SRC_DIR FILE.gguf OUT_DIR

transformers' GGUF loader reads the model and the tokenizer (`from_pretrained(SRC_DIR, gguf_file=FILE)`), which
dequantizes the weights; they are saved as bfloat16 safetensors. Its quantizer marker is dropped first (newer
transformers refuse to save a model loaded from GGUF otherwise, though its tensors are plain). The tokenizer is fixed
as vLLM needs it: no `tokenizer.model` copy of the GGUF, `tokenizer_class` `PreTrainedTokenizerFast`, and
`post_processor` null (the GGUF's template processor makes `<|im_start|>` the end token, prefixes every prompt with
an extra `<|im_start|>`, and newer transformers then print byte-level text such as `ĊTheĠcity`).
"""

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main(src: str, name: str, out: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(src, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(src, gguf_file=name, dtype=torch.bfloat16)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tok.save_pretrained(out)
    folder = Path(out)
    (folder / "tokenizer.model").unlink(missing_ok=True)
    cfg_path = folder / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
    tj_path = folder / "tokenizer.json"
    tj = json.loads(tj_path.read_text())
    tj["post_processor"] = None
    tj_path.write_text(json.dumps(tj, ensure_ascii=False))
    for f in folder.iterdir():
        f.chmod(0o644)


if __name__ == "__main__":
    main(*sys.argv[1:4])
