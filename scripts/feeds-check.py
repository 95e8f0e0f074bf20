"""The quickstart's feeds as feedparser reads them, through an outage, an operator's update
and recovery. Usage: feeds-check.py BASE_URL ADMIN_TOKEN"""

import json
import sys
import time
import urllib.request

import feedparser

base, token = sys.argv[1], sys.argv[2]
MESSAGE = "Failing over: <b>disk</b> & 'replica' \"B\"."


def fail(why):
    print(f"feeds: {why}", file=sys.stderr)
    sys.exit(1)


def call(method, route, body=None):
    request = urllib.request.Request(
        base + route,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read(), answer.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers


def feeds():
    """Both feeds, parsed; each must be well-formed and of its kind."""
    parsed = {}
    for route, version, mime in [
        ("/history.atom", "atom10", "application/atom+xml"),
        ("/history.rss", "rss20", "application/rss+xml"),
    ]:
        status, body, headers = call("GET", route)
        if status != 200:
            fail(f"{route}: {status} {body[:200]!r}")
        if not headers["content-type"].startswith(mime):
            fail(f"{route}: content-type {headers['content-type']}")
        feed = feedparser.parse(body)
        if feed.bozo:
            fail(f"{route} is not well-formed: {feed.bozo_exception}\n{body.decode()[:2000]}")
        if feed.version != version:
            fail(f"{route}: read as {feed.version!r}, not {version}")
        parsed[route] = feed
    return parsed


def until(what, probe, seconds):
    deadline = time.monotonic() + seconds
    seen = None
    while time.monotonic() < deadline:
        ok, seen = probe()
        if ok:
            return seen
        time.sleep(0.3)
    fail(f"{what}: not within {seconds} s; last seen {seen!r}")


# The server is up, and with nothing wrong the feeds are empty but valid.
until("the server", lambda: (call("GET", "/healthcheck/live")[0] == 200, None), 60)
calm = feeds()
for route, feed in calm.items():
    if not feed.feed.get("title", "").endswith(" status"):
        fail(f"{route}: title {feed.feed.get('title')!r}")
before = len(calm["/history.atom"].entries)

# An outage of the primary database: one incident, in both feeds.
status, body, _ = call("PUT", "/demo/chaos/primary-db", {"mode": "outage"})
if status != 200:
    fail(f"chaos: {status} {body!r}")


def one_open():
    f = feeds()
    atom, rss = f["/history.atom"].entries, f["/history.rss"].entries
    ok = len(atom) == before + 1 and len(rss) == before + 1
    return ok, f


down = until("one incident in both feeds", one_open, 30)
entry = down["/history.atom"].entries[0]
item = down["/history.rss"].entries[0]
if entry.id != item.id:
    fail(f"the Atom id {entry.id!r} and the RSS guid {item.id!r} differ")
if "Investigating" not in entry.title or "Investigating" not in entry.content[0].value:
    fail(f"the opened incident: {entry.title!r} {entry.content[0].value!r}")
if "primary-db" in json.dumps([entry, item], default=str):
    fail("a dependency id reached the public feed")

# An operator's words, with markup in them, read back as the text they wrote.
# The JSON's incidents are read apart from the feeds' (each at most a second old).
incident = until(
    "the incident in unresolved.json",
    lambda: (lambda open_: (bool(open_), open_[0]["id"] if open_ else None))(
        json.loads(call("GET", "/api/v2/incidents/unresolved.json")[1])["incidents"]
    ),
    10,
)
status, body, _ = call(
    "POST",
    f"/admin/incidents/{incident}/updates",
    {"status": "identified", "message": MESSAGE, "actor": "feeds"},
)
if status != 201:
    fail(f"update: {status} {body!r}")


def updated():
    f = feeds()
    e = f["/history.atom"].entries[0]
    i = f["/history.rss"].entries[0]
    html = e.content[0].value
    ok = "Identified" in e.title and "Failing over" in html and "Failing over" in i.description
    return ok, f


shown = until("the update in both feeds", updated, 10)
e = shown["/history.atom"].entries[0]
for html in [e.content[0].value, shown["/history.rss"].entries[0].description]:
    # The operator's markup is text in the entry's HTML: escaped once, never a tag.
    if "<b>disk</b>" in html:
        fail(f"the operator's markup became HTML: {html!r}")
    if "&lt;b&gt;disk&lt;/b&gt;" not in html:
        fail(f"the operator's words are not in the entry as text: {html!r}")
if e.content[0].value.index("Identified") > e.content[0].value.index("Investigating"):
    fail("the updates are not the newest first")
if e.id != entry.id:
    fail(f"the entry's id changed between reads: {entry.id!r} then {e.id!r}")

# Recovery, then the quiet time: resolved, still one entry.
status, body, _ = call("PUT", "/demo/chaos/primary-db", {"mode": "ok"})
if status != 200:
    fail(f"chaos: {status} {body!r}")


def resolved():
    f = feeds()
    e = f["/history.atom"].entries
    return len(e) == before + 1 and "Resolved" in e[0].title, f


after = until("the incident resolved in the feeds", resolved, 60)
if after["/history.atom"].entries[0].id != entry.id:
    fail("the resolved incident has a new id")
if after["/history.rss"].entries[0].id != entry.id:
    fail("the resolved incident has a new guid")
print(f"feedparser read both feeds; incident {incident} opened, updated and resolved, one entry throughout")

# The maintenances' calendar, read by icalendar and expanded by recurring-ical-events (PyPI):
# a maintenance announced is one event with its own UID and its window; called off, it stays
# with STATUS:CANCELLED so subscribed calendars take it out.
import datetime

import icalendar
import recurring_ical_events

now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
start, end = now + datetime.timedelta(days=2), now + datetime.timedelta(days=2, hours=1)
iso = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")
status, body, _ = call("POST", "/admin/maintenances", {
    "title": "Database upgrade", "message": "Checkout may be slow; orders are kept.",
    "dependencies": ["primary-db"], "start": iso(start), "end": iso(end)})
if status != 201:
    fail(f"announce: {status} {body!r}")
maintenance = json.loads(body)["id"]


def calendar():
    status, body, headers = call("GET", "/status/maintenances.ics")
    if status != 200 or not headers["Content-Type"].startswith("text/calendar"):
        fail(f"/status/maintenances.ics: {status} {headers['Content-Type']}")
    return icalendar.Calendar.from_ical(body)


def announced():
    cal = calendar()
    events = [e for e in cal.walk("VEVENT") if str(e["SUMMARY"]) == "Database upgrade"]
    return len(events) == 1, (cal, events)


cal, events = until("the maintenance in the calendar", announced, 30)
event = events[0]
if event["DTSTART"].dt != start or event["DTEND"].dt != end:
    fail(f"the event's window: {event['DTSTART'].dt} to {event['DTEND'].dt}, not {start} to {end}")
if "orders are kept" not in str(event["DESCRIPTION"]) or str(event["STATUS"]) != "CONFIRMED":
    fail(f"the event: {event.to_ical()!r}")
uid = str(event["UID"])
occurrences = recurring_ical_events.of(cal).between(now, now + datetime.timedelta(days=90))
mine = [o for o in occurrences if str(o["UID"]) == uid]
if len(mine) != 1 or mine[0]["DTSTART"].dt != start:
    fail(f"recurring-ical-events expands {len(mine)} occurrences of it over 90 days")

status, body, _ = call("DELETE", f"/admin/maintenances/{maintenance}")
if status != 200:
    fail(f"call off: {status} {body!r}")
def called_off():
    events = [e for e in calendar().walk("VEVENT") if str(e["UID"]) == uid]
    return len(events) == 1 and str(events[0]["STATUS"]) == "CANCELLED", [e.to_ical() for e in events]


until("the maintenance called off in the calendar", called_off, 30)
print(f"icalendar read the maintenances' calendar: {uid} over its window, then cancelled; "
      f"recurring-ical-events expands it once over 90 days")
