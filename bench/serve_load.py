#!/usr/bin/env python3
"""Load driver for an OpenAI-compatible server (`saker serve`, llama-server, ...): N concurrent streaming
clients, each sending K requests one after another, per concurrency level.

Every request carries a prompt of --prompt-tokens tokens and asks for --gen-tokens tokens at temperature 0,
streamed (SSE), so the time to first token is the time from sending the request to the first chunk that
carries generated text. Prompts are distinct per request (so a prefix cache cannot serve them):

  --prompt-source random  random token ids below the server's vocabulary size (from /v1/models "meta", or
                          --vocab-size), sent as a token-id prompt to /v1/completions
  --prompt-source text    a filler text of shuffled common words, tokenized by the server (/tokenize) and cut
                          to exactly P ids
  --prompts FILE          real prompts instead (a JSON list: strings, or objects with "ids" or "text"), taken
                          in order, request i of a level getting prompt i (cycled), so two servers given the
                          same file and levels get the same requests; ids go as a token-id prompt, text as text

With --endpoint chat the ids are turned back into text (/detokenize) and sent as one user message, so the
prompt is about P tokens plus the chat template's markers (the JSON records what the server counted).

Per level it reports: aggregate generated tokens/s (the sum of completion tokens over the level's wall time,
first request sent to last stream closed), TTFT p50/p99, end-to-end latency p50/p99, the per-request decode
rate (tokens after the first / time after the first), and errors (HTTP errors, error events, streams that did
not end with [DONE]). Where the server reports speculative decoding per response (saker: usage
completion_tokens_details accepted / rejected prediction tokens; llama-server: timings draft_n /
draft_n_accepted), the level also reports drafted and accepted tokens. The exit status is 1 when any request failed (the JSON is written either way).

Python 3 standard library only. Example:

  saker serve -m model.gguf --parallel 64 &
  python3 bench/serve_load.py --url http://127.0.0.1:8080 --concurrency 1,4,16,64 --json load.json
"""
import argparse
import http.client
import json
import random
import sys
import threading
import time
import urllib.parse

WORDS = ("the of and to in is was for on that with as by at from his her an were which are this be has had "
         "not but they their one all been more when who would will there its also after first new two other "
         "time over years only most may such into some could these many about then city world house water "
         "river music history system people number school family state government country century").split()


def percentile(values, q):
    """Linear interpolation between the closest ranks (q in [0, 1]); 0 for no values."""
    if not values:
        return 0.0
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def median(values):
    return percentile(values, 0.5)


class Client:
    """One HTTP endpoint: host, port, path prefix and headers."""

    def __init__(self, url, api_key, timeout):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise SystemExit(f"--url must look like http://HOST:PORT (got {url!r})")
        self.https = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port or (443 if self.https else 80)
        self.prefix = u.path.rstrip("/")
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def connect(self):
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=self.timeout)

    def request_json(self, method, path, body=None):
        """A plain (non-streaming) request; returns (status, parsed JSON or None)."""
        conn = self.connect()
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, self.prefix + path, body=data, headers=self.headers)
            resp = conn.getresponse()
            raw = resp.read()
            try:
                return resp.status, json.loads(raw)
            except ValueError:
                return resp.status, None
        finally:
            conn.close()


def chunk_text(chunk, chat):
    """The generated text a streamed chunk carries ('' for role-only, usage-only and final chunks)."""
    choices = chunk.get("choices") or []
    if not choices:
        return ""
    c = choices[0]
    if chat:
        delta = c.get("delta") or {}
        return (delta.get("content") or "") + (delta.get("reasoning_content") or "")
    return c.get("text") or ""


def stream_one(client, path, body, chat):
    """Sends one streaming request. Returns a dict: ok, error, ttft_s, latency_s, completion_tokens,
    prompt_tokens, chunks."""
    out = {"ok": False, "error": None, "ttft_s": None, "latency_s": None, "completion_tokens": 0,
           "prompt_tokens": None, "chunks": 0, "drafted": None, "accepted": None}
    conn = client.connect()
    t0 = time.perf_counter()
    try:
        conn.request("POST", client.prefix + path, body=json.dumps(body).encode(), headers=client.headers)
        resp = conn.getresponse()
        if resp.status != 200:
            out["error"] = f"HTTP {resp.status}: {resp.read()[:300].decode(errors='replace')}"
            return out
        done = False
        usage = None
        t_first_chunk = None
        finish = None
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]":
                done = True
                break
            now = time.perf_counter()
            chunk = json.loads(payload)
            if "error" in chunk:
                out["error"] = f"error event: {json.dumps(chunk['error'])[:300]}"
                return out
            if t_first_chunk is None and chunk.get("choices"):
                t_first_chunk = now
            if chunk.get("usage"):
                usage = chunk["usage"]
            timings = chunk.get("timings") or {}
            if "draft_n" in timings:  # llama-server's speculative decoding counts
                out["drafted"] = int(timings.get("draft_n") or 0)
                out["accepted"] = int(timings.get("draft_n_accepted") or 0)
            text = chunk_text(chunk, chat)
            if text:
                out["chunks"] += 1
                if out["ttft_s"] is None:
                    out["ttft_s"] = now - t0
            for c in chunk.get("choices") or []:
                if c.get("finish_reason"):
                    finish = now
        t_end = time.perf_counter()
        if not done:
            out["error"] = "the stream ended without [DONE]"
            return out
        if out["ttft_s"] is None:  # no chunk carried text (every token was special or empty)
            first = t_first_chunk or finish or t_end
            out["ttft_s"] = first - t0
        out["latency_s"] = t_end - t0
        if usage:
            out["completion_tokens"] = int(usage.get("completion_tokens") or 0)
            out["prompt_tokens"] = usage.get("prompt_tokens")
            details = usage.get("completion_tokens_details") or {}
            if "accepted_prediction_tokens" in details:  # saker's speculative decoding counts
                accepted = int(details.get("accepted_prediction_tokens") or 0)
                out["accepted"] = accepted
                out["drafted"] = accepted + int(details.get("rejected_prediction_tokens") or 0)
        else:  # servers that send no usage: one chunk per token is the usual streaming granularity
            out["completion_tokens"] = out["chunks"]
        out["ok"] = True
        return out
    except Exception as e:  # noqa: BLE001 - every failure is one error of the level
        out["error"] = f"{type(e).__name__}: {e}"
        return out
    finally:
        conn.close()


class PromptMaker:
    """Distinct prompts of a fixed token count, from random ids or tokenized filler text; or a file's prompts."""

    def __init__(self, client, args):
        self.client = client
        self.args = args
        self.n_vocab = args.vocab_size
        self.file = None  # --prompts: [(ids or None, text or None)]

    def setup(self):
        if self.args.prompts:
            try:
                with open(self.args.prompts, encoding="utf-8") as f:
                    entries = json.load(f)
            except (OSError, ValueError) as e:
                raise SystemExit(f"--prompts {self.args.prompts}: {e}")
            if not isinstance(entries, list) or not entries:
                raise SystemExit(f"--prompts {self.args.prompts}: expected a JSON list of prompts")
            self.file = []
            for i, e in enumerate(entries):
                if isinstance(e, str):
                    self.file.append((None, e))
                elif isinstance(e, dict) and isinstance(e.get("ids"), list):
                    self.file.append(([int(t) for t in e["ids"]], e.get("text")))
                elif isinstance(e, dict) and isinstance(e.get("text"), str):
                    self.file.append((None, e["text"]))
                else:
                    raise SystemExit(f"--prompts {self.args.prompts}: entry {i} has neither ids nor text")
            return
        if self.args.prompt_source == "random" and not self.n_vocab:
            status, j = self.client.request_json("GET", "/v1/models")
            try:
                self.n_vocab = int(j["data"][0]["meta"]["n_vocab"])
            except (TypeError, KeyError, IndexError, ValueError):
                raise SystemExit(f"cannot read the vocabulary size from /v1/models (HTTP {status}); "
                                 "pass --vocab-size or --prompt-source text")

    def ids(self, seed):
        rng = random.Random(seed)
        p = self.args.prompt_tokens
        if self.args.prompt_source == "random":
            lo = min(self.args.min_id, self.n_vocab - 1)
            return [rng.randrange(lo, self.n_vocab) for _ in range(p)]
        ids = []
        words = 2 * p + 16
        while len(ids) < p:
            text = f"Request {seed}. " + " ".join(rng.choice(WORDS) for _ in range(words))
            status, j = self.client.request_json("POST", "/tokenize", {"content": text})
            if status != 200 or not j or "tokens" not in j:
                raise SystemExit(f"/tokenize failed (HTTP {status}): the server needs it for --prompt-source text")
            ids = [t["id"] if isinstance(t, dict) else t for t in j["tokens"]]
            words *= 2
        return ids[:p]

    def text(self, ids):
        status, j = self.client.request_json("POST", "/detokenize", {"tokens": ids})
        if status != 200 or not j or "content" not in j:
            raise SystemExit(f"/detokenize failed (HTTP {status}): the chat endpoint needs it to build prompts")
        return j["content"]


def request_body(args, model, prompt_ids, prompt_text):
    body = {"model": model, "max_tokens": args.gen_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    if not args.no_ignore_eos:
        body["ignore_eos"] = True  # llama-server generates exactly max_tokens; servers without it ignore it
    if args.endpoint == "chat":
        body["messages"] = [{"role": "user", "content": prompt_text}]
    else:
        body["prompt"] = prompt_ids if prompt_ids is not None else prompt_text
    return body


def run_level(client, args, model, maker, n, level_index):
    path = "/v1/chat/completions" if args.endpoint == "chat" else "/v1/completions"
    chat = args.endpoint == "chat"
    k = args.requests_per_client
    # Every prompt is built before the clock starts.
    bodies = []
    for c in range(n):
        row = []
        for r in range(k):
            if maker.file:  # request c * k + r of the level: the file's prompts in order
                ids, text = maker.file[(c * k + r) % len(maker.file)]
                if chat and text is None:
                    text = maker.text(ids)
                row.append(request_body(args, model, None if chat else ids, text))
                continue
            seed = args.seed + 1_000_003 * (level_index + 1) + 1009 * c + r
            ids = maker.ids(seed)
            row.append(request_body(args, model, ids, maker.text(ids) if chat else None))
        bodies.append(row)
    results = [[] for _ in range(n)]
    barrier = threading.Barrier(n + 1)

    def worker(c):
        barrier.wait()
        for body in bodies[c]:
            results[c].append(stream_one(client, path, body, chat))

    threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in range(n)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0

    flat = [r for rs in results for r in rs]
    ok = [r for r in flat if r["ok"]]
    errors = [r["error"] for r in flat if not r["ok"]]
    completion = sum(r["completion_tokens"] for r in ok)
    ttft = [r["ttft_s"] * 1e3 for r in ok]
    latency = [r["latency_s"] * 1e3 for r in ok]
    decode_rates = [(r["completion_tokens"] - 1) / (r["latency_s"] - r["ttft_s"])
                    for r in ok if r["completion_tokens"] > 1 and r["latency_s"] > r["ttft_s"]]
    prompt_counts = [r["prompt_tokens"] for r in ok if r["prompt_tokens"] is not None]
    spec = [r for r in ok if r["drafted"] is not None]
    return {
        "concurrency": n,
        "requests": len(flat),
        "errors": len(errors),
        "error_samples": errors[:5],
        "wall_s": wall,
        "completion_tokens": completion,
        "prompt_tokens_mean": sum(prompt_counts) / len(prompt_counts) if prompt_counts else None,
        "tokens_per_s": completion / wall if wall > 0 else 0.0,
        "requests_per_s": len(ok) / wall if wall > 0 else 0.0,
        "ttft_ms_p50": percentile(ttft, 0.50),
        "ttft_ms_p99": percentile(ttft, 0.99),
        "latency_ms_p50": percentile(latency, 0.50),
        "latency_ms_p99": percentile(latency, 0.99),
        "decode_tokens_per_s_per_request_p50": median(decode_rates),
        "drafted_tokens": sum(r["drafted"] for r in spec) if spec else None,
        "accepted_tokens": sum(r["accepted"] for r in spec) if spec else None,
    }


def parse_levels(text):
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"--concurrency must be a comma-separated list of integers (got {text!r})")
    if not levels or any(n < 1 for n in levels):
        raise SystemExit(f"--concurrency values must be >= 1 (got {text!r})")
    return levels


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--url", default="http://127.0.0.1:8080", help="server base URL (default %(default)s)")
    ap.add_argument("--model", default=None, help="model name in requests (default: the first of /v1/models)")
    ap.add_argument("--api-key", default=None, help="sent as Authorization: Bearer KEY")
    ap.add_argument("--endpoint", choices=("completions", "chat"), default="completions",
                    help="/v1/completions with a token-id prompt, or /v1/chat/completions (default %(default)s)")
    ap.add_argument("--concurrency", default="1,4,16,64", help="client counts, one level each (default %(default)s)")
    ap.add_argument("--requests-per-client", type=int, default=1, help="requests each client sends in turn")
    ap.add_argument("--prompt-tokens", type=int, default=512, help="prompt tokens per request (default %(default)s)")
    ap.add_argument("--gen-tokens", type=int, default=128, help="max_tokens per request (default %(default)s)")
    ap.add_argument("--prompt-source", choices=("random", "text"), default="random",
                    help="random token ids, or filler text tokenized by the server (default %(default)s)")
    ap.add_argument("--prompts", default=None, metavar="FILE",
                    help="real prompts (a JSON list of strings or ids / text objects) instead of --prompt-source")
    ap.add_argument("--vocab-size", type=int, default=0, help="for random ids (default: /v1/models meta.n_vocab)")
    ap.add_argument("--min-id", type=int, default=0, help="smallest random token id (default %(default)s)")
    ap.add_argument("--no-ignore-eos", action="store_true",
                    help="do not send ignore_eos (requests may then end before --gen-tokens)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed requests before the first level")
    ap.add_argument("--seed", type=int, default=1234, help="prompt seed")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per request (socket timeout)")
    ap.add_argument("--json", default=None, help="write the levels as JSON to this file")
    args = ap.parse_args(argv)

    levels = parse_levels(args.concurrency)
    for flag, v, lo in (("--requests-per-client", args.requests_per_client, 1), ("--prompt-tokens", args.prompt_tokens, 1),
                        ("--gen-tokens", args.gen_tokens, 1), ("--warmup", args.warmup, 0),
                        ("--vocab-size", args.vocab_size, 0), ("--min-id", args.min_id, 0)):
        if v < lo:
            raise SystemExit(f"{flag} must be >= {lo} (got {v})")

    client = Client(args.url, args.api_key, args.timeout)
    model = args.model
    if model is None:
        try:
            status, j = client.request_json("GET", "/v1/models")
        except OSError as e:
            raise SystemExit(f"cannot reach {args.url}: {e}")
        try:
            model = j["data"][0]["id"]
        except (TypeError, KeyError, IndexError):
            model = "default"
    maker = PromptMaker(client, args)
    maker.setup()

    chat = args.endpoint == "chat"
    path = "/v1/chat/completions" if chat else "/v1/completions"
    for i in range(args.warmup):
        if maker.file:
            ids, text = maker.file[i % len(maker.file)]
            body = request_body(args, model, None if chat else ids, text if text is not None or not chat else maker.text(ids))
        else:
            ids = maker.ids(args.seed - 1 - i)
            body = request_body(args, model, ids, maker.text(ids) if chat else None)
        r = stream_one(client, path, body, chat)
        if not r["ok"]:
            print(f"warm-up request failed: {r['error']}", file=sys.stderr)

    rows = []
    for li, n in enumerate(levels):
        row = run_level(client, args, model, maker, n, li)
        rows.append(row)
        print(f"  N={n:<4} {row['requests']} requests, {row['errors']} errors, {row['tokens_per_s']:.1f} tok/s, "
              f"TTFT p50 {row['ttft_ms_p50']:.1f} ms", file=sys.stderr)
        for e in row["error_samples"]:
            print(f"    error: {e}", file=sys.stderr)

    print("| N | requests | errors | wall s | gen tokens | tok/s | TTFT p50 ms | TTFT p99 ms | latency p50 ms | "
          "latency p99 ms | per-request tok/s p50 | drafts accepted |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        accepted = (f"{r['accepted_tokens']} of {r['drafted_tokens']}" if r["drafted_tokens"] is not None else "-")
        print(f"| {r['concurrency']} | {r['requests']} | {r['errors']} | {r['wall_s']:.2f} | {r['completion_tokens']} | "
              f"{r['tokens_per_s']:.1f} | {r['ttft_ms_p50']:.1f} | {r['ttft_ms_p99']:.1f} | {r['latency_ms_p50']:.1f} | "
              f"{r['latency_ms_p99']:.1f} | {r['decode_tokens_per_s_per_request_p50']:.1f} | {accepted} |")
    if args.json:
        doc = {"url": args.url, "model": model, "endpoint": args.endpoint,
               "prompt_source": f"file {args.prompts}" if args.prompts else args.prompt_source,
               "prompt_tokens": args.prompt_tokens, "gen_tokens": args.gen_tokens,
               "requests_per_client": args.requests_per_client, "ignore_eos": not args.no_ignore_eos,
               "levels": rows}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    return 1 if any(r["errors"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
