#!/usr/bin/env python3
"""The soak's drivers and sampler (see scripts/soak): chaos on every dependency through every
mode, operator drains, overrides and mutes, dashboard event streams; samples the server
process every 10 s. Also a notification sink that never answers (--hang-sink), and the paired
probe-throughput run against two servers, one notifying it and one not (--pairs).
Standard library only."""

import argparse
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import threading
import time

MODES = [
    {"mode": "minor"},
    {"mode": "major"},
    {"mode": "outage"},
    {"mode": "error"},
    {"mode": "hang"},
    {"mode": "panic"},
    {"mode": "slow", "delayMs": 300},
    {"mode": "ok"},
]
TOKEN = "soak"


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.values = {"chaos": 0, "operator": 0, "events": 0, "streams": 0, "server_errors": 0}

    def add(self, key, n=1):
        with self.lock:
            self.values[key] += n

    def snapshot(self):
        with self.lock:
            return dict(self.values)


def call(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Authorization": "Bearer " + TOKEN}
    data = None
    if body is not None:
        data = json.dumps(body)
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    payload = response.read()
    conn.close()
    return response.status, payload


def chaos(port, stop, counters):
    status, body = call(port, "GET", "/demo/chaos")
    dependencies = sorted(json.loads(body))
    while not stop.is_set():
        for setting in MODES:
            for dependency in dependencies:
                if stop.is_set():
                    return
                status, _ = call(port, "PUT", "/demo/chaos/" + dependency, setting)
                counters.add("chaos")
                if status >= 500:
                    counters.add("server_errors")
                stop.wait(0.25)


def operator(port, stop, counters):
    step = 0
    while not stop.wait(2.0):
        step += 1
        calls = [
            ("PUT", "/admin/drain", {"ttlSeconds": 3, "reason": "soak drain", "actor": "soak"}),
            ("DELETE", "/admin/drain", None),
            ("PUT", "/features/checkout/override",
             {"enabled": step % 2 == 0, "ttlSeconds": 5, "reason": "soak override"}),
            ("DELETE", "/features/checkout/override", None),
            ("POST", "/healthcheck/dependencies/search/refresh", None),
            ("PUT", "/admin/mutes/search",
             {"ttlSeconds": 30, "reason": "soak mute", "actor": "soak"}),
            ("DELETE", "/admin/mutes/search", None),
        ]
        method, path, body = calls[step % len(calls)]
        status, _ = call(port, method, path, body)
        counters.add("operator")
        if status >= 500:
            counters.add("server_errors")


def stream(port, stop, counters):
    while not stop.is_set():
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/status/events")
            response = conn.getresponse()
            counters.add("streams")
            while not stop.is_set():
                line = response.fp.readline()
                if not line:
                    break
                if line.startswith(b"event:"):
                    counters.add("events")
            conn.close()
        except OSError:
            stop.wait(1.0)


def metric(port, name):
    status, body = call(port, "GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return float("nan")


def metric_sum(port, prefix):
    """The sum of every series of a metric family (`prefix{...} value` lines)."""
    status, body = call(port, "GET", "/metrics")
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith(prefix + "{") or line.startswith(prefix + " "):
            total += float(line.split()[-1])
    return total


def sample(pid, port):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return {
        "rss_kib": int(fields["VmRSS"].split()[0]),
        "threads": int(fields["Threads"]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "tasks": int(metric(port, "quickstart_runtime_alive_tasks")),
        "notify_failed": int(metric_sum(port, "status_notify_failed_attempts_total")),
        "notify_dropped": int(metric_sum(port, "status_notify_dropped_total")),
        "notify_queued": int(metric_sum(port, "status_notify_queued")),
    }


def svg(rows, path):
    """Two panels, resident memory and live tasks, against minutes."""
    width, height, pad = 720, 220, 50
    minutes = [r["t"] / 60 for r in rows]
    span = max(minutes[-1], 1e-9)

    def panel(key, label, scale, top):
        values = [r[key] * scale for r in rows]
        high = max(values) * 1.15 or 1
        points = " ".join(
            f"{pad + (m / span) * (width - 2 * pad):.1f},"
            f"{top + height - pad - (v / high) * (height - 2 * pad):.1f}"
            for m, v in zip(minutes, values)
        )
        base = top + height - pad
        ticks = "".join(
            f'<text x="{pad + (k / 5) * (width - 2 * pad):.0f}" y="{base + 18}" '
            f'text-anchor="middle">{span * k / 5:.0f}</text>'
            for k in range(6)
        )
        return (
            f'<text x="{pad}" y="{top + 24}" font-weight="bold">{label}</text>'
            f'<line x1="{pad}" y1="{base}" x2="{width - pad}" y2="{base}" stroke="#999"/>'
            f'<line x1="{pad}" y1="{top + pad}" x2="{pad}" y2="{base}" stroke="#999"/>'
            f'<text x="{pad - 6}" y="{top + pad + 4}" text-anchor="end">{high:.0f}</text>'
            f'<text x="{pad - 6}" y="{base}" text-anchor="end">0</text>{ticks}'
            f'<polyline fill="none" stroke="#2563eb" stroke-width="2" points="{points}"/>'
        )

    body = panel("rss_kib", "Resident memory (MiB)", 1 / 1024, 0) + panel(
        "tasks", "Tasks alive on the runtime", 1, height
    )
    with open(path, "w") as f:
        f.write(
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{2 * height + 20}" '
            f'font-family="sans-serif" font-size="12">'
            f'<rect width="100%" height="100%" fill="white"/>{body}'
            f'<text x="{width / 2}" y="{2 * height + 10}" text-anchor="middle">'
            f"minutes of soak (probe load, chaos on every dependency, drains, overrides, "
            f"mutes, event streams, a notification sink that never answers)</text></svg>\n"
        )


def hang_sink(port):
    """A webhook receiver that reads every request and never answers."""
    server = socket.create_server(("127.0.0.1", port))

    def swallow(conn):
        with conn:
            while conn.recv(65536):
                pass

    while True:
        conn, _ = server.accept()
        threading.Thread(target=swallow, args=(conn,), daemon=True).start()


def pairs(ports, count, seconds, wrk_script):
    """Probe throughput on two servers in alternation under the same chaos: `ports[0]`
    notifies a sink that never answers, `ports[1]` notifies nothing. Prints each pair's ratio."""
    stop = threading.Event()
    counters = Counters()
    for port in ports:
        for target in (chaos, operator):
            threading.Thread(target=target, args=(port, stop, counters), daemon=True).start()
    ratios = []
    print("| pair | with the hung sink (requests/s) | without (requests/s) | ratio |")
    print("|---|---|---|---|")
    for i in range(count):
        rates = {}
        order = ports if i % 2 == 0 else list(reversed(ports))
        for port in order:
            out = subprocess.run(
                ["wrk", "-t1", "-c16", f"-d{seconds}s", "-s", wrk_script,
                 f"http://127.0.0.1:{port}"], capture_output=True, text=True, check=True).stdout
            rates[port] = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
        ratio = rates[ports[0]] / rates[ports[1]]
        ratios.append(ratio)
        print(f"| {i + 1} | {rates[ports[0]]:,.0f} | {rates[ports[1]]:,.0f} | {ratio:.3f} |")
    stop.set()
    print()
    print(f"- median ratio (with / without the hung sink): {statistics.median(ratios):.3f} over "
          f"{count} pairs; range {min(ratios):.3f}-{max(ratios):.3f}")
    print(f"- 5xx answers to chaos and operator calls: {counters.snapshot()['server_errors']}")
    failed = metric_sum(ports[0], "status_notify_failed_attempts_total")
    dropped = metric_sum(ports[0], "status_notify_dropped_total")
    print(f"- the hung sink meanwhile: {failed:.0f} failed attempts, {dropped:.0f} dropped")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hang-sink", type=int, help="serve a sink that never answers")
    parser.add_argument("--pairs", type=int, help="paired throughput runs (with --ports)")
    parser.add_argument("--ports", type=int, nargs=2)
    parser.add_argument("--pair-seconds", type=int, default=10)
    parser.add_argument("--wrk-script")
    parser.add_argument("--port", type=int)
    parser.add_argument("--pid", type=int)
    parser.add_argument("--seconds", type=int)
    parser.add_argument("--csv")
    parser.add_argument("--svg")
    args = parser.parse_args()
    if args.hang_sink:
        hang_sink(args.hang_sink)
        return
    if args.pairs:
        pairs(args.ports, args.pairs, args.pair_seconds, args.wrk_script)
        return

    stop = threading.Event()
    counters = Counters()
    drivers = [threading.Thread(target=chaos, args=(args.port, stop, counters)),
               threading.Thread(target=operator, args=(args.port, stop, counters))]
    drivers += [threading.Thread(target=stream, args=(args.port, stop, counters))
                for _ in range(4)]
    for d in drivers:
        d.daemon = True
        d.start()

    rows = []
    start = time.monotonic()
    while True:
        elapsed = time.monotonic() - start
        row = {"t": round(elapsed)}
        row.update(sample(args.pid, args.port))
        row.update(counters.snapshot())
        rows.append(row)
        if elapsed >= args.seconds:
            break
        time.sleep(min(10, args.seconds - elapsed + 0.01))
    stop.set()

    keys = list(rows[0])
    with open(args.csv, "w") as f:
        f.write(",".join(keys) + "\n")
        for r in rows:
            f.write(",".join(str(r[k]) for k in keys) + "\n")
    svg(rows, args.svg)

    warm = [r for r in rows if 120 <= r["t"] < 180] or rows[: max(1, len(rows) // 5)]
    last = [r for r in rows if r["t"] >= rows[-1]["t"] - 60]
    print("| minute | resident memory | threads | descriptors | tasks alive | chaos calls | "
          "operator calls | dashboard events |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["t"] % 60 < 10:
            print(f"| {r['t'] // 60} | {r['rss_kib'] / 1024:.1f} MiB | {r['threads']} | "
                  f"{r['fds']} | {r['tasks']} | {r['chaos']} | {r['operator']} | "
                  f"{r['events']} |")
    print()
    print(f"- the sink that never answers: {rows[-1]['notify_failed']} failed attempts, "
          f"{rows[-1]['notify_dropped']} dropped, {rows[-1]['notify_queued']} waiting at the end")
    for key, label in [("rss_kib", "resident memory (KiB)"), ("tasks", "tasks alive"),
                       ("fds", "descriptors"), ("threads", "threads")]:
        a = statistics.median(r[key] for r in warm)
        b = statistics.median(r[key] for r in last)
        print(f"- {label}: median {a:.0f} after warm-up (minute 2-3), {b:.0f} in the last "
              f"minute: {100 * (b - a) / a:+.1f} %")
    print(f"- 5xx answers to chaos and operator calls: {rows[-1]['server_errors']}")


if __name__ == "__main__":
    main()
