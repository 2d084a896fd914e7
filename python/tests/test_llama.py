"""wick.Llama and wick.Tokenizer on a tiny random llama written with wick.GgufWriter."""
import pathlib
import struct
import subprocess

import numpy as np
import pytest

import wick

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHARS = ["\u0120"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]  # "Ġ" is the byte-level space
MERGES = ["t h", "th e", "\u0120 a"]
HIDDEN, LAYERS, HEADS, KV_HEADS, FFN, CONTEXT = 32, 2, 4, 2, 48, 64


def write_tiny_llama(path, rng, qtype=None):
    """qtype: the GGML type of the matrices whose rows are whole blocks of 32 (the embedding, which
    the lm_head shares, among them)."""
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
        t = wick.from_numpy(rng.uniform(-scale, scale, size=shape).astype(np.float32))
        w.add_tensor(name, t, qtype if qtype and len(shape) == 2 and shape[1] % 32 == 0 else None)

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


def test_forward_all_is_forward_at_every_position(tiny):
    path, _ = tiny
    m = wick.Llama.load(str(path))
    ids = m.tokenizer.encode("the bat sat")
    rows = np.asarray(m.forward_all(ids))
    assert rows.shape == (len(ids), m.config.vocab_size) and m.position == len(ids)
    for i in range(len(ids)):
        m.reset()
        want = np.asarray(m.forward(ids[: i + 1]))
        np.testing.assert_allclose(rows[i], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    with pytest.raises(wick.ShapeError):
        m.forward_all([])


def test_generate_penalties_and_logit_bias(tiny):
    # Each pick is the argmax of the step's logits after the bias and OpenAI's penalties over
    # the last repeat_last_n tokens (prompt included), computed here in float64.
    path, tokens = tiny
    m = wick.Llama.load(str(path))
    prompt = m.tokenizer.encode("the bat")
    bias = {5: 3.0, 7: -float("inf"), 11: -1.5}
    freq, presence, last_n = 0.7, -0.3, 6
    gen = m.generate(prompt, max_new_tokens=10, stop_tokens=[], frequency_penalty=freq,
                     presence_penalty=presence, repeat_last_n=last_n, logit_bias=bias)
    "".join(gen)
    ids = gen.tokens
    m.reset()
    logits = m.forward(prompt)
    history, want = list(prompt), []
    for _ in range(10):
        l = np.asarray(logits, dtype=np.float64).copy()
        for t, b in bias.items():
            l[t] += b
        window = history[-last_n:]
        for t in set(window):
            l[t] -= window.count(t) * freq + presence
        want.append(int(np.argmax(l)))
        history.append(want[-1])
        logits = m.forward([want[-1]])
    assert ids == want and 7 not in ids
    with pytest.raises(wick.OutOfRangeError, match="logit_bias"):
        list(m.generate(prompt, max_new_tokens=2, logit_bias={len(tokens) + 3: 1.0}))
    with pytest.raises(wick.OutOfRangeError, match="frequency_penalty"):
        m.generate(prompt, frequency_penalty=float("nan"))


GPUS = [d for d in wick.available_devices() if not d.is_cpu]


@pytest.mark.parametrize("device", ["cpu"] + GPUS, ids=str)
def test_greedy_generation_in_chunks_is_token_by_token(tmp_path, rng, device):
    # A q8_0 model: on a GPU that replays, greedy picks come from decode_greedy's chunks of 8
    # (one wait a chunk); tokens, text and the cache's position must be token-by-token's,
    # wherever generation stops inside a chunk, and an iterator left mid-chunk must not leave the
    # chunk's extra positions in the cache.
    path = tmp_path / "tiny_q8.gguf"
    write_tiny_llama(path, rng, "q8_0")
    m = wick.Llama.load(str(path), device)
    prompt = m.tokenizer.encode("the bat")
    m.reset()
    logits = m.forward(prompt)
    want = []
    for _ in range(20):
        want.append(int(np.argmax(np.asarray(logits))))
        logits = m.forward([want[-1]])
    for n in (1, 5, 8, 9, 20):
        gen = m.generate(prompt, max_new_tokens=n, stop_tokens=[])
        text = "".join(gen)
        assert gen.tokens == want[:n] and text == m.tokenizer.decode(want[:n], skip_special=True)
        assert m.position == len(prompt) + n - 1
    # A stop token inside a chunk: the picks before it, the cache where token by token stops.
    stop = want[10]
    first = want.index(stop)
    gen = m.generate(prompt, max_new_tokens=20, stop_tokens=[stop])
    "".join(gen)
    assert gen.tokens == want[:first + 1] and gen.stopped_at_eos
    assert m.position == len(prompt) + first
    # Continuing from the cache gives what one run gives.
    rest = m.generate([want[first]], max_new_tokens=4, stop_tokens=[], reset=False)
    "".join(rest)
    assert rest.tokens == want[first + 1:first + 5]
    # The position read between picks is token by token's, and reading it changes nothing.
    gen = m.generate(prompt, max_new_tokens=20, stop_tokens=[])
    for _ in gen:
        assert m.position == len(prompt) + len(gen.tokens) - 1
    assert gen.tokens == want[:20]
    # An iterator left after 3 picks: the cache is at its third pick, as token by token.
    gen = m.generate(prompt, max_new_tokens=20, stop_tokens=[])
    while len(gen.tokens) < 3:
        next(gen)
    assert m.position == len(prompt) + len(gen.tokens) - 1
    logits = m.forward([gen.tokens[-1]])
    assert int(np.argmax(np.asarray(logits))) == want[len(gen.tokens)]


def read_gguf_tensors(path):
    """{name: (ggml type id, dims, bytes)} of a GGUF v3 file without metadata, alignment 32."""
    data = pathlib.Path(path).read_bytes()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF" and version == 3 and n_kv == 0
    at, infos = 24, []
    for _ in range(n_tensors):
        (n,) = struct.unpack_from("<Q", data, at)
        name = data[at + 8:at + 8 + n].decode()
        at += 8 + n
        (rank,) = struct.unpack_from("<I", data, at)
        dims = struct.unpack_from(f"<{rank}Q", data, at + 4)
        ggml_type, offset = struct.unpack_from("<IQ", data, at + 4 + 8 * rank)
        at += 4 + 8 * rank + 12
        infos.append((name, ggml_type, dims, offset))
    base = (at + 31) // 32 * 32
    ends = [o for _, _, _, o in infos[1:]] + [len(data) - base]
    return {name: (t, dims, data[base + o:base + e]) for (name, t, dims, o), e in zip(infos, ends)}


def test_gguf_writer_quantizes(tmp_path, rng):
    x = rng.uniform(-1, 1, size=(4, 64)).astype(np.float32)
    w = wick.GgufWriter()
    w.add_tensor("a", wick.from_numpy(x), "q8_0")
    w.add_tensor("b", wick.from_numpy(x), "f16")
    w.add_tensor("c", wick.from_numpy(x))
    with pytest.raises(wick.DTypeError, match="q9_9"):
        w.add_tensor("d", wick.from_numpy(x), "q9_9")
    with pytest.raises(wick.ShapeError):
        w.add_tensor("e", wick.from_numpy(x[:, :48]), "q8_0")
    w.write(str(tmp_path / "t.gguf"))
    t = read_gguf_tensors(tmp_path / "t.gguf")
    assert [(k, v[0], v[1]) for k, v in t.items()] == [("a", 8, (64, 4)), ("b", 1, (64, 4)),
                                                        ("c", 0, (64, 4))]
    # q8_0: blocks of an f16 scale d and 32 int8 codes q, x ~ d q (ggml: d = amax / 127).
    blocks = np.frombuffer(t["a"][2][:8 * 34], dtype=np.uint8).reshape(8, 34)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float64)
    q = blocks[:, 2:].copy().view(np.int8).astype(np.float64)
    xb = x.reshape(8, 32).astype(np.float64)
    np.testing.assert_allclose(d[:, 0], np.abs(xb).max(1) / 127, rtol=1e-3)
    assert np.all(np.abs(d * q - xb) <= d * 0.5 + 1e-3 * np.abs(xb))
    np.testing.assert_array_equal(np.frombuffer(t["b"][2], dtype=np.float16).reshape(4, 64),
                                  x.astype(np.float16))
    np.testing.assert_array_equal(np.frombuffer(t["c"][2], dtype=np.float32).reshape(4, 64), x)


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
