"""wick.Llama.load of a Hugging Face folder that transformers itself wrote (save_pretrained): the
logits of a prompt and of decode steps are transformers' own, for llama and mistral, f32, f16 and
bf16, tied and untied. Skipped where torch and transformers are not installed."""
import json

import numpy as np
import pytest

import wick

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB = 64


def write_tokenizer(folder):
    # A byte-level BPE vocabulary without merges: enough for Llama.load, which builds the tokenizer.
    tokens = ["<s>", "</s>", "\u0120"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens += [f"t{i}" for i in range(VOCAB - len(tokens))]
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tok = {
        "version": "1.0",
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, t in enumerate(tokens[:2])],
        "normalizer": None, "pre_tokenizer": level, "post_processor": level, "decoder": level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": []},
    }
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    (folder / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>"}))


@pytest.mark.parametrize("arch,dtype,tied,tol", [
    ("llama", "float32", True, 5e-3),  # wick's default f16 KV cache rounds k and v
    ("llama", "bfloat16", False, 5e-2),  # activations meet bf16 weights rounded to bf16
    ("mistral", "float16", False, 1e-2),
])
def test_logits_match_transformers(tmp_path, arch, dtype, tied, tol):
    torch.manual_seed(1234)
    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                  rms_norm_eps=1e-5, tie_word_embeddings=tied,
                  bos_token_id=0, eos_token_id=1)
    if arch == "llama":
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))
    else:
        model = transformers.MistralForCausalLM(transformers.MistralConfig(sliding_window=None, **common))
    # Weights that make every layer and position matter (the default init is nearly silent).
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.normal_(1.0, 0.2)
            else:
                p.normal_(0.0, 1.0 / p.shape[-1] ** 0.5)
    model = model.to(getattr(torch, dtype)).eval()
    model.save_pretrained(tmp_path)  # safetensors: the default since transformers 4.35
    write_tokenizer(tmp_path)

    ids = [3, 17, 42, 5, 9, 60, 1, 33]
    with torch.no_grad():  # in f32 from the stored (rounded) weights
        want = model.float()(torch.tensor([ids])).logits[0].numpy()

    m = wick.Llama.load(str(tmp_path), "cpu", max_seq=32)
    assert (m.config.n_heads, m.config.n_kv_heads, m.config.tied_embeddings) == (4, 2, tied)
    assert m.tokenizer.eos_id == 1
    got = [np.asarray(m.forward(ids[:5]))] + [np.asarray(m.forward([t])) for t in ids[5:]]
    for i, g in enumerate(got):
        w = want[4 + i]
        np.testing.assert_allclose(g, w, atol=tol * np.abs(w).max(), rtol=0, err_msg=f"position {4 + i}")
