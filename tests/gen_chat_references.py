#!/usr/bin/env python3
"""Writes the chat templates' references, rendered by Python's jinja2 as Hugging Face's transformers
renders chat templates (an ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks,
loopcontrols and its `generation` block; raise_exception, strftime_now and transformers' tojson),
for a few conversations:
- tests/data/chat_templates/expected.json: the models' templates in that folder, with their
  tokens (also with `tools` and a tool call and result);
- tests/data/chat_templates/llama_cpp_expected.json: every template of llama.cpp's
  models/templates/ (70 models' templates, as scripts/install-deps.sh extracts them into
  .cache/llama-vocab/templates/; WICK_LLAMA_VOCAB_DIR overrides the folder), with <s> and </s>.
strftime_now answers a fixed time (FIXED_NOW), which the files record; the C++ test puts that
date where wick wrote today's.
tests/test_chat_template.cpp renders the same with wick and compares byte for byte. `--check`
compares instead of writing (a ctest runs it: the committed references must be what jinja2
renders). Needs jinja2 (Debian: python3-jinja2, installed by scripts/install-deps.sh).
"""
import json
import os
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "data", "chat_templates")
LLAMA_CPP_DIR = os.path.join(os.environ.get("WICK_LLAMA_VOCAB_DIR") or
                             os.path.join(HERE, "..", ".cache", "llama-vocab"), "templates")
# What strftime_now answers (the C++ test's `fixed_now`).
FIXED_NOW = datetime(2024, 7, 26, 9, 30, 0)

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

# Tool use in OpenAI's (and transformers') shapes: a tool's definition, an assistant turn that
# calls it (arguments as an object, as transformers passes them), the tool's result. Rendered with
# the model templates only, with `tools`.
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city's name."},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}]
CALL = {"role": "assistant", "content": "", "tool_calls": [{
    "id": "abc123XYZ", "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]}
RESULT = {"role": "tool", "tool_call_id": "abc123XYZ", "name": "get_weather",
          "content": "{\"temperature\": 21, \"sky\": \"clear\"}"}
TOOL_CONVERSATIONS = [
    ([{"role": "user", "content": "What is the weather in Paris?"}], True),
    ([{"role": "system", "content": "You help with the weather."},
      {"role": "user", "content": "Weather in Paris?"}, CALL, RESULT], True),
]


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


class GenerationBlock(Extension):
    """transformers' `{% generation %}...{% endgeneration %}` (its AssistantTracker marks where the
    assistant's text is): the body renders as it is."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols", GenerationBlock])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)
    return env


def render(env, path, name, bos, eos):
    with open(path, encoding="utf-8") as f:
        template = env.from_string(f.read())
    cases = []
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
    return cases


def render_tools(env, path, name, bos, eos):
    with open(path, encoding="utf-8") as f:
        template = env.from_string(f.read())
    cases = []
    for messages, add_generation_prompt in TOOL_CONVERSATIONS:
        case = {"template": name, "bos_token": bos, "eos_token": eos, "messages": messages,
                "tools": TOOLS, "add_generation_prompt": add_generation_prompt}
        try:
            case["text"] = template.render(messages=messages, tools=TOOLS, bos_token=bos,
                                           eos_token=eos,
                                           add_generation_prompt=add_generation_prompt)
        except jinja2.exceptions.TemplateError as e:
            case["error"] = str(e)
        cases.append(case)
    return cases


def references():
    """(file, its content) for each reference file."""
    env = environment()
    meta = {"jinja2_version": jinja2.__version__, "strftime_now": FIXED_NOW.isoformat()}
    models = []
    for name, (bos, eos) in TEMPLATES.items():
        models += render(env, os.path.join(DIR, name), name, bos, eos)
        models += render_tools(env, os.path.join(DIR, name), name, bos, eos)
    if not os.path.isdir(LLAMA_CPP_DIR):
        sys.exit(f"{LLAMA_CPP_DIR}: no llama.cpp templates (run scripts/install-deps.sh)")
    llama_cpp = []
    for name in sorted(os.listdir(LLAMA_CPP_DIR)):
        if name.endswith(".jinja"):
            llama_cpp += render(env, os.path.join(LLAMA_CPP_DIR, name), name, "<s>", "</s>")
    return [("expected.json", {**meta, "cases": models}),
            ("llama_cpp_expected.json", {**meta, "cases": llama_cpp})]


def main():
    for file, got in references():
        out = os.path.join(DIR, file)
        if "--check" in sys.argv[1:]:
            with open(out, encoding="utf-8") as f:
                want = json.load(f)
            if (want["cases"], want["strftime_now"]) != (got["cases"], got["strftime_now"]):
                sys.exit(f"{out} differs from what jinja2 {jinja2.__version__} renders: "
                         "run tests/gen_chat_references.py")
            print(f"{out}: {len(got['cases'])} renderings match jinja2 {jinja2.__version__}")
            continue
        with open(out, "w", encoding="utf-8") as f:
            json.dump(got, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(f"wrote {len(got['cases'])} renderings to {out}")


if __name__ == "__main__":
    main()
