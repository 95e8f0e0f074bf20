"""The checker of scripts/partition: reads a recorded history (one JSON event a line) and
asserts the fleet's and the cull budget's invariants over all of it, then prints a table of
faults and outcomes and, if asked, draws the timeline as an SVG.

The invariants, with TTL the fleet's, a beat a third of it, and δ the recorder's slack (its
100 ms period and the time its requests take):
  I1 records   a record the store hands out as fresh says the condition its instance had
               when it beat: its own summary, read by the recorder, within one beat of the
               record's age (etcd keeps no age: within its lease, twice across a new leader).
  I2 counts    a view that says it is fresh counts, in each data center, every instance that
               could beat throughout the last two TTLs (the view is at most a TTL old, and
               counts records at most a TTL old), and none that could not (on etcd, across a
               new leader, which extends every lease, a lease and an election longer).
  I3 culls     no instance culls itself without a grant of the budget, naming it: seen in the
               store, or (a store restarted empty just after, before the recorder's next
               read) named by its culler ("budget token N"), and then counted in I4 too.
  I4 capacity  at most `capacity` grants in any window of the budget's length (by the store's
               clock), across a store restarted empty as well: a budget its store does not
               know grants nothing for one window.
  I5 fail-open a view fails open for staleness only after three TTLs without a read: never
               within two TTLs of a fresh view, nor within three of its start.
  I6 recovery  within two TTLs of a fault healing, every instance's view is fresh again and
               counts every instance that lived through it."""

import bisect
import json
import sys
from collections import defaultdict

SLACK = 0.35


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class History:
    def __init__(self, events):
        self.events = events
        config = next(e for e in events if e["kind"] == "config")
        self.config = config
        self.ttl = config["ttl_ms"] / 1000
        self.beat = self.ttl / 3
        self.end = max(e["t"] for e in events)
        self.samples = defaultdict(list)  # id -> [sample]
        self.pages = []
        self.own = defaultdict(list)  # id -> [(t, condition)]
        self.lives = {}  # id -> [start, end, slot, datacenter]
        self.faults = []  # {kind, targets, t, healed}
        self.grants = []
        self.culls = []  # (t, id)
        self.said = {}  # id -> what its culler said when it was seen culled
        open_faults = []
        for e in events:
            kind = e["kind"]
            if kind == "sample":
                self.samples[e["id"]].append(e)
                if e.get("own"):
                    self.own[e["id"]].append((e["t0"], e["own"]))
            elif kind == "page":
                self.pages.append(e)
            elif kind == "started":
                self.lives[e["id"]] = [e["t"], None, e["slot"], e["datacenter"]]
            elif kind == "culled":
                self.culls.append((e["t"], e["id"]))
                self.said[e["id"]] = e.get("said") or ""
                if e["id"] in self.lives:
                    self.lives[e["id"]][1] = e["t"]
            elif kind == "grant":
                self.grants.append(e)
            elif kind == "fault":
                fault = {"kind": e["name"], "targets": e["targets"], "t": e["t"], "healed": None}
                self.faults.append(fault)
                open_faults.append(fault)
            elif kind == "applied" and open_faults:
                # The targets the nemesis chose as it applied (the store's leader, then).
                open_faults[-1]["targets"] = e["targets"]
            elif kind == "heal":
                for fault in open_faults:
                    if fault["healed"] is None:
                        fault["healed"] = e["t"]
                open_faults = [f for f in open_faults if f["healed"] is None]
        for fault in self.faults:
            if fault["healed"] is None:
                fault["healed"] = self.end
        for life in self.lives.values():
            if life[1] is None:
                life[1] = self.end
        self.own_times = {k: [t for t, _ in v] for k, v in self.own.items()}

    def slot_ids(self, slot, start, end):
        return [i for i, (a, b, s, _) in self.lives.items() if s == slot and a <= end and b >= start]

    def spans(self, ident):
        """When `ident` surely could not beat (`hard`: not started or gone, partitioned from
        the store, paused, the one Redis cut or down), and when it may not have (`soft`: a
        lossy store, the leader of etcd or a master of a Redis Cluster cut, which fail over)."""
        life = self.lives.get(ident)
        if life is None:
            return [(0, self.end)], []
        # A process may beat before the recorder saw it listen, and a culled one beats until
        # it is killed, just after the cull was seen.
        hard, soft = [(-1, life[0] - SLACK), (life[1] + SLACK, self.end + 1)], []
        slot = life[2]
        # A store of several members fails over: a cut leader is replaced.
        alone = self.config["store"] == "redis"
        for fault in self.faults:
            kind, span = fault["kind"], (fault["t"], fault["healed"])
            if kind in ("partition-one", "partition-minority", "pause"):
                if slot in fault["targets"]:
                    hard.append(span)
            elif kind == "store-restart" or (kind == "partition-store" and alone):
                hard.append(span)
            elif kind in ("lossy", "partition-store"):
                soft.append(span)
        return hard, soft

    def could_not(self, ident, start, end):
        """Whether `ident` surely could not beat at any time in [start, end]."""
        hard, _ = self.spans(ident)
        # A fault is recorded as the nemesis starts applying it and healed as it is done
        # healing: it may bite later and let go earlier than recorded (a beat can go through
        # within milliseconds of a heal). Narrower, so that "could not" is sure.
        life = self.lives.get(ident)
        lived = set(((-1, life[0] - SLACK), (life[1] + SLACK, self.end + 1))) if life else set()
        hard = [span if span in lived else (span[0] + 0.15, span[1] - 0.15) for span in hard]
        reach = start
        for a, b in sorted(hard):
            if a <= reach + 0.05:
                reach = max(reach, b)
        return reach >= end - 0.05

    def could_all_along(self, ident, start, end):
        """Whether `ident` surely could beat throughout [start, end] (a beat after a fault
        healed included: it beats again on its next tick)."""
        hard, soft = self.spans(ident)
        return not any(a < end and b + self.beat + SLACK > start for a, b in hard + soft)

    def wrong(self, ident, condition, start, end):
        """The condition `ident` held all through [start, end] if it is not `condition`:
        its own samples cover the span densely (none more than 0.4 s apart, one at or before
        `start`, one at or after `end`) and all say the same. `None` when they change (a
        transient between two samples may have been anything) or do not cover it."""
        times = self.own_times.get(ident, [])
        lo = bisect.bisect_right(times, start) - 1
        hi = bisect.bisect_left(times, end)
        if lo < 0 or hi >= len(times):
            return None
        window = self.own[ident][lo:hi + 1]
        if any(b[0] - a[0] > 0.4 for a, b in zip(window, window[1:])):
            return None
        said = {c for _, c in window}
        if len(said) == 1 and condition not in said:
            return said.pop()
        return None


# The election timeout scripts/partition gives etcd (--election-timeout 1000).
ELECTION = 1.0


def leader_changed(h, start, end):
    """Whether etcd may have elected a new leader between `start` (less a lease and an
    election) and `end`: a fault that cuts, slows or restarts the store began before `end`
    and healed after that."""
    if h.config["store"] != "etcd":
        return False
    lease = -(-h.config["ttl_ms"] // 1000)
    since = start - lease - ELECTION
    return any(f["kind"] in ("partition-store", "lossy", "store-restart")
               and f["t"] <= end and f["healed"] + ELECTION >= since for f in h.faults)


def check(h):
    violations = defaultdict(list)
    ttl, beat = h.ttl, h.beat
    lease = -(-h.config["ttl_ms"] // 1000)
    stats = {"samples": 0, "records": 0, "fresh_views": 0, "culls": len(h.culls),
             "grants": len(h.grants), "told": 0}
    datacenters = sorted(set(h.config["datacenters"].values()))

    for ident, samples in h.samples.items():
        life = h.lives.get(ident, [0, h.end, None, None])
        last_fresh = None
        for s in samples:
            stats["samples"] += 1
            # The view was read while the data centers' endpoints were asked.
            asked, t = s["tf"]
            view = s.get("view")
            if view is None:
                continue
            if not view["stale"]:
                stats["fresh_views"] += 1
                last_fresh = t
                # I2: the counts are those who could beat. On etcd, a new leader extends
                # every lease by its TTL and the election timeout (etcd's lessor.Promote): an
                # instance gone just before a leader change lives on in the store that long,
                # and is counted (the store's truth, as I1 allows its record).
                start = asked - 2 * ttl - SLACK
                extended = start - beat - (lease + ELECTION if leader_changed(h, start, t) else 0)
                for dc in datacenters:
                    ids = [i for i, l in h.lives.items() if l[3] == dc]
                    surely = sum(1 for i in ids if h.could_all_along(i, start, t))
                    maybe = sum(1 for i in ids if not h.could_not(i, extended, t))
                    fresh = view["dcs"].get(dc, [0])[0]
                    if not surely <= fresh <= maybe:
                        violations["I2 counts"].append(
                            f"{t:.1f}s {ident} counts {fresh} fresh in {dc}, "
                            f"expected {surely} to {maybe}")
            elif view["failOpen"] and any(d[2] for d in view["dcs"].values()):
                # (A view whose data centers are all unhealthy fails open by the rule.)
                # I5: failing open for staleness waits three TTLs without a read.
                since = last_fresh if last_fresh is not None else life[0]
                need = 2 * ttl if last_fresh is not None else 3 * ttl
                if t - since < need - SLACK:
                    violations["I5 fail-open"].append(
                        f"{t:.1f}s {ident} failed open {t - since:.1f}s after "
                        f"{'its last fresh view' if last_fresh is not None else 'its start'}")

    # I1: every fresh record says what its instance said of itself when it beat. etcd keeps
    # no beat time (its age is 0): a record lives while its lease does, up to the TTL in whole
    # seconds after the last keep-alive, and twice that across a new leader (which extends
    # every lease), so it may say what its instance said that long ago.
    ageless = 2 * lease if h.config["store"] == "etcd" else 0
    for page in h.pages:
        asked, t = page["tf"]
        for rid, condition, age_ms, stale in page["records"]:
            if stale:
                continue
            stats["records"] += 1
            # Written `age_ms` before the page was served: ages count from when the store was
            # asked, so they are over by the store's answer time (up to a TTL, its timeout),
            # and a page is kept for a beat.
            said = h.wrong(rid, condition, asked - age_ms / 1000 - beat - ageless - SLACK,
                           t - age_ms / 1000 + ttl + SLACK)
            if said is not None:
                violations["I1 records"].append(
                    f"{t:.1f}s {page['id']} read {rid} {condition} ({age_ms} ms old), "
                    f"which said {said} all along then")

    # I3: a cull has a grant naming the instance, seen by then.
    granted = defaultdict(list)
    for g in h.grants:
        granted[g["instance"]].append(g["t"])
    restarts = [f["t"] for f in h.faults if f["kind"] == "store-restart"]
    told = []
    for t, ident in h.culls:
        before = [g for g in granted[ident] if g <= t + SLACK]
        if before:
            continue
        # The recorder reads the grants every 100 ms: a store emptied just after a grant
        # takes it before it is seen. The culler still names its token: a grant, told by the
        # culler, and counted against the capacity like any other.
        said = h.said.get(ident, "")
        if "budget token" in said and any(t - 2 <= r <= t + SLACK for r in restarts):
            told.append({"t": t, "instance": ident, "server_ms": None})
        else:
            violations["I3 culls"].append(f"{t:.1f}s {ident} culled itself with no grant seen")

    # I4: capacity in any window, by the store's clock where it has one.
    capacity, window = h.config["capacity"], h.config["window_ms"] / 1000
    # Redis stamps its grants by its own clock; etcd's are dated when first seen (later than
    # granted by up to the recorder's period, so the window is shortened by the slack).
    stats["told"] = len(told)
    grants = h.grants + told
    by_server = bool(grants) and all(g["server_ms"] is not None for g in grants)
    stamped = sorted((g["server_ms"] / 1000 if by_server else g["t"], g["t"]) for g in grants)
    within = window if by_server else window - SLACK
    for k, (at, seen) in enumerate(stamped):
        inside = [x for x in stamped[k:] if x[0] < at + within]
        if len(inside) > capacity:
            violations["I4 capacity"].append(
                f"{len(inside)} grants within {window:.0f}s from {seen:.1f}s (capacity {capacity})")

    # I6: recovery within two TTLs of a heal.
    outcomes = []
    for fault in h.faults:
        healed = fault["healed"]
        deadline = healed + 2 * ttl
        nxt = min([f["t"] for f in h.faults if f["t"] > healed] + [h.end])
        lived = [i for i, l in h.lives.items() if l[0] <= healed and l[1] >= min(deadline + SLACK, nxt)]
        expected = defaultdict(int)
        for i in lived:
            expected[h.lives[i][3]] += 1
        recovered = []
        for i in lived:
            first = next((s["tf"][1] for s in h.samples.get(i, [])
                          if s["tf"][0] >= healed and s.get("view") and not s["view"]["stale"]
                          and all(s["view"]["dcs"].get(dc, [0])[0] >= n for dc, n in expected.items())),
                         None)
            recovered.append(first - healed if first is not None else None)
        worst = None if not recovered or None in recovered else max(recovered)
        if worst is None or worst > 2 * ttl + SLACK:
            if nxt - healed >= 2 * ttl + SLACK:
                violations["I6 recovery"].append(
                    f"{fault['kind']} healed at {healed:.1f}s: "
                    + ("some view never recovered" if worst is None else f"recovered in {worst:.1f}s"))
        # The instances whose view went stale, and failed open, from the fault to two TTLs
        # after it healed.
        stale = len({i for i, ss in h.samples.items() for s in ss
                     if fault["t"] <= s["tf"][0] <= deadline and s.get("view") and s["view"]["stale"]})
        opened = len({i for i, ss in h.samples.items() for s in ss
                      if fault["t"] <= s["tf"][0] <= deadline and s.get("view")
                      and s["view"]["stale"] and s["view"]["failOpen"]})
        culls = sum(1 for t, _ in h.culls if fault["t"] <= t <= deadline)
        outcomes.append({"fault": fault, "stale": stale, "opened": opened, "culls": culls,
                         "recovered": worst})
    return violations, stats, outcomes


def table(h, violations, stats, outcomes):
    lines = [f"store {h.config['store']}, seed {h.config['seed']}, TTL {h.ttl * 1000:.0f} ms, "
             f"{h.end:.0f} s: {stats['samples']} samples, {stats['fresh_views']} fresh views, "
             f"{stats['records']} fresh records, {stats['culls']} culls, {stats['grants']} grants"
             + (f" (and {stats['told']} told by a culler only)" if stats["told"] else ""),
             "",
             "| fault | targets | at | lasted | views stale | failing open | culls | recovered in |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for o in outcomes:
        f = o["fault"]
        rec = "never" if o["recovered"] is None else f"{o['recovered']:.2f} s"
        lines.append(f"| {f['kind']} | {' '.join(f['targets']) or 'all'} | {f['t']:.1f} s | "
                     f"{f['healed'] - f['t']:.1f} s | {o['stale']} | {o['opened']} | {o['culls']} | {rec} |")
    lines.append("")
    names = ["I1 records", "I2 counts", "I3 culls", "I4 capacity", "I5 fail-open", "I6 recovery"]
    for name in names:
        found = violations.get(name, [])
        verdict = f"{len(found)} VIOLATED" if found else "ok"
        lines.append(f"{name:13} {verdict}")
        for v in found[:5]:
            lines.append(f"    {v}")
    return "\n".join(lines)


def draw(h, outcomes, path):
    """A row an instance slot: each sample a tick coloured by what its view said (fresh,
    stale, failing open, no answer); the faults as bands; culls and grants as marks."""
    slots = sorted({l[2] for l in h.lives.values()})
    left, top, row, width = 90, 58, 26, 900
    scale = width / max(h.end, 1)
    height = top + row * len(slots) + 70
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="16" font-size="13">The fleet under faults: {h.config["store"]}, '
           f'seed {h.config["seed"]}, TTL {h.ttl * 1000:.0f} ms</text>']
    for o in outcomes:
        f = o["fault"]
        x = left + f["t"] * scale
        w = max((f["healed"] - f["t"]) * scale, 2)
        out.append(f'<rect x="{x:.1f}" y="{top - 8}" width="{w:.1f}" height="{row * len(slots) + 8}" '
                   'fill="#c7d7f0" opacity="0.6"/>')
        out.append(f'<text x="{x:.1f}" y="{top - 10}" font-size="9" '
                   f'transform="rotate(-20 {x:.1f} {top - 10})">{f["kind"]}</text>')
    colours = {"fresh": "#3a9a4a", "stale": "#e0a020", "open": "#d03030", "none": "#999999"}
    for k, slot in enumerate(slots):
        y = top + k * row
        out.append(f'<text x="{left - 8}" y="{y + row / 2 + 4}" text-anchor="end">{slot}</text>')
        for ident, (a, b, s, dc) in h.lives.items():
            if s != slot:
                continue
            # Runs of samples in one state, one rectangle each.
            runs = []
            for sample in h.samples.get(ident, []):
                view = sample.get("view")
                state = ("none" if view is None else "fresh" if not view["stale"]
                         else "open" if view["failOpen"] else "stale")
                at = sample["t0"]
                if runs and runs[-1][0] == state and at - runs[-1][2] < 0.35:
                    runs[-1][2] = at
                else:
                    runs.append([state, at, at])
            for state, a, b in runs:
                x = left + a * scale
                w = max((b - a + 0.1) * scale, 1)
                out.append(f'<rect x="{x:.1f}" y="{y + 4}" width="{w:.1f}" '
                           f'height="{row - 10}" fill="{colours[state]}"/>')
        for t, ident in h.culls:
            if h.lives.get(ident, [0, 0, None])[2] == slot:
                x = left + t * scale
                out.append(f'<text x="{x:.1f}" y="{y + row / 2 + 4}" text-anchor="middle" '
                           'font-weight="bold">×</text>')
    y = top + row * len(slots) + 14
    for g in h.grants:
        x = left + g["t"] * scale
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 10}" y2="{y}" stroke="black"/>')
    out.append(f'<text x="{left - 8}" y="{y}" text-anchor="end">grants</text>')
    legend = [("fresh view", "fresh"), ("stale", "stale"), ("stale, failing open", "open"),
              ("no answer", "none")]
    x = left
    for label, key in legend:
        out.append(f'<rect x="{x}" y="{y + 18}" width="10" height="10" fill="{colours[key]}"/>')
        out.append(f'<text x="{x + 14}" y="{y + 27}">{label}</text>')
        x += 130
    out.append(f'<text x="{x}" y="{y + 27}">× a cull; bands: faults; seconds 0 to {h.end:.0f}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main(path, svg=None):
    h = History(load(path))
    violations, stats, outcomes = check(h)
    print(table(h, violations, stats, outcomes))
    if svg:
        draw(h, outcomes, svg)
        print(f"drew {svg}")
    return 1 if any(violations.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
