#!/usr/bin/env python3
"""A flood of refused admin calls against the quickstart with its audit trail sent to a
webhook (--notify-audit): wrk sends PUT /admin/drain with a wrong token as fast as it can for
the given time, while the server's resident memory is sampled every second and a local
receiver records every notification's size. The adversarial report's repro (2.1 M refused
calls in 25 s took RSS from 18.5 to 203 MB and made one 149.8 MB webhook body); with the
refusals counted rather than kept, memory stays flat and the bodies small.

Writes target/soak/refusal-flood.csv, docs/refusal-flood.svg, and prints a Markdown table.
Standard library only; needs wrk.

Usage: scripts/refusal-flood.py BINARY [--seconds 60] [--port 18097]
"""

import argparse
import http.client
import http.server
import json
import os
import socketserver
import subprocess
import sys
import threading
import time

TOKEN = "flood"


class Receiver(http.server.BaseHTTPRequestHandler):
    sizes = []
    lock = threading.Lock()

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        with Receiver.lock:
            Receiver.sizes.append((time.time(), len(body), body[:2000]))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def get(port, path, token=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    conn.request("GET", path, headers=headers)
    answer = conn.getresponse()
    return answer.status, answer.read().decode()


def svg(rows, path):
    width, height, left, bottom = 640, 240, 50, 30
    seconds = max(r[0] for r in rows) or 1
    top = max(40.0, max(r[1] for r in rows) * 1.25)
    rate_top = max(1.0, max(r[2] for r in rows) * 1.25)
    def x(t):
        return left + (width - left - 10) * t / seconds
    def y(v, scale):
        return height - bottom - (height - bottom - 20) * v / scale
    rss = " ".join(f"{x(t):.1f},{y(m, top):.1f}" for t, m, _ in rows)
    rate = " ".join(f"{x(t):.1f},{y(r, rate_top):.1f}" for t, _, r in rows)
    return f"""<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">
<rect width="{width}" height="{height}" fill="white"/>
<text x="{left}" y="14" font-size="12">Refused admin calls (wrong token) with the audit trail notified: server memory stays flat</text>
<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="#888"/>
<line x1="{left}" y1="20" x2="{left}" y2="{height - bottom}" stroke="#888"/>
<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{rss}"/>
<polyline fill="none" stroke="#d62728" stroke-width="1" stroke-dasharray="4 3" points="{rate}"/>
<text x="{left - 4}" y="{y(top, top) + 4:.1f}" text-anchor="end">{top:.0f} MB</text>
<text x="{left - 4}" y="{height - bottom + 4}" text-anchor="end">0</text>
<text x="{width - 10}" y="{height - 8}" text-anchor="end">{seconds:.0f} s</text>
<text x="{left + 8}" y="34" fill="#1f77b4">resident memory (MB, left scale)</text>
<text x="{left + 8}" y="48" fill="#d62728">refused calls per second (up to {rate_top:,.0f})</text>
</svg>
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--port", type=int, default=18097)
    args = parser.parse_args()
    os.makedirs("target/soak", exist_ok=True)

    receiver = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Receiver)
    receiver.daemon_threads = True
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    server = subprocess.Popen(
        [args.binary, "--port", str(args.port), "--period-ms", "1000",
         "--notify-webhook", hook, "--notify-hold-s", "0", "--notify-audit"],
        env={**os.environ, "STATUS_ADMIN_TOKEN": TOKEN, "RUST_LOG": "warn"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                if get(args.port, "/healthcheck/startup")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        lua = "target/soak/refused.lua"
        with open(lua, "w") as f:
            f.write('wrk.method = "PUT"\nwrk.body = \'{"ttlSeconds":60,"reason":"x"}\'\n'
                    'wrk.headers["Authorization"] = "Bearer wrong"\n'
                    'wrk.headers["Content-Type"] = "application/json"\n')
        idle = rss_mb(server.pid)
        flood = subprocess.Popen(
            ["wrk", "-t2", "-c32", f"-d{args.seconds}s", "-s", lua,
             f"http://127.0.0.1:{args.port}/admin/drain"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        rows = []
        started = time.time()
        refused_before = 0
        while flood.poll() is None:
            time.sleep(1)
            status, body = get(args.port, "/admin/audit", TOKEN)
            refused = json.loads(body)["refusedTotal"] if status == 200 else refused_before
            rows.append((time.time() - started, rss_mb(server.pid), refused - refused_before))
            refused_before = refused
        out = flood.stdout.read()
        time.sleep(3)  # the last notice's tick and delivery
        rows.append((time.time() - started, rss_mb(server.pid), 0))
        status, body = get(args.port, "/admin/audit", TOKEN)
        trail = json.loads(body)
        alive = get(args.port, "/healthcheck/live")[0]
    finally:
        server.terminate()
        server.wait(timeout=10)
        receiver.shutdown()

    with open("target/soak/refusal-flood.csv", "w") as f:
        f.write("seconds,rss_mb,refused_per_s\n")
        for t, m, r in rows:
            f.write(f"{t:.1f},{m:.2f},{r}\n")
    with open("docs/refusal-flood.svg", "w") as f:
        f.write(svg(rows, "docs/refusal-flood.svg"))
    sizes = [s for _, s, _ in Receiver.sizes]
    requests = next((l.split()[0] for l in out.splitlines() if "requests in" in l), "?")
    rate = next((l.split()[1] for l in out.splitlines() if l.startswith("Requests/sec")), "?")
    peak = max(m for _, m, _ in rows)
    print("| what | value |")
    print("|---|---|")
    print(f"| refused calls sent (wrk, {args.seconds} s) | {requests} ({rate}/s) |")
    print(f"| refused calls counted (`refusedTotal`) | {trail['refusedTotal']:,} |")
    print(f"| calls made with the token still in the trail | {len(trail['entries'])} of {len(trail['entries'])} (refusals kept apart: {len(trail['refusals'])}) |")
    print(f"| resident memory: idle, peak, end (MB) | {idle:.1f}, {peak:.1f}, {rows[-1][1]:.1f} |")
    print(f"| notifications received, largest body | {len(sizes)}, {max(sizes or [0]):,} bytes |")
    print(f"| liveness after the flood | {alive} |")
    if Receiver.sizes:
        first = Receiver.sizes[0][2].decode(errors="replace")
        print(f"\nFirst notification: {json.loads(first)['text'] if first.endswith('}') else first[:300]}")
    ok = peak < idle + 64 and max(sizes or [0]) <= 64 * 1024 and alive == 200
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
