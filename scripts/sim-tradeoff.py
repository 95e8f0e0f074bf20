#!/usr/bin/env python3
"""Success against median latency for every no-retry configuration of status-sim/results.jsonl,
the routing study's and ours, each the mean over its seeds: docs/sim-tradeoff.svg.
Standard library only (scripts/sim runs it)."""

import json
import math
import sys

STUDY = ["ideal-min-conn", "faulty-min-conn", "faulty-min-conn-hold", "random-lbs-one-pool"]
OURS = ["faulty-cascade", "faulty-cascade-spread", "faulty-p2c", "faulty-cull-min-conn",
        "faulty-cull-min-conn-ample", "hedge-ideal-min-conn", "hedge-faulty-min-conn-hold",
        "hedge-faulty-cascade"]


def main(results, out):
    runs = {}
    for line in open(results):
        row = json.loads(line)
        runs.setdefault(row["scenario"], []).append(row)
    points = []
    for names, color in [(STUDY, "#6b7280"), (OURS, "#2563eb")]:
        for name in names:
            rows = runs.get(name, [])
            if not rows:
                continue
            success = sum(r["success"] for r in rows) / len(rows)
            median = sum(r["latency"]["p50"] for r in rows) / len(rows)
            points.append((name, median, success, color))
    width, height, left, right, top, bottom = 900, 440, 70, 330, 40, 60
    lo, hi = math.log10(20), math.log10(1500)

    def x(ms):
        return left + (math.log10(ms) - lo) / (hi - lo) * (width - left - right)

    def nines(s):
        # 90 % is one nine, 99 % two, 99.9 % three; 100 % is drawn at four.
        return -math.log10(max(1.0 - s, 1e-4))

    def y(s):
        return top + (1.0 - nines(s) / 4.0) * (height - top - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-family="sans-serif" font-size="12">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="{left}" y="22" font-size="15" font-weight="600">Without retries: the '
             'share answered against the median latency (mean of seeds 1 to 5)</text>']
    for ms in [20, 50, 100, 200, 500, 1000]:
        parts.append(f'<line x1="{x(ms):.1f}" y1="{top}" x2="{x(ms):.1f}" '
                     f'y2="{height - bottom}" stroke="#eee"/>'
                     f'<text x="{x(ms):.1f}" y="{height - bottom + 16}" '
                     f'text-anchor="middle">{ms}</text>')
    for s, label in [(0.0, "0 %"), (0.5, "50 %"), (0.9, "90 %"), (0.95, "95 %"),
                     (0.99, "99 %"), (0.999, "99.9 %"), (1.0, "100 %")]:
        parts.append(f'<line x1="{left}" y1="{y(s):.1f}" x2="{width - right}" y2="{y(s):.1f}" '
                     f'stroke="#eee"/><text x="{left - 6}" y="{y(s) + 4:.1f}" '
                     f'text-anchor="end">{label}</text>')
    parts.append(f'<text x="{(left + width - right) / 2}" y="{height - 20}" '
                 'text-anchor="middle">median latency, ms (log scale); answered, in nines</text>')
    legend_x = width - right + 20
    parts.append(f'<text x="{legend_x}" y="{top}" font-weight="600">'
                 '<tspan fill="#6b7280">● the study</tspan>  '
                 '<tspan fill="#2563eb">● ours</tspan></text>')
    for i, (name, median, success, color) in enumerate(sorted(points, key=lambda p: -p[2])):
        px, py = x(median), y(success)
        n = i + 1
        parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="5" fill="{color}" '
                     f'fill-opacity="0.8"><title>{name}: {success * 100:.2f} %, '
                     f'{median:.0f} ms</title></circle>'
                     f'<text x="{px + 7:.1f}" y="{py - 5:.1f}" fill="{color}" '
                     f'font-size="10">{n}</text>'
                     f'<text x="{legend_x}" y="{top + 22 + i * 18}" fill="{color}">'
                     f'{n}. {name}: {success * 100:.2f} %, {median:.0f} ms</text>')
    parts.append('</svg>\n')
    with open(out, "w") as f:
        f.write("".join(parts))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
