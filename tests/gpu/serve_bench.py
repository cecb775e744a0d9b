#!/usr/bin/env python3
"""tests/gpu/serve_bench.py: server throughput of q36 serve beside
llama-server, with the standard library only (the GPU machine has python3,
not node; on the CPU, bench/server/vs_llama.sh and load.mjs do the same).

For each -np N of --np (default 1,4,16) and each repetition: starts
`q36 serve -m MODEL -ngl NGL --port 0 -np N -c CTX` and, with
--llama-server BIN, `llama-server -m MODEL -ngl NGL -np N -c N*CTX -fa on`
on a free port (its -c is the total, q36's a slot's, as in vs_llama.sh),
the two in turn, the order swapped from one point to the next so that both
see the same machine state. Each server first gets N concurrent warm-up
requests (not timed), then N clients for SECONDS: each loops one streamed
chat completion (max_tokens MAX_TOKENS, temperature 0 or --temperature,
seed 1, ignore_eos, stream_options.include_usage) with a prompt of its own,
the same sequence of prompts for both servers, and no two alike. Then the
server is stopped. On a synthetic (random-weight) file greedy replies tend
to be one token over and over for every client, so that every slot's MoE
rows go to the same experts, which a real batch does not do; a temperature
of 1 spreads the tokens (the replies are sampled on the host then, by both
servers).

Counted: completion tokens from each stream's usage (a stream without
usage, without [DONE], with an error event or a status other than 200 is a
failed request); tokens/s = the tokens of all completed requests over the
time from the first request to the last reply. Time to first token: from
sending to the first chunk with non-empty content or reasoning_content
("stream"); the synthetic files' replies are mostly unused vocabulary ids,
which both servers stream as empty text, so for those it is the reply's
end less the server's timings.predicted_ms ("timings": both servers count
that from the first token to the last). The source used is the one that
covers 90% of the requests, stream first. Per-stream decode rate:
timings.predicted_n / predicted_ms, median over requests.

Prints one JSON line per (engine, N, repetition), with failures, their
first messages, q36's engine-thread split (ms a step: forward passes,
MTP drafts, host work) and MTP counters when it drafts (GET /monitor) and
the client's CPU share (near 1: the client, not the server, limits),
then a markdown table of medians over repetitions and the ratios q36 /
llama-server. Server logs go to --log-dir.

With --base-q36 instead of --llama-server, the baseline is a second q36
configuration (`q36 serve` with the --base-q36-arg arguments, none by
default, and the --base-q36-env variables in its environment) taking turns
with the first (its --q36-arg ones) in the same way: e.g. MTP drafting
(--q36-arg=--spec-type --q36-arg=draft-mtp) beside plain decoding on the
same model, the ratio its speed-up.

Exit status: 0 when every server started and every request succeeded; 1
when a server did not start or any request failed (both are printed, with
the server's last log lines); 2 on bad usage; 3 when --budget cut points
(named in SKIP lines). Env: NGL (default 99).
Usage: serve_bench.py Q36 MODEL.gguf [--llama-server BIN] [--np 1,4,16]
       [--seconds 20] [--max-tokens 128] [--ctx 1024] [--reps 1]
       [--threads T] [--budget SECONDS] [--log-dir DIR]"""
import argparse
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

VISIBLE = re.compile(rb'"(?:reasoning_)?content"\s*:\s*"(?:[^"\\]|\\.)')
COMPLETION = re.compile(rb'"completion_tokens"\s*:\s*(\d+)')
PREDICTED_MS = re.compile(rb'"predicted_ms"\s*:\s*([0-9.eE+-]+)')
PREDICTED_N = re.compile(rb'"predicted_n"\s*:\s*([0-9.eE+-]+)')
TOPICS = ["a lighthouse", "a lost key", "the first snow", "a clockmaker", "two rivers", "a paper boat",
          "an old map", "a night train", "a beekeeper", "the last bus", "a glass garden", "a quiet robot",
          "a mountain inn", "a borrowed coat", "a tide pool", "a broken compass"]


class StartError(Exception):
    pass


class Failed(Exception):
    pass


def tail(path, n=5):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(l.rstrip() for l in f.readlines()[-n:])
    except OSError as e:
        return str(e)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(host, port):
    try:
        c = http.client.HTTPConnection(host, port, timeout=2)
        c.request("GET", "/health")
        ok = c.getresponse().status == 200
        c.close()
        return ok
    except (OSError, http.client.HTTPException):
        return False


class Server:
    """One server process: q36 serve (engine "q36" or, with --base-q36,
    "base") or llama-server ("llama"), logs under logdir."""

    def __init__(self, engine, a, n, rep):
        self.engine, self.a = engine, a
        base = os.path.join(a.log_dir, f"{engine}-np{n}-r{rep}")
        self.out, self.err = base + ".out", base + ".err"
        self.proc, self.host, self.port = None, "127.0.0.1", None
        ngl = os.environ.get("NGL", "99")
        thr = ["-t", str(a.threads)] if a.threads else []
        if engine in ("q36", "base"):
            self.cmd = [a.q36, "serve", "-m", a.model, "-ngl", ngl, "--port", "0", "-np", str(n),
                        "-c", str(a.ctx)] + thr + (a.q36_arg if engine == "q36" else a.base_q36_arg)
        else:
            self.port = free_port()
            self.cmd = [a.llama_server, "-m", a.model, "-ngl", ngl, "--host", self.host, "--port", str(self.port),
                        "-np", str(n), "-c", str(n * a.ctx), "-fa", "on"] + \
                       (thr + ["-tb", str(a.threads)] if a.threads else []) + a.llama_arg

    def start(self):
        t0 = time.monotonic()
        with open(self.out, "w") as o, open(self.err, "w") as e:
            env = dict(os.environ)
            if self.engine == "base":   # --base-q36-env VAR=value
                env.update(kv.split("=", 1) for kv in self.a.base_q36_env)
            self.proc = subprocess.Popen(self.cmd, stdout=o, stderr=e, stdin=subprocess.DEVNULL, env=env)
        while time.monotonic() - t0 < self.a.start_timeout:
            if self.proc.poll() is not None:
                raise StartError(f"{self.engine} exited with status {self.proc.returncode}: {tail(self.err)}")
            if self.port is None:   # q36 prints its URL once the model is loaded
                with open(self.out, errors="replace") as f:
                    m = re.search(r"listening on http://([^:/\s]+):(\d+)", f.read())
                if m:
                    self.host, self.port = m.group(1), int(m.group(2))
            if self.port is not None and healthy(self.host, self.port):
                return time.monotonic() - t0
            time.sleep(0.1)
        raise StartError(f"{self.engine} not ready in {self.a.start_timeout} s: {tail(self.err)}")

    def stop(self):
        """Stops the server; its exit status when it had stopped by itself."""
        early = self.proc.poll() if self.proc else None
        if self.proc and early is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        return early


def body(a, text, max_tokens):
    return json.dumps({"messages": [{"role": "user", "content": text}], "max_tokens": max_tokens,
                       "temperature": a.temperature, "seed": 1, "ignore_eos": a.ignore_eos,
                       "stream": True,
                       "stream_options": {"include_usage": True}}).encode()


def prompt(i, n):
    return (f"Client {i}, request {n}: write a short story about {TOPICS[(i + 5 * n) % len(TOPICS)]} "
            f"and the number {(i * 7919 + n * 104729) % 1000}.")


def chat(srv, data, timeout):
    """One streamed chat completion: a dict with ok, tokens, ttft (s, first
    visible text, or None), ttft_timings, decode rate, or err."""
    r = {"ok": False}
    t0 = time.perf_counter()
    c = http.client.HTTPConnection(srv.host, srv.port, timeout=timeout)
    try:
        c.request("POST", "/v1/chat/completions", data, {"Content-Type": "application/json"})
        resp = c.getresponse()
        if resp.status != 200:
            raise Failed(f"status {resp.status}: {resp.read(200)!r}")
        done, tokens, pms, pn, first = False, None, None, None, None
        while True:
            line = resp.readline()
            if not line:
                break
            if not line.startswith(b"data:"):
                continue
            d = line[5:].strip()
            if d == b"[DONE]":
                done = True
                continue
            if first is None and VISIBLE.search(d):
                first = time.perf_counter()
            if b'"error"' in d:
                j = json.loads(d)
                if isinstance(j, dict) and "error" in j:
                    raise Failed(f"error event: {str(j['error'])[:200]}")
            if b"completion_tokens" in d:
                m = COMPLETION.search(d)
                tokens = int(m.group(1)) if m else None
                m, m2 = PREDICTED_MS.search(d), PREDICTED_N.search(d)
                pms = float(m.group(1)) if m else None
                pn = float(m2.group(1)) if m2 else None
        t1 = time.perf_counter()
        if not done:
            raise Failed("stream ended without [DONE]")
        if tokens is None:
            raise Failed("no usage.completion_tokens in the stream")
        r.update(ok=True, tokens=tokens, ttft=first - t0 if first else None,
                 ttft_timings=(t1 - t0) - pms / 1e3 if pms is not None else None,
                 rate=pn / (pms / 1e3) if pms and pn else None)
    except (Failed, OSError, http.client.HTTPException, ValueError) as e:
        r["err"] = f"{type(e).__name__}: {e}"[:240]
    finally:
        c.close()
    return r


def pct(xs, q):
    xs = sorted(x for x in xs if x is not None)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    n = len(xs)
    return None if not n else xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def run_threads(fns):
    th = [threading.Thread(target=f, daemon=True) for f in fns]
    for t in th:
        t.start()
    for t in th:
        while t.is_alive():
            t.join(1)


def q36_stats(srv):
    """q36 serve's counters over the whole run (GET /monitor): where the
    engine thread's steps went (ms a step: all of it, the forward passes,
    the MTP draft passes, accepting verify rows, the rest) and, with --spec-type
    draft-mtp, the MTP counters ("mtp", null without); {} when the server
    does not answer."""
    try:
        c = http.client.HTTPConnection(srv.host, srv.port, timeout=10)
        c.request("GET", "/monitor")
        r = json.loads(c.getresponse().read())
        c.close()
    except (OSError, http.client.HTTPException, ValueError):
        return {}
    out = {}
    t = r.get("totals") or {}
    steps = t.get("n_decode") or 0
    if steps and "step_seconds" in t:
        ms = lambda k: round(t[k] * 1e3 / steps, 4)
        out.update({"steps": steps, "step_ms": ms("step_seconds"), "forward_ms": ms("forward_seconds"),
                    "draft_ms": ms("draft_seconds"), "accept_ms": ms("accept_seconds"),
                    "host_ms": round((t["step_seconds"] - t["forward_seconds"] - t["draft_seconds"]
                                      - t["accept_seconds"]) * 1e3 / steps, 4)})
        if "device_launches" in t:     # the device's queue a step: single launches, recorded passes
            out.update({"launches_step": round(t["device_launches"] / steps, 1),
                        "graph_launches_step": round(t["device_graph_launches"] / steps, 2),
                        "graphs_recorded": t["device_graphs_recorded"]})
    m = r.get("mtp")
    if m:
        if "guard" in m:      # steps the MTP guard sent without drafts and with
            out.update({"mtp_guard": m["guard"], "mtp_guard_plain": m.get("guard_plain_steps"),
                        "mtp_guard_drafting": m.get("guard_drafting_steps"),
                        "mtp_steps_without_drafts": m.get("steps_without_drafts"),
                        "mtp_verify_rows": m.get("verify_rows")})
        out.update({"mtp_acceptance": round(m["acceptance"], 3),
                    "mtp_tokens_per_verify": round(m["tokens_per_verify_row"], 2),
                    "mtp_by_position": m["acceptance_by_position"]})
    return out


def load(a, srv, n):
    """Warm-up, then n clients for a.seconds: the point's summary."""
    warm = []
    wt = min(a.max_tokens, 16)
    run_threads([lambda i=i: warm.append(chat(srv, body(a, f"Warm-up {i}: " + prompt(i, 999), wt), a.request_timeout))
                 for i in range(n)])
    res, lock = [], threading.Lock()
    t0 = time.perf_counter()
    end = t0 + a.seconds

    def client(i):
        k = 0
        while time.perf_counter() < end:
            r = chat(srv, body(a, prompt(i, k), a.max_tokens), a.request_timeout)
            k += 1
            with lock:
                res.append(r)
            if not r["ok"]:
                time.sleep(0.1)   # a refused request: no busy loop against a dead server

    cpu0 = time.process_time()
    run_threads([lambda i=i: client(i) for i in range(n)])
    el = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    ok = [r for r in res if r["ok"]]
    bad = [r for r in res if not r["ok"]] + [r for r in warm if not r["ok"]]
    errs = {}
    for r in bad:
        errs[r["err"]] = errs.get(r["err"], 0) + 1
    tokens = sum(r["tokens"] for r in ok)
    stream = [r["ttft"] for r in ok if r["ttft"] is not None]
    timed = [r["ttft_timings"] for r in ok if r["ttft_timings"] is not None]
    src, tt = ("stream", stream) if ok and len(stream) >= 0.9 * len(ok) else \
              ("timings", timed) if ok and len(timed) >= 0.9 * len(ok) else ("none", [])
    ms = lambda x: None if x is None else round(x * 1e3, 1)
    return {"seconds": round(el, 2), "done": len(ok), "failed": sum(1 for r in res if not r["ok"]),
            "warmup_failed": sum(1 for r in warm if not r["ok"]), "tokens": tokens,
            "tok_s": round(tokens / el, 2) if el > 0 else None,
            "short_replies": sum(1 for r in ok if r["tokens"] < a.max_tokens),
            "ttft_ms_median": ms(median(tt)), "ttft_ms_p90": ms(pct(tt, 0.9)), "ttft_from": src,
            "ttft_stream_n": len(stream), "ttft_stream_ms_median": ms(median(stream)),
            "ttft_timings_ms_median": ms(median(timed)),
            "stream_tok_s_median": (lambda v: None if v is None else round(v, 1))(median(r["rate"] for r in ok)),
            "client_cpu": round(cpu / el, 2) if el > 0 else None,
            "errors": dict(sorted(errs.items(), key=lambda kv: -kv[1])[:3])}


def verdict(row, errlog):
    """The reasons one point failed (none when it passed)."""
    if "start_failed" in row:
        return [f"did not start: {row['start_failed']}"]
    why = []
    if "server_exited" in row:
        why.append(f"the server exited by itself (status {row['server_exited']}) during the run: {tail(errlog)}")
    if row["failed"] or row["warmup_failed"]:
        why.append(f"{row['failed']} of {row['failed'] + row['done']} requests failed "
                   f"(+{row['warmup_failed']} warm-up): {row['errors']}")
    elif row["done"] == 0:
        why.append("no request completed")
    return why


def fmt(x, d=1):
    return "-" if x is None else f"{x:.{d}f}"


def table(a, rows, engines):
    print(f"\n### {os.path.basename(a.model)}: {a.seconds:g} s a point, {a.max_tokens} tokens a request, "
          f"-c {a.ctx} a slot, NGL={os.environ.get('NGL', '99')}\n")
    both = len(engines) == 2
    o = engines[-1]                     # the baseline: "llama" or "base"
    name = "llama-server" if o == "llama" else "q36 base"
    if o == "base":
        print(f"q36: {' '.join(a.q36_arg) or '(no arguments)'}; q36 base: "
              f"{' '.join(a.base_q36_env + a.base_q36_arg) or '(no arguments)'}\n")
    hdr = f"| -np | reps ({'q36, ' + o if both else 'q36'}) | q36 tok/s | q36 TTFT ms med / p90 |"
    sep = "|---:|---:|---:|---:|"
    if both:
        hdr += f" {name} tok/s | {name} TTFT ms med / p90 | tok/s q36/{o} | TTFT q36/{o} |"
        sep += "---:|---:|---:|---:|"
    print(hdr + " failed (q36" + (f", {o})" if both else ")") + " |")
    print(sep + "---|")
    for n in a.np:
        pts = {e: {r["rep"]: r for r in rows if r.get("np") == n and r.get("engine") == e and "tok_s" in r}
               for e in engines}
        here = [r for r in rows if r.get("np") == n]
        if not here:
            continue
        if all(r.get("skipped") for r in here):
            print(f"| {n} | skipped (--budget) |")
            continue
        col = lambda e, k: median(r[k] for r in pts[e].values())
        src = lambda e: "/".join(sorted({r["ttft_from"] for r in pts[e].values()})) or "-"
        line = f"| {n} | {', '.join(str(len(pts[e])) for e in engines)} | {fmt(col('q36', 'tok_s'))} | " \
               f"{fmt(col('q36', 'ttft_ms_median'), 0)} / {fmt(col('q36', 'ttft_ms_p90'), 0)} ({src('q36')}) |"
        if both:
            pairs = [(q, pts[o][rep]) for rep, q in pts["q36"].items() if rep in pts[o]]
            ratio = lambda k: median(q[k] / l[k] if q[k] is not None and l[k] else None for q, l in pairs)
            line += f" {fmt(col(o, 'tok_s'))} | {fmt(col(o, 'ttft_ms_median'), 0)} / " \
                    f"{fmt(col(o, 'ttft_ms_p90'), 0)} ({src(o)}) | " \
                    f"{fmt(ratio('tok_s'), 2)} | {fmt(ratio('ttft_ms_median'), 2)} |"
        fails = [sum(r.get("failed", 0) + r.get("warmup_failed", 0) for r in here if r.get("engine") == e)
                 for e in engines]
        nostart = [sum(1 for r in here if r.get("engine") == e and "start_failed" in r) for e in engines]
        print(line + " " + ", ".join(map(str, fails)) +
              (f" (did not start: {', '.join(map(str, nostart))})" if any(nostart) else "") + " |")
    for e in engines:      # MTP counters and q36 engine-thread splits, a line a point
        for r in rows:
            if r.get("engine") == e and "mtp_acceptance" in r:
                print(f"# {e} -np {r['np']} rep {r['rep']}: MTP acceptance {r['mtp_acceptance']} "
                      f"(by position {r['mtp_by_position']}), {r['mtp_tokens_per_verify']} tokens a verify row"
                      + (f"; guard {'on' if r['mtp_guard'] else 'off'}: {r['mtp_guard_plain']} steps without "
                         f"drafts, {r['mtp_guard_drafting']} with, {r['mtp_verify_rows']} verify rows"
                         if "mtp_guard" in r else ""))
            if r.get("engine") == e and "step_ms" in r:
                print(f"# {e} -np {r['np']} rep {r['rep']}: {r['steps']} engine steps, ms a step: "
                      f"{r['step_ms']} = forward {r['forward_ms']} + drafts {r['draft_ms']} + accepting "
                      f"{r['accept_ms']} + the rest {r['host_ms']}"
                      + (f"; a step launched {r['launches_step']} kernels one by one and {r['graph_launches_step']} "
                         f"recorded passes ({r['graphs_recorded']} recorded in all)" if "launches_step" in r else ""))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("q36")
    p.add_argument("model")
    p.add_argument("--llama-server", default="")
    p.add_argument("--np", default="1,4,16")
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--ctx", type=int, default=1024)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--budget", type=float, default=0, help="seconds for the whole run; 0: no limit")
    p.add_argument("--start-timeout", type=float, default=300)
    p.add_argument("--request-timeout", type=float, default=300)
    p.add_argument("--no-ignore-eos", dest="ignore_eos", action="store_false")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--q36-arg", action="append", default=[])
    p.add_argument("--llama-arg", action="append", default=[])
    p.add_argument("--base-q36", action="store_true",
                   help="the baseline is q36 serve with --base-q36-arg's arguments, not llama-server")
    p.add_argument("--base-q36-arg", action="append", default=[])
    p.add_argument("--base-q36-env", action="append", default=[],
                   help="VAR=value in the baseline q36 serve's environment (with --base-q36)")
    p.add_argument("--log-dir", default="")
    a = p.parse_args()
    try:
        a.np = [int(x) for x in a.np.replace(",", " ").split()]
    except ValueError:
        p.error(f"--np: expected slot counts such as 1,4,16, found '{a.np}'")
    if not a.np or min(a.np) < 1 or a.seconds <= 0 or a.max_tokens < 1 or a.reps < 1 or a.ctx <= a.max_tokens:
        p.error("--np, --seconds, --max-tokens and --reps must be positive and --ctx above --max-tokens")
    for f in [a.q36, a.model] + ([a.llama_server] if a.llama_server else []):
        if not os.path.isfile(f):
            p.error(f"{f}: no such file")
    a.log_dir = a.log_dir or tempfile.mkdtemp(prefix="serve-bench-")
    os.makedirs(a.log_dir, exist_ok=True)
    if any("=" not in kv for kv in a.base_q36_env):
        p.error("--base-q36-env takes VAR=value")
    if a.base_q36 and a.llama_server:
        p.error("--base-q36 and --llama-server: one baseline at a time")
    engines = ["q36"] + (["llama"] if a.llama_server else ["base"] if a.base_q36 else [])
    # a timeout's SIGTERM must still stop the servers (finally below)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"# serve_bench.py {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}: model {a.model}, "
          f"engines {' '.join(engines)}, -np {a.np}, {a.reps} rep(s), {a.seconds:g} s, {a.max_tokens} tokens, "
          f"temperature {a.temperature:g}, ctx {a.ctx} a slot, NGL={os.environ.get('NGL', '99')}, logs {a.log_dir}", flush=True)
    t_start, starts, rows, status, srv, finished = time.monotonic(), [], [], 0, None, False
    try:
        k = 0
        for rep in range(1, a.reps + 1):
            for n in a.np:
                order = engines if k % 2 == 0 else engines[::-1]
                k += 1
                guess = len(engines) * (a.seconds + max(starts, default=30) + 10)
                if a.budget and time.monotonic() - t_start + guess > a.budget:
                    print(f"SKIP -np {n} rep {rep}: {time.monotonic() - t_start:.0f} s spent, ~{guess:.0f} s more "
                          f"would pass --budget {a.budget:g}", flush=True)
                    rows.append({"np": n, "rep": rep, "skipped": True})
                    status = status or 3
                    continue
                for e in order:
                    srv = Server(e, a, n, rep)
                    print("# $ " + " ".join(srv.cmd), flush=True)
                    row = {"engine": e, "model": os.path.basename(a.model), "np": n, "rep": rep}
                    try:
                        row["start_s"] = round(srv.start(), 1)
                        starts.append(row["start_s"])
                        row.update(load(a, srv, n))
                        if e != "llama":
                            row.update(q36_stats(srv))
                    except StartError as x:
                        row["start_failed"] = str(x)
                    finally:
                        early = srv.stop()
                        srv = None
                    if early is not None and "start_failed" not in row:
                        row["server_exited"] = early
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    for why in verdict(row, os.path.join(a.log_dir, f"{e}-np{n}-r{rep}.err")):
                        print(f"FAIL {e} -np {n}: {why}", flush=True)
                        status = 1
                    if (row.get("client_cpu") or 0) > 0.8:
                        print(f"# note: the client used {row['client_cpu']:.0%} of a core: it may limit {e} here",
                              flush=True)
        finished = True
    finally:
        if srv:
            srv.stop()
        table(a, rows, engines)
        print(f"\n# {time.monotonic() - t_start:.0f} s, " +
              (f"exit status {status}" if finished else "INTERRUPTED: the points above are all that ran"), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
