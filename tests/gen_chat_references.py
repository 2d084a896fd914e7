#!/usr/bin/env python3
"""Writes tests/data/chat_templates/expected.json: every template there rendered by Python's jinja2
as Hugging Face's transformers renders chat templates (an ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks and loopcontrols; raise_exception, strftime_now and transformers' tojson),
for a few conversations. tests/test_chat_template.cpp renders the same with wick and compares byte
for byte. `--check` compares instead of writing (a ctest runs it: the committed references must be
what jinja2 renders). Needs jinja2 (Debian: python3-jinja2, installed by scripts/install-deps.sh).
"""
import json
import os
import sys
from datetime import datetime

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "chat_templates")

# template file -> (bos_token, eos_token) of its model ("" where the model has none).
TEMPLATES = {
    "smollm2.jinja": ("<|im_start|>", "<|im_end|>"),
    "qwen2.5.jinja": ("", "<|im_end|>"),
    "qwen3.jinja": ("", "<|im_end|>"),
    "smollm3.jinja": ("", "<|im_end|>"),
    "llama3.1.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "phi3.5.jinja": ("<s>", "<|endoftext|>"),
    "gemma2.jinja": ("<bos>", "<eos>"),
    "mistral-nemo.jinja": ("<s>", "</s>"),
}

CONVERSATIONS = [
    ([("user", "Hello!")], True),
    ([("system", "You are a terse assistant."), ("user", "What is 2+2?")], True),
    ([("user", "Hi"), ("assistant", "Hello! How can I help?"),
      ("user", "Tell me a joke about cats.")], True),
    ([("system", "Be kind."), ("user", "H\u00e9llo \u2014 na\u00efve caf\u00e9 \U0001f642"),
      ("assistant", "  Bonjour ! {{ not jinja }} <b>bold</b> 'quotes' \"too\"  "),
      ("user", "Line one\nLine two\n")], False),
    ([("user", "A"), ("assistant", "B")], False),
    ([("user", "first"), ("user", "second")], True),
    ([("assistant", "I speak first.")], True),
]


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


def render_all():
    env = environment()
    cases = []
    for name, (bos, eos) in TEMPLATES.items():
        with open(os.path.join(DIR, name), encoding="utf-8") as f:
            template = env.from_string(f.read())
        for turns, add_generation_prompt in CONVERSATIONS:
            messages = [{"role": r, "content": c} for r, c in turns]
            case = {"template": name, "bos_token": bos, "eos_token": eos, "messages": messages,
                    "add_generation_prompt": add_generation_prompt}
            try:
                case["text"] = template.render(messages=messages, bos_token=bos, eos_token=eos,
                                               add_generation_prompt=add_generation_prompt)
            except jinja2.exceptions.TemplateError as e:
                case["error"] = str(e)
            cases.append(case)
    return {"jinja2_version": jinja2.__version__, "cases": cases}


def main():
    out = os.path.join(DIR, "expected.json")
    got = render_all()
    if "--check" in sys.argv[1:]:
        with open(out, encoding="utf-8") as f:
            want = json.load(f)
        if want["cases"] != got["cases"]:
            sys.exit(f"{out} differs from what jinja2 {jinja2.__version__} renders: "
                     "run tests/gen_chat_references.py")
        print(f"{len(got['cases'])} renderings match jinja2 {jinja2.__version__}")
        return
    with open(out, "w", encoding="utf-8") as f:
        json.dump(got, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(got['cases'])} renderings to {out}")


if __name__ == "__main__":
    main()
