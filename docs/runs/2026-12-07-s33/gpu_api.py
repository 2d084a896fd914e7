# Session 33: the new serve features on GPUs. For each device, a `wick serve` process: a prompt
# scored by echo (logprobs 3, max_tokens 0) and a greedy continuation with logprobs; the echo
# scores and the continuation's must agree with the CPU's to the devices' rounding, and each
# device's continuation must score as its own echo of prompt + continuation.
import json, subprocess, sys, time
import openai
WICK, MODEL = sys.argv[1], sys.argv[2]
PROMPT = "The quick brown fox jumps over the lazy dog. " * 3
res = {}
for dev in ["cpu", "vulkan", "cuda"]:
    p = subprocess.Popen([WICK, "serve", "-m", MODEL, "--port", "0", "--device", dev, "-c", "512"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    port = int(line.split("http://")[1].split()[0].rsplit(":", 1)[1])
    c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0)
    e = c.completions.create(model="m", prompt=PROMPT, max_tokens=0, echo=True, logprobs=3)
    g = c.completions.create(model="m", prompt=PROMPT, max_tokens=16, temperature=0, logprobs=3)
    g2 = c.completions.create(model="m", prompt=PROMPT + g.choices[0].text, max_tokens=0, echo=True, logprobs=1)
    ch = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}], max_tokens=8,
                                   temperature=0, logprobs=True, top_logprobs=2)
    res[dev] = dict(echo=e.choices[0].logprobs.token_logprobs, echo_tokens=e.choices[0].logprobs.tokens,
                    gen=g.choices[0].logprobs.token_logprobs, gen_tokens=g.choices[0].logprobs.tokens,
                    rescored=g2.choices[0].logprobs.token_logprobs, rescored_tokens=g2.choices[0].logprobs.tokens,
                    chat=[t.logprob for t in ch.choices[0].logprobs.content])
    p.terminate(); p.wait(20)
def dmax(a, b):
    return max(abs(x - y) for x, y in zip(a, b) if x is not None and y is not None)
for dev in res:
    r = res[dev]
    n = len(r["gen"])
    own = dmax(r["rescored"][-n:], r["gen"]) if r["rescored_tokens"][-n:] == r["gen_tokens"] else None
    print(f"{dev}: echo vs cpu max |d| {dmax(r['echo'], res['cpu']['echo']):.2e}; same greedy tokens as cpu: "
          f"{r['gen_tokens'] == res['cpu']['gen_tokens']}; gen vs cpu {dmax(r['gen'], res['cpu']['gen']):.2e}; "
          f"gen vs own echo {own if own is None else f'{own:.2e}'}; chat vs cpu {dmax(r['chat'], res['cpu']['chat']):.2e}")
json.dump(res, open(sys.argv[3], "w"))
