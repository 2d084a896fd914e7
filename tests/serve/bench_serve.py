#!/usr/bin/env python3
"""Aggregate decode throughput of `wick serve` with 1 and with N concurrent greedy clients.

usage: bench_serve.py WICK MODEL [--clients 8] [--tokens 128] [--ctx 512] [-t THREADS]
                      [--device D] [--log-passes] [--client openai|raw] [--rounds R]

Starts `wick serve -np N`, then streams greedy completions of --tokens tokens each (ignore_eos,
so every answer has that length): first one client alone, then N at once with different prompts
(each client process waits for a common start time, then sends).
Prints per run: aggregate decode tokens/s (tokens after each client's first, summed, over the
time from the first client's first token to the last client's last), total tokens/s over the
whole wall time, time to first token (median and worst) and the spread of the requests' sending
times; then the ratio N clients / 1. --rounds R runs the pair (1 client, then N) R times on the
same server and prints every round's ratio and their median: on a machine whose speed drifts
(a shared host), each ratio then compares runs a few seconds apart.
Each client runs in a process of its own: in threads of one process the openai client's parsing of
the streamed chunks, serialized by the GIL, capped the rate the server was measured at.
--client raw streams the same requests through http.client and reads each server-sent event
with json.loads instead of the openai client: on a machine of few cores the clients share the
server's CPUs, and the openai client's parsing of every chunk took ~11% of a 2-vCPU machine's
time at 8 clients (perf, 2026-12-05), which the server's passes then lacked.
Then, per run, where the server's scheduler spent that time (its /health counters): passes of
answer tokens only (count, mean batch, mean ms), passes with prompts, the longest pass, and the
host's ms between passes per pass.
"""
import argparse
import concurrent.futures
import http.client
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import openai


_client = None


def _connect(base_url, raw=False):
    global _client
    if raw:
        _client = RawClient(base_url)
    else:
        _client = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=600)


class RawClient:
    """The streamed completions one() asks for, over http.client: (usage tokens, text) per event."""

    def __init__(self, base_url):
        u = urllib.parse.urlsplit(base_url)
        self.host, self.port, self.path = u.hostname, u.port, u.path.rstrip("/") + "/completions"

    def stream(self, prompt, tokens):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        body = json.dumps({"model": "m", "prompt": prompt, "max_tokens": tokens, "temperature": 0,
                           "stream": True, "ignore_eos": True,
                           "stream_options": {"include_usage": True}})
        conn.request("POST", self.path, body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        if r.status != 200:
            raise RuntimeError(f"HTTP {r.status}: {r.read()[:200]!r}")
        for line in r:
            if not line.startswith(b"data: "):
                continue
            data = line[6:].strip()
            if data == b"[DONE]":
                break
            ev = json.loads(data)
            usage = ev.get("usage")
            choices = ev.get("choices") or []
            yield (usage["completion_tokens"] if usage else None,
                   choices[0].get("text") if choices else None)
        conn.close()


def _one_in_process(args):
    return one(_client, *args)


def one(client, prompt, tokens, go):
    # The clients send together: each waits for the common start time `go` (a process pool hands
    # its workers their tasks ~1 ms apart, which spread 8 requests' arrival over ~10-20 ms).
    time.sleep(max(0.0, go - time.perf_counter()))
    t0 = time.perf_counter()
    times = []
    n = 0
    if isinstance(client, RawClient):
        for usage, text in client.stream(prompt, tokens):
            if usage is not None:
                n = usage
            if text:
                times.append(time.perf_counter())
    else:
        for ch in client.completions.create(model="m", prompt=prompt, max_tokens=tokens,
                                            temperature=0, stream=True,
                                            extra_body={"ignore_eos": True},
                                            stream_options={"include_usage": True}):
            if ch.usage:
                n = ch.usage.completion_tokens
            if ch.choices and ch.choices[0].text:
                times.append(time.perf_counter())
    return {"start": t0, "first": times[0], "last": times[-1], "tokens": n, "late": t0 - go}


def health(base):
    with urllib.request.urlopen(base + "/health", timeout=10) as r:
        return json.loads(r.read())


def scheduler_share(before, after):
    d = {k: after[k] - before[k] for k in ("decode_steps", "decoded_rows", "decode_passes",
                                            "prompt_passes", "decode_pass_ms", "prompt_pass_ms",
                                            "host_ms")}
    steps, decodes = max(d["decode_steps"], 1), max(d["decode_passes"], 1)
    prompts = max(d["prompt_passes"], 1)
    passes = max(d["decode_passes"] + d["prompt_passes"], 1)
    return (f"passes of answer tokens only {d['decode_passes']} ({d['decode_pass_ms'] / decodes:.3f}"
            f" ms), mean batch {d['decoded_rows'] / steps:.2f}, passes with prompts "
            f"{d['prompt_passes']} "
            f"({d['prompt_pass_ms'] / prompts:.2f} ms), host {d['host_ms'] / passes:.3f} ms a "
            f"pass; longest pass since start {after['longest_pass_ms']:.1f} ms")


def run(pool, prompts, tokens):
    # perf_counter is CLOCK_MONOTONIC on Linux: one clock for every process.
    t0 = time.perf_counter()
    go = t0 + 0.1  # every worker has its task by then
    rs = list(pool.map(_one_in_process, [(p, tokens, go) for p in prompts]))
    wall = time.perf_counter() - t0
    first = min(r["first"] for r in rs)
    last = max(r["last"] for r in rs)
    decode_tokens = sum(r["tokens"] - 1 for r in rs)
    ttft = [r["first"] - r["start"] for r in rs]
    return {"clients": len(prompts), "tokens": sum(r["tokens"] for r in rs),
            "decode_tok_s": decode_tokens / (last - first),
            "total_tok_s": sum(r["tokens"] for r in rs) / (wall - (go - t0)),
            "ttft_median_ms": 1e3 * statistics.median(ttft), "ttft_max_ms": 1e3 * max(ttft),
            "start_spread_ms": 1e3 * (max(r["start"] for r in rs) - min(r["start"] for r in rs))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wick")
    ap.add_argument("model")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("-t", "--threads", default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--log-passes", action="store_true",
                    help="the server prints each pass on stderr (wick serve --log-passes)")
    ap.add_argument("--client", choices=("openai", "raw"), default="openai",
                    help="the openai client, or http.client reading the events (see above)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="(1 client, N clients) pairs run one after the other (see above)")
    a = ap.parse_args()
    cmd = [a.wick, "serve", "-m", a.model, "--port", "0", "-np", str(a.clients), "-c", str(a.ctx)]
    if a.threads:
        cmd += ["-t", a.threads]
    if a.device:
        cmd += ["--device", a.device]
    if a.log_passes:
        cmd += ["--log-passes"]
    srv = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = srv.stdout.readline()
    print(line.strip())
    port = int(line.split("http://")[1].split()[0].rsplit(":", 1)[1])
    pool = concurrent.futures.ProcessPoolExecutor(
        a.clients, mp_context=multiprocessing.get_context("fork"), initializer=_connect,
        initargs=(f"http://127.0.0.1:{port}/v1", a.client == "raw"))
    try:
        topics = ["the sea", "a city at night", "mountains", "an old library", "rain",
                  "a train journey", "the moon", "a garden", "winter", "a market"]
        prompts = [f"Write a short story about {topics[i % len(topics)]}." for i in
                   range(a.clients)]
        # Warm-up with every client, so that a GPU's kernels for every batch size are compiled
        # (or loaded from the disk cache) before anything is timed.
        run(pool, prompts[:1], 8)
        run(pool, prompts, 8)
        base = f"http://127.0.0.1:{port}"
        ratios = []
        for rnd in range(a.rounds):
            results, shares = [], []
            for p in (prompts[:1], prompts):
                before = health(base)
                results.append(run(pool, p, a.tokens))
                shares.append(scheduler_share(before, health(base)))
            if a.rounds > 1:
                print(f"round {rnd + 1} of {a.rounds}")
            print(f"| clients | tokens | aggregate decode tok/s | total tok/s | TTFT median ms "
                  f"| TTFT max ms | start spread ms |")
            print("| --- | --- | --- | --- | --- | --- | --- |")
            for r in results:
                print(f"| {r['clients']} | {r['tokens']} | {r['decode_tok_s']:.1f} | "
                      f"{r['total_tok_s']:.1f} | {r['ttft_median_ms']:.0f} | "
                      f"{r['ttft_max_ms']:.0f} | {r['start_spread_ms']:.1f} |")
            ratios.append(results[1]['decode_tok_s'] / results[0]['decode_tok_s'])
            print(f"ratio {a.clients} clients / 1 (aggregate decode): {ratios[-1]:.2f}x")
            for r, s in zip(results, shares):
                print(f"scheduler, {r['clients']} client(s): {s}")
            print(json.dumps(results))
        if a.rounds > 1:
            print(f"ratios of {a.rounds} rounds: " + ", ".join(f"{r:.2f}x" for r in ratios) +
                  f"; median {statistics.median(ratios):.2f}x")
    finally:
        pool.shutdown()
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
