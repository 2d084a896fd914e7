"""wick.Llama and wick.Tokenizer on a tiny random llama written with wick.GgufWriter."""
import pathlib
import subprocess

import numpy as np
import pytest

import wick

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHARS = ["\u0120"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]  # "Ġ" is the byte-level space
MERGES = ["t h", "th e", "\u0120 a"]
HIDDEN, LAYERS, HEADS, KV_HEADS, FFN, CONTEXT = 32, 2, 4, 2, 48, 64


def write_tiny_llama(path, rng):
    tokens = SPECIALS + CHARS + ["th", "the", "\u0120a"]
    w = wick.GgufWriter()
    for key, value in [
        ("general.architecture", "llama"), ("general.name", "tiny-llama"),
        ("llama.block_count", LAYERS), ("llama.context_length", CONTEXT),
        ("llama.embedding_length", HIDDEN), ("llama.feed_forward_length", FFN),
        ("llama.attention.head_count", HEADS), ("llama.attention.head_count_kv", KV_HEADS),
        ("llama.rope.freq_base", 10000.0), ("llama.attention.layer_norm_rms_epsilon", 1e-5),
        ("general.file_type", 0), ("llama.vocab_size", len(tokens)),
        ("llama.rope.dimension_count", HIDDEN // HEADS),
        ("tokenizer.ggml.add_space_prefix", False), ("tokenizer.ggml.add_bos_token", False),
        ("tokenizer.ggml.model", "gpt2"), ("tokenizer.ggml.pre", "smollm"),
        ("tokenizer.ggml.tokens", tokens),
        ("tokenizer.ggml.token_type", [3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS))),
        ("tokenizer.ggml.merges", MERGES),
        ("tokenizer.ggml.bos_token_id", 1), ("tokenizer.ggml.eos_token_id", 2),
        ("tokenizer.ggml.unknown_token_id", 0), ("tokenizer.ggml.padding_token_id", 2),
        ("tokenizer.chat_template",
         "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
         "{{ message['content'] }}<|im_end|>\n{% endfor %}"
         "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"),
    ]:
        w.set(key, value)

    def add(name, shape, scale):
        w.add_tensor(name, wick.from_numpy(rng.uniform(-scale, scale, size=shape).astype(np.float32)))

    kv = KV_HEADS * (HIDDEN // HEADS)
    add("token_embd.weight", (len(tokens), HIDDEN), 1.0)
    for layer in range(LAYERS):
        p = f"blk.{layer}."
        add(p + "attn_norm.weight", (HIDDEN,), 1.0)
        add(p + "ffn_down.weight", (HIDDEN, FFN), 1.6 / FFN ** 0.5)
        add(p + "ffn_gate.weight", (FFN, HIDDEN), 1.6 / HIDDEN ** 0.5)
        add(p + "ffn_up.weight", (FFN, HIDDEN), 1.6 / HIDDEN ** 0.5)
        add(p + "ffn_norm.weight", (HIDDEN,), 1.0)
        add(p + "attn_k.weight", (kv, HIDDEN), 1.6 / HIDDEN ** 0.5)
        add(p + "attn_output.weight", (HIDDEN, HIDDEN), 1.6 / HIDDEN ** 0.5)
        add(p + "attn_q.weight", (HIDDEN, HIDDEN), 1.6 / HIDDEN ** 0.5)
        add(p + "attn_v.weight", (kv, HIDDEN), 1.6 / HIDDEN ** 0.5)
    add("output_norm.weight", (HIDDEN,), 1.0)
    w.write(str(path))
    return tokens


@pytest.fixture
def tiny(tmp_path, rng):
    path = tmp_path / "tiny.gguf"
    tokens = write_tiny_llama(path, rng)
    return path, tokens


def test_load_and_tokenizer(tiny):
    path, tokens = tiny
    m = wick.Llama.load(str(path), "cpu")
    c = m.config
    assert (c.vocab_size, c.hidden, c.n_layers, c.n_heads, c.n_kv_heads) == (len(tokens), HIDDEN, LAYERS, HEADS, KV_HEADS)
    assert m.device == wick.Device("cpu") and m.max_seq == CONTEXT and m.position == 0
    tok = m.tokenizer
    assert tok.vocab_size == len(tokens) and tok.eos_id == 2 and tok.bos_id == 1
    ids = tok.encode("the cat")
    assert ids[0] == tokens.index("the") and tok.decode(ids) == "the cat"
    assert tok.encode("<|im_end|>", allow_special=True) == [2]
    assert tok.token(ids[0]) == "the" and tok.token_id("th") == tokens.index("th")
    assert m.apply_chat_template([("user", "hi")]) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_generate_greedy_matches_forward_argmax(tiny):
    path, _ = tiny
    m = wick.Llama.load(str(path))
    gen = m.generate("the bat", max_new_tokens=12, stop_tokens=[])
    text = "".join(gen)
    ids = gen.tokens
    assert len(ids) == 12 and text == m.tokenizer.decode(ids, skip_special=True)

    # The same tokens by hand: forward the prompt, then each picked token, argmax of the logits.
    m.reset()
    logits = m.forward(m.tokenizer.encode("the bat"))
    want = []
    for _ in range(12):
        want.append(int(np.argmax(np.asarray(logits))))
        logits = m.forward([want[-1]])
    assert ids == want
    assert m.position == len(m.tokenizer.encode("the bat")) + 12


def test_generate_stops(tiny):
    path, _ = tiny
    m = wick.Llama.load(str(path), max_seq=10)
    gen = m.generate([4, 5, 6], max_new_tokens=100, temperature=1.0, stop_tokens=[])
    pieces = list(gen)
    assert gen.stopped_at_context_end and len(gen.tokens) == 10 - 3 + 1
    assert all(isinstance(p, str) and p for p in pieces)
    # A stop token ends it as soon as it is drawn (and is not part of the text).
    greedy = m.generate([4, 5, 6], max_new_tokens=5, stop_tokens=[])
    list(greedy)
    assert len(greedy.tokens) == 5 and not greedy.stopped_at_eos
    gen = m.generate([4, 5, 6], max_new_tokens=5, stop_tokens=[greedy.tokens[0]])
    assert "".join(gen) == "" and gen.tokens == greedy.tokens[:1] and gen.stopped_at_eos
    assert list(m.generate([4], max_new_tokens=0)) == []
    with pytest.raises(wick.ShapeError, match="no tokens"):
        m.generate("", max_new_tokens=3)


def test_sampling_is_seeded(tiny):
    path, _ = tiny
    m = wick.Llama.load(str(path))
    a = "".join(m.generate("the", max_new_tokens=20, temperature=0.9, seed=7, stop_tokens=[]))
    b = "".join(m.generate("the", max_new_tokens=20, temperature=0.9, seed=7, stop_tokens=[]))
    c = "".join(m.generate("the", max_new_tokens=20, temperature=0.9, seed=8, stop_tokens=[]))
    assert a == b and a != c


def test_generate_matches_cli(tiny):
    cli = pathlib.Path(__file__).resolve().parents[2] / "build" / "release" / "wick"
    if not cli.exists():
        pytest.skip(f"no CLI at {cli}")
    path, _ = tiny
    m = wick.Llama.load(str(path))
    prompt = "the cab"
    text = "".join(m.generate(prompt, max_new_tokens=16, temperature=0.8, top_k=10, seed=42))
    out = subprocess.run([str(cli), "generate", "-m", str(path), "-p", prompt, "-n", "16",
                          "--temp", "0.8", "--top-k", "10", "-s", "42"],
                         capture_output=True, text=True, check=True).stdout
    assert out == prompt + text + "\n"


def test_tokenizer_from_hf_json(tmp_path):
    pre = '"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false}'
    model = '"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}'
    tok = wick.Tokenizer.from_hf_json("{" + pre + "," + model + "}")
    assert tok.encode("ab") == [2] and tok.encode("ba") == [1, 0] and tok.decode([2, 0]) == "aba"
    path = tmp_path / "tokenizer.json"
    path.write_text("{" + pre + "," + model + "}")
    assert wick.Tokenizer.from_hf_json_file(str(path)).vocab_size == 3
    with pytest.raises(wick.UnsupportedError, match="NFC"):
        wick.Tokenizer.from_hf_json('{"normalizer": {"type": "NFC"}, ' + pre + "," + model + "}")
    with pytest.raises(wick.OutOfRangeError):
        tok.decode([7])
