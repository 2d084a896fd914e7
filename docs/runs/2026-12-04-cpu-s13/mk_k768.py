# A llama model with random f16 weights, hidden 768 (k a multiple of 256, so llama-quantize's Q4_K_M
# keeps K types), with SmolLM2's vocabulary copied from its GGUF.
import sys, numpy as np
sys.path.insert(0, "/tmp/lsrc/llama_cpp_python-0.3.36/vendor/llama.cpp/gguf-py")
import gguf
src = gguf.GGUFReader("/work/main/models/SmolLM2-135M-Instruct.Q4_1.gguf")
def field(name):
    f = src.fields[name]
    return f
w = gguf.GGUFWriter("/tmp/k768-f16.gguf", "llama")
H, L, F, NH, NKV, V = 768, 12, 2048, 12, 4, 49152
w.add_context_length(2048); w.add_embedding_length(H); w.add_block_count(L)
w.add_feed_forward_length(F); w.add_head_count(NH); w.add_head_count_kv(NKV)
w.add_rope_dimension_count(H // NH); w.add_layer_norm_rms_eps(1e-5); w.add_rope_freq_base(10000.0)
w.add_file_type(1)
# tokenizer fields
for name in ["tokenizer.ggml.model", "tokenizer.ggml.pre"]:
    f = src.fields[name]; w.add_string(name, bytes(f.parts[f.data[0]]).decode())
toks = [bytes(src.fields["tokenizer.ggml.tokens"].parts[i]).decode("utf-8", "replace") for i in src.fields["tokenizer.ggml.tokens"].data]
w.add_token_list(toks)
f = src.fields["tokenizer.ggml.token_type"]; w.add_token_types([int(f.parts[i][0]) for i in f.data])
f = src.fields["tokenizer.ggml.merges"]; w.add_token_merges([bytes(f.parts[i]).decode("utf-8","replace") for i in f.data])
for name in ["tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"]:
    if name in src.fields:
        f = src.fields[name]; w.add_uint32(name, int(f.parts[f.data[0]][0]))
rng = np.random.default_rng(0)
def t(name, shape, scale=0.02):
    w.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float16))
def n(name, size):
    w.add_tensor(name, np.ones(size, dtype=np.float32))
t("token_embd.weight", (V, H)); n("output_norm.weight", H); t("output.weight", (V, H))
kv = H // NH * NKV
for i in range(L):
    p = f"blk.{i}."
    n(p + "attn_norm.weight", H); n(p + "ffn_norm.weight", H)
    t(p + "attn_q.weight", (H, H)); t(p + "attn_k.weight", (kv, H)); t(p + "attn_v.weight", (kv, H))
    t(p + "attn_output.weight", (H, H)); t(p + "ffn_gate.weight", (F, H)); t(p + "ffn_up.weight", (F, H))
    t(p + "ffn_down.weight", (H, F))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print("ok")
