#!/usr/bin/env python3
"""`wick serve` end to end on loopback, against a tiny random-weight model.

usage: test_serve.py path/to/wick [--requests N]

The real `openai` client (PyPI) talks to the server: completions and chat, whole and streamed,
/v1/models; raw HTTP checks the refusals (400 with a message, 413, 404, 503), that 64 clients
connecting at once are all accepted without a SYN retry, and that a client
leaving mid-stream frees its slot. Then a load test: 32 concurrent clients send 200 greedy
requests, and every answer must be complete and equal to the same request run alone.
Exits non-zero on the first failure. scripts/test.sh runs it after the release tests, and with
--requests 40 against the ASan+UBSan build (its load test is ~10x slower there).
"""
import concurrent.futures
import http.client
import json
import os
import random
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time

import openai

WICK = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/release/wick")
REQUESTS = int(sys.argv[sys.argv.index("--requests") + 1]) if "--requests" in sys.argv else 200
CHECKS = 0


def check(cond, what):
    global CHECKS
    CHECKS += 1
    if not cond:
        raise AssertionError(what)


class Server:
    """A `wick serve` process on a free port of 127.0.0.1."""

    def __init__(self, model, *flags):
        self.proc = subprocess.Popen(
            [WICK, "serve", "-m", model, "--port", "0", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if "listening on http://" not in line:
            raise AssertionError(f"wick serve did not start: {line!r} {self.proc.stderr.read()}")
        self.port = int(line.split("http://")[1].split()[0].rsplit(":", 1)[1])
        self.client = openai.OpenAI(base_url=f"http://127.0.0.1:{self.port}/v1", api_key="none",
                                    max_retries=0, timeout=120)

    def request(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        c.request(method, path, body=body, headers=headers or {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def health(self):
        status, data = self.request("GET", "/health")
        check(status == 200, f"/health: {status}")
        return json.loads(data)

    def open_stream(self, body):
        """Sends a streamed request on a raw socket; returns the socket once the first event came."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        data = json.dumps(dict(body, stream=True)).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        got = b""
        while b"data: " not in got:
            chunk = s.recv(4096)
            check(chunk, "the stream ended before its first event")
            got += chunk
        check(got.startswith(b"HTTP/1.1 200"), f"a streamed request got {got[:40]!r}")
        return s

    def wait_idle(self, what, seconds=20):
        deadline = time.time() + seconds
        while time.time() < deadline:
            h = self.health()
            if h["slots_processing"] == 0 and h["queued"] == 0:
                return h
            time.sleep(0.05)
        raise AssertionError(f"{what}: the server is still busy after {seconds} s: {self.health()}")

    def stop(self):
        self.proc.terminate()
        try:
            rc = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("wick serve did not stop on SIGTERM")
        err = self.proc.stderr.read()
        check(rc == 0, f"wick serve exited with {rc}: {err}")


def api_basics(srv):
    c = srv.client
    models = c.models.list()
    check(len(models.data) == 1, f"/v1/models lists {models.data}")
    model = models.data[0].id

    r = c.completions.create(model=model, prompt="The quick brown fox", max_tokens=12,
                             temperature=0)
    text, fin = r.choices[0].text, r.choices[0].finish_reason
    check(fin in ("stop", "length"), f"finish_reason {fin}")
    check(r.usage.prompt_tokens > 0 and 1 <= r.usage.completion_tokens <= 12, f"usage {r.usage}")
    check(fin == "stop" or r.usage.completion_tokens == 12, f"{fin} after {r.usage}")
    check(r.object == "text_completion" and r.model == model, f"answer {r}")

    # Streamed: the same text in pieces, then the finish reason.
    pieces, fins = [], []
    for chunk in c.completions.create(model=model, prompt="The quick brown fox", max_tokens=12,
                                      temperature=0, stream=True):
        pieces.append(chunk.choices[0].text)
        fins.append(chunk.choices[0].finish_reason)
    check("".join(pieces) == text, f"streamed {''.join(pieces)!r} != whole {text!r}")
    check(fins[-1] == fin and all(f is None for f in fins[:-1]), f"stream finish reasons {fins}")

    # A stop string taken from the answer ends it there.
    if len(text) > 4:
        stop = text[2:4]
        r2 = c.completions.create(model=model, prompt="The quick brown fox", max_tokens=12,
                                  temperature=0, stop=[stop])
        check(r2.choices[0].text == text[:text.find(stop)] and r2.choices[0].finish_reason == "stop",
              f"stop {stop!r}: {r2.choices[0].text!r} of {text!r}")

    msgs = [{"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Say something."}]
    r = c.chat.completions.create(model=model, messages=msgs, max_tokens=10, temperature=0)
    answer = r.choices[0].message.content
    check(r.choices[0].message.role == "assistant", f"role {r.choices[0].message.role}")
    check(r.object == "chat.completion", f"object {r.object}")
    deltas, roles = [], []
    usage = None
    for chunk in c.chat.completions.create(model=model, messages=msgs, max_tokens=10,
                                           temperature=0, stream=True,
                                           stream_options={"include_usage": True}):
        if chunk.usage:
            usage = chunk.usage
        for ch in chunk.choices:
            roles.append(ch.delta.role)
            deltas.append(ch.delta.content or "")
    check("".join(deltas) == answer, f"streamed chat {''.join(deltas)!r} != {answer!r}")
    check(roles[0] == "assistant", f"first delta's role {roles[0]}")
    check(usage is not None and usage.completion_tokens == r.usage.completion_tokens,
          f"stream usage {usage} vs {r.usage}")

    # Log-probabilities (greedy: each token is its own first alternative), streamed as whole.
    r = c.chat.completions.create(model=model, messages=msgs, max_tokens=10, temperature=0,
                                  logprobs=True, top_logprobs=3)
    lps = r.choices[0].logprobs.content
    check(r.choices[0].message.content == answer, "logprobs changed the greedy answer")
    check(b"".join(bytes(t.bytes) for t in lps).decode("utf-8", "replace") == answer,
          f"logprob tokens {[t.token for t in lps]} do not spell {answer!r}")
    for t in lps:
        top = t.top_logprobs
        check(len(top) == 3 and top[0].token == t.token and top[0].logprob == t.logprob,
              f"greedy token {t.token!r} {t.logprob} is not its first alternative {top}")
        check(all(a.logprob >= b.logprob for a, b in zip(top, top[1:])) and t.logprob <= 0,
              f"alternatives out of order or a positive logprob: {top}")
        check(sum(2.718281828459045 ** a.logprob for a in top) <= 1 + 1e-9, f"probabilities {top}")
    streamed = []
    for chunk in c.chat.completions.create(model=model, messages=msgs, max_tokens=10,
                                           temperature=0, logprobs=True, top_logprobs=3,
                                           stream=True):
        for ch in chunk.choices:
            if ch.logprobs and ch.logprobs.content:
                streamed += ch.logprobs.content
    check([(t.token, t.logprob) for t in streamed] == [(t.token, t.logprob) for t in lps],
          "streamed logprobs differ from the whole answer's")
    r = c.completions.create(model=model, prompt="The quick brown fox", max_tokens=12,
                             temperature=0, logprobs=2)
    lp = r.choices[0].logprobs
    check(r.choices[0].text == text and len(lp.tokens) == len(lp.token_logprobs) ==
          len(lp.top_logprobs) == len(lp.text_offset) == r.usage.completion_tokens -
          (r.choices[0].finish_reason == "stop"), f"completion logprobs {lp}")
    check(lp.text_offset == [sum(len(t.encode()) for t in lp.tokens[:i])
                             for i in range(len(lp.tokens))], f"text_offset {lp.text_offset}")
    check(all(max(tp.values()) == v and len(tp) <= 2 for tp, v in
              zip(lp.top_logprobs, lp.token_logprobs)), f"top_logprobs {lp.top_logprobs}")
    # logit_bias: +100 makes a token certain (ids 300 and 301: merges of the byte-level vocab of
    # `bench gen --save-model`), -100 takes it out; the penalties are taken.
    def first(bias):
        f = c.completions.create(model=model, prompt="The quick brown fox", max_tokens=1,
                                 temperature=0, logprobs=1, logit_bias=bias)
        return f.choices[0].logprobs.tokens[0], f.choices[0].logprobs.token_logprobs[0]
    t300, l300 = first({"300": 100})
    t301, l301 = first({"301": 100})
    check(t300 != t301 and l300 > -1e-3 and l301 > -1e-3, f"forced {t300!r} {l300}, {t301!r} {l301}")
    check(first({"300": -100, "301": 100})[0] == t301 and first({"300": -100})[0] != t300,
          "logit_bias -100 did not take the token out")
    # echo: the prompt's tokens scored (lm-eval-harness's loglikelihood requests: token ids,
    # max_tokens 0, logprobs 1), then the same prompt continued greedily: the continuation's
    # log-probabilities are those of scoring the prompt with it appended.
    gen = c.completions.create(model=model, prompt="The quick brown fox", max_tokens=4,
                               temperature=0, logprobs=1)
    glp = gen.choices[0].logprobs
    whole = c.completions.create(model=model, prompt="The quick brown fox" + gen.choices[0].text,
                                 max_tokens=0, echo=True, logprobs=1)
    w = whole.choices[0].logprobs
    check(whole.choices[0].text == "The quick brown fox" + gen.choices[0].text and
          whole.usage.completion_tokens == 0 and whole.choices[0].finish_reason == "length",
          f"echo with max_tokens 0: {whole}")
    check(w.token_logprobs[0] is None and w.top_logprobs[0] is None and
          all(v <= 0 for v in w.token_logprobs[1:]), f"echo logprobs {w.token_logprobs}")
    for tok, v, top in zip(w.tokens[1:], w.token_logprobs[1:], w.top_logprobs[1:]):
        best = max(top.values())
        check(v <= best + 1e-9 and (tok not in top or abs(top[tok] - v) < 1e-9),
              f"echo {tok!r}: {v} against its alternatives {top}")
    n = len(glp.tokens)
    if w.tokens[-n:] == glp.tokens:  # the text retokenized as generated
        for a, b in zip(w.token_logprobs[-n:], glp.token_logprobs):
            check(abs(a - b) < 1e-3 * (1 + abs(b)), f"scored {w.token_logprobs[-n:]} against "
                  f"generated {glp.token_logprobs}")
    ids = [1, 300, 301, 302, 303]
    echo_ids = c.completions.create(model=model, prompt=ids, max_tokens=2, echo=True, logprobs=0,
                                    temperature=0)
    e = echo_ids.choices[0].logprobs
    check(len(e.tokens) == len(ids) + 2 and e.token_logprobs[0] is None and
          echo_ids.choices[0].text.endswith(
              "".join(t for t in e.tokens[len(ids):])), f"echo of token ids: {echo_ids}")
    streamed_text, streamed_lp = "", []
    for chunk in c.completions.create(model=model, prompt=ids, max_tokens=2, echo=True,
                                      logprobs=0, temperature=0, stream=True):
        streamed_text += chunk.choices[0].text
        if chunk.choices[0].logprobs:
            streamed_lp += chunk.choices[0].logprobs.token_logprobs
    check(streamed_text == echo_ids.choices[0].text and streamed_lp == e.token_logprobs,
          f"streamed echo {streamed_text!r} {streamed_lp} != {echo_ids.choices[0].text!r} "
          f"{e.token_logprobs}")

    pen = c.completions.create(model=model, prompt="The quick brown fox", max_tokens=12,
                               temperature=0, frequency_penalty=1.5, presence_penalty=0.5)
    check(pen.choices[0].finish_reason in ("stop", "length"), f"penalties: {pen}")

    # n choices: choice i is the request alone with seed + i; greedy choices are one answer; a
    # stream interleaves the choices by index.
    many = c.completions.create(model=model, prompt="x", max_tokens=8, temperature=0.9, seed=7, n=3)
    alone_r = [c.completions.create(model=model, prompt="x", max_tokens=8, temperature=0.9,
                                    seed=7 + i) for i in range(3)]
    alone = [a.choices[0].text for a in alone_r]
    check([ch.index for ch in many.choices] == [0, 1, 2] and
          [ch.text for ch in many.choices] == alone, f"n=3: {many.choices} against {alone}")
    check(many.usage.completion_tokens == sum(a.usage.completion_tokens for a in alone_r) and
          many.usage.prompt_tokens == alone_r[0].usage.prompt_tokens, f"n=3 usage {many.usage}")
    one = c.chat.completions.create(model=model, messages=msgs, max_tokens=10, temperature=0)
    greedy = c.chat.completions.create(model=model, messages=msgs, max_tokens=10, temperature=0,
                                       n=2)
    check([ch.message.content for ch in greedy.choices] == [answer, answer] and
          greedy.usage.completion_tokens == 2 * one.usage.completion_tokens,
          f"greedy n=2: {greedy.choices}, usage {greedy.usage}")
    parts, fins = {}, {}
    for chunk in c.completions.create(model=model, prompt="x", max_tokens=8, temperature=0.9,
                                      seed=7, n=3, stream=True):
        for ch in chunk.choices:
            parts[ch.index] = parts.get(ch.index, "") + ch.text
            if ch.finish_reason:
                fins[ch.index] = ch.finish_reason
    check([parts.get(i) for i in range(3)] == alone and sorted(fins) == [0, 1, 2],
          f"streamed n=3: {parts} {fins} against {alone}")

    # Tools go to the template (the tiny model's ChatML writes none, and calls none); a history
    # with a call and its result is taken; a call cannot be forced.
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    t = c.chat.completions.create(model=model, messages=msgs, max_tokens=10, temperature=0,
                                  tools=tools)
    check(t.choices[0].finish_reason in ("stop", "length") and not t.choices[0].message.tool_calls,
          f"tools: {t.choices[0]}")
    history = msgs + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "abc123XYZ", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "abc123XYZ", "content": "sunny"}]
    h = c.chat.completions.create(model=model, messages=history, max_tokens=4, temperature=0,
                                  tools=tools, stream=False)
    check(h.choices[0].finish_reason in ("stop", "length"), f"tool history: {h.choices[0]}")
    try:
        c.chat.completions.create(model=model, messages=msgs, max_tokens=4, tools=tools,
                                  tool_choice="required")
        check(False, "tool_choice required accepted")
    except openai.BadRequestError as e:
        check("tool_choice" in str(e), f"tool_choice required: {e}")

    # Sampling with a seed is repeatable.
    a = c.completions.create(model=model, prompt="x", max_tokens=8, temperature=0.9, seed=7)
    b = c.completions.create(model=model, prompt="x", max_tokens=8, temperature=0.9, seed=7)
    check(a.choices[0].text == b.choices[0].text, "seeded sampling differs between runs")

    # The client raises for a refused request, with the server's message.
    try:
        c.completions.create(model=model, prompt="x", max_tokens=0)
        check(False, "max_tokens 0 accepted")
    except openai.BadRequestError as e:
        check("max_tokens" in str(e), f"max_tokens 0: {e}")
    return model


def refusals(srv, max_body):
    def expect(status, body, want_status, *needles, path="/v1/completions"):
        got, data = srv.request("POST", path, body)
        check(got == want_status, f"{body!r:.80}: status {got}, want {want_status}: {data[:200]!r}")
        msg = json.loads(data)["error"]["message"]
        for n in needles:
            check(n in msg, f"{body!r:.80}: {msg!r} does not name {n!r}")

    expect(400, "{not json", 400, "not JSON")
    expect(400, "[1, 2]", 400, "JSON object")
    expect(400, {"model": "m"}, 400, "prompt", "required")
    expect(400, {"prompt": "x", "max_tokens": "ten"}, 400, "max_tokens", "integer")
    expect(400, {"prompt": "x", "max_tokens": -1}, 400, "max_tokens")
    expect(400, {"prompt": "x", "temperature": 9}, 400, "temperature")
    expect(400, {"prompt": "x", "top_p": 0}, 400, "top_p")
    expect(400, {"prompt": "x", "n": 17}, 400, "'n'")
    expect(400, {"prompt": "x", "n": 0}, 400, "'n'")
    expect(400, {"prompt": "x", "logprobs": 6}, 400, "logprobs")
    expect(400, {"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2}, 400,
           "top_logprobs", "logprobs", path="/v1/chat/completions")
    expect(400, {"prompt": "x", "logit_bias": {"x1": 5}}, 400, "logit_bias", "token ids")
    expect(400, {"prompt": "x", "logit_bias": {"1": 500}}, 400, "logit_bias", "[-100, 100]")
    expect(400, {"prompt": "x", "frequency_penalty": 3}, 400, "frequency_penalty")
    expect(400, {"prompt": "x", "max_tokens": 0}, 400, "max_tokens")
    expect(400, {"messages": [{"role": "user", "content": "x"}], "echo": True}, 400, "echo",
           path="/v1/chat/completions")
    expect(400, {"prompt": "x", "stop": [1]}, 400, "stop")
    # Deep nesting is refused before a recursive dump in an error message meets it (it crashed).
    deep = 30000  # under the test server's 64 KiB --max-body
    expect(400, '{"prompt": "x", "stop": ' + "[" * deep + "]" * deep + "}", 400,
           f"nests arrays and objects {deep + 1} deep")
    expect(400, {"prompt": "x", "stream": "yes"}, 400, "stream")
    # A refused value is shown short: a long string by its start and size, a container by its size.
    for body, needle in (({"prompt": "x", "max_tokens": "é" * 5000}, "a string of 10000 bytes"),
                         ({"prompt": "x", "seed": list(range(5000))}, "an array of 5000 elements")):
        got, data = srv.request("POST", "/v1/completions", body)
        msg = json.loads(data)["error"]["message"]
        check(got == 400 and needle in msg and len(msg) < 300, f"long value: {got} {msg[:400]!r}")
    expect(400, {"prompt": [10 ** 9]}, 400, "prompt", "token")
    expect(400, {"prompt": "x" * 5000}, 400, "prompt", "context")
    expect(400, {"messages": []}, 400, "messages", path="/v1/chat/completions")
    expect(400, {"messages": [{"content": "hi"}]}, 400, "role", path="/v1/chat/completions")
    expect(400, {"messages": [{"role": "user", "content": [{"type": "image"}]}]}, 400, "content",
           path="/v1/chat/completions")
    expect(413, {"prompt": "x" * (max_body + 10)}, 413, "--max-body")
    got, data = srv.request("GET", "/v1/nothing")
    check(got == 404 and "no route" in json.loads(data)["error"]["message"], f"404: {got} {data!r}")
    check(srv.health()["status"] == "ok", "not healthy after the refusals")


def connect_burst(srv, n=64):
    """n clients connecting at the same moment are all accepted by the kernel at once (a listen
    backlog of 5, cpp-httplib's own, dropped the SYNs past it: their clients' kernels sent them
    again after 1 s), then each gets its /health answer."""
    socks = []
    t0 = time.perf_counter()
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", srv.port))
        socks.append(s)
    pending = list(socks)
    while pending and time.perf_counter() - t0 < 5:
        _, writable, _ = select.select([], pending, [], 0.05)
        pending = [s for s in pending if s not in writable]
    elapsed = time.perf_counter() - t0
    check(not pending, f"{len(pending)} of {n} connections were not accepted within 5 s")
    check(elapsed < 0.9, f"{n} simultaneous connections took {elapsed:.2f} s to be accepted "
                         "(SYNs dropped and resent: a listen backlog too short)")
    for s in socks:
        check(s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0, "a connection failed")
        s.setblocking(True)
        s.settimeout(60)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    for s in socks:
        got = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        s.close()
        check(got.startswith(b"HTTP/1.1 200") and b'"status":"ok"' in got.replace(b" ", b""),
              f"/health over a burst connection: {got[:80]!r}")


def busy_and_disconnects(model):
    """One slot and a queue of one: a third request gets 503; clients that leave free both."""
    srv = Server(model, "-np", "1", "--max-queue", "1", "-c", "4096", "-t", "2")
    try:
        long = {"prompt": "a long answer", "max_tokens": 4000, "temperature": 0}
        a = srv.open_stream(long)  # in the slot
        b = socket.create_connection(("127.0.0.1", srv.port), timeout=60)  # in the queue
        data = json.dumps(dict(long, stream=True)).encode()
        b.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
                  + str(len(data)).encode() + b"\r\n\r\n" + data)
        deadline = time.time() + 10
        while srv.health()["queued"] != 1:
            check(time.time() < deadline, f"the second request never queued: {srv.health()}")
            time.sleep(0.02)
        got, body = srv.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
        check(got == 503 and "busy" in json.loads(body)["error"]["message"],
              f"a full server answered {got} {body!r}")
        a.close()
        b.close()
        h = srv.wait_idle("after two clients left")
        check(h["cancelled"] == 2 and h["completed"] == 0, f"clients that left: {h}")
        # The slot serves again.
        r = srv.client.completions.create(model="m", prompt="again", max_tokens=3, temperature=0)
        check(r.choices[0].finish_reason in ("stop", "length"), f"after the cancels: {r}")
    finally:
        srv.stop()


def load_test(srv, model, clients=32, requests=200):
    rng = random.Random(1234)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    jobs = []
    for i in range(requests):
        prompt = f"{i}: " + " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))
        jobs.append({"chat": i % 3 == 0, "stream": i % 2 == 0, "prompt": prompt,
                     "max_tokens": rng.randint(4, 40)})

    def run(job):
        c = srv.client
        kw = dict(model=model, max_tokens=job["max_tokens"], temperature=0)
        if job["chat"]:
            msgs = [{"role": "user", "content": job["prompt"]}]
            if not job["stream"]:
                r = c.chat.completions.create(messages=msgs, **kw)
                return r.choices[0].message.content, r.choices[0].finish_reason
            text, fin = "", None
            for ch in c.chat.completions.create(messages=msgs, stream=True, **kw):
                for choice in ch.choices:
                    text += choice.delta.content or ""
                    fin = choice.finish_reason or fin
            return text, fin
        if not job["stream"]:
            r = c.completions.create(prompt=job["prompt"], **kw)
            return r.choices[0].text, r.choices[0].finish_reason
        text, fin = "", None
        for ch in c.completions.create(prompt=job["prompt"], stream=True, **kw):
            text += ch.choices[0].text
            fin = ch.choices[0].finish_reason or fin
        return text, fin

    t0 = time.time()
    alone = [run(j) for j in jobs]
    t_alone = time.time() - t0
    before = srv.health()
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        together = list(pool.map(run, jobs))
    t_together = time.time() - t0
    after = srv.health()
    for i, (a, t) in enumerate(zip(alone, together)):
        check(a[1] in ("stop", "length"), f"request {i} alone did not finish: {a}")
        check(t == a, f"request {i} {jobs[i]}: under load {t!r}, alone {a!r}")
    steps = after["decode_steps"] - before["decode_steps"]
    rows = after["decoded_rows"] - before["decoded_rows"]
    check(steps > 0 and rows / steps > 2, f"the load was not batched: {rows} rows in {steps} steps")
    print(f"load test: {requests} requests from {clients} clients in {t_together:.2f} s "
          f"(alone, one at a time: {t_alone:.2f} s), {rows / steps:.1f} rows per decode step")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "tiny.gguf")
        subprocess.run([WICK, "bench", "gen", "--quick", "--save-model", model], check=True,
                       stdout=subprocess.DEVNULL)
        max_body = 65536
        srv = Server(model, "-np", "8", "-c", "256", "--max-body", str(max_body), "-t", "2")
        try:
            t0 = time.time()
            name = api_basics(srv)
            refusals(srv, max_body)
            connect_burst(srv)
            print(f"api: ok ({time.time() - t0:.1f} s)")
            t0 = time.time()
            load_test(srv, name, requests=REQUESTS)
            print(f"load: ok ({time.time() - t0:.1f} s)")
        finally:
            srv.stop()
        t0 = time.time()
        busy_and_disconnects(model)
        print(f"busy and disconnects: ok ({time.time() - t0:.1f} s)")
    print(f"test_serve: {CHECKS} checks passed")


if __name__ == "__main__":
    main()
