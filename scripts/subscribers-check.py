"""The status page's subscribers, end to end, against a real SMTP server (aiosmtpd) and a
real webhook receiver: subscribe, confirm, an outage of primary-db, an operator's update,
recovery, a postmortem and a one-click unsubscribe, counting exactly one message per event
per confirmed subscriber and none to the unconfirmed or the unsubscribed; then a flood from
one address stays bounded.

Usage: subscribers-check.py QUICKSTART_BINARY WORK_DIR"""

import email
import email.policy
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller

binary, work = sys.argv[1], sys.argv[2]
TOKEN = "subscribers"
failures = []


def fail(why):
    print(f"subscribers: FAIL: {why}", file=sys.stderr)
    sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


mails = []
mails_lock = threading.Lock()


class Mailbox:
    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with mails_lock:
            mails.append((list(envelope.rcpt_tos), message))
        return "250 OK"


hooks = []
challenges = []


class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"] or 0)))
        answer = b""
        if body.get("type") == "url_verification":
            # Slack's way: the challenge's value, as plain text.
            challenges.append(body)
            answer = body["challenge"].encode()
        else:
            hooks.append(body)
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


smtp_port, hook_port, port = free_port(), free_port(), free_port()
smtp = Controller(Mailbox(), hostname="127.0.0.1", port=smtp_port)
smtp.start()
hook_server = ThreadingHTTPServer(("127.0.0.1", hook_port), Hook)
threading.Thread(target=hook_server.serve_forever, daemon=True).start()

base = f"http://127.0.0.1:{port}"
env = dict(os.environ, STATUS_ADMIN_TOKEN=TOKEN, RUST_LOG="warn",
           STATUS_SUBSCRIPTIONS_SECRET="a secret of at least thirty-two bytes, for the test")
log = open(os.path.join(work, "server.log"), "w")
server = subprocess.Popen(
    [binary, "--port", str(port), "--period-ms", "200",
     "--history", os.path.join(work, "history.db"),
     "--incident-quiet-secs", "3", "--incident-public-after-secs", "0",
     "--smtp", f"smtp://127.0.0.1:{smtp_port}", "--mail-from", "status@quickstart.example",
     "--subscriber-webhooks-allow-private"],
    env=env, stdout=log, stderr=log)


def call(method, route, body=None, headers=None, raw=None):
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    h = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    h.update(headers or {})
    request = urllib.request.Request(route if route.startswith("http") else base + route,
                                     method=method, data=data, headers=h)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode(), answer.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers
    except urllib.error.URLError as e:
        return 0, str(e), {}


def until(what, probe, seconds):
    deadline = time.monotonic() + seconds
    seen = None
    while time.monotonic() < deadline:
        ok, seen = probe()
        if ok:
            return seen
        time.sleep(0.3)
    fail(f"{what}: not within {seconds} s; last seen {seen!r}")


def mails_to(address):
    with mails_lock:
        return [m for (to, m) in mails if address in to]


def text(message):
    return message.get_body(preferencelist=("plain",)).get_content()


try:
    until("the server", lambda: (call("GET", "/healthcheck/live")[0] == 200, None), 60)

    # Ana subscribes by JSON; Bob by the page's form, and never confirms.
    status, body, _ = call("POST", "/status/page/subscriptions", {"email": "Ana@Example.com"})
    if status != 202:
        fail(f"ana: {status} {body}")
    status, body, _ = call("POST", "/status/page/subscriptions?lang=de",
                           raw=b"email=bob%40example.com",
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
    if status != 202 or "<html" not in body:
        fail(f"bob: {status} {body}")
    confirm = until("ana's confirmation", lambda: (len(mails_to("ana@example.com")) == 1,
                                                   mails_to("ana@example.com")), 30)[0]
    until("bob's confirmation", lambda: (len(mails_to("bob@example.com")) == 1, None), 30)
    if "Bestätigen" not in mails_to("bob@example.com")[0]["subject"]:
        fail(f"bob asked in German: {mails_to('bob@example.com')[0]['subject']}")
    link = re.search(r"(http://\S+/subscriptions/confirm\?token=\S+)", text(confirm))
    if not link:
        fail(f"no confirmation link: {text(confirm)}")

    # Asked again within the cooldown: the same answer as anyone's, and nothing sent again.
    status, body, headers = call("POST", "/status/page/subscriptions", {"email": "ana@example.com"})
    if status != 202 or headers.get("Retry-After"):
        fail(f"a second ask within the cooldown: {status} {body}")

    # A webhook answers its challenge, and is confirmed.
    status, body, _ = call("POST", "/status/page/subscriptions",
                           {"webhook": f"http://127.0.0.1:{hook_port}/hook"})
    if status != 202:
        fail(f"webhook: {status} {body}")
    challenge = until("the webhook's challenge", lambda: (len(challenges) == 1, challenges), 30)[0]
    hook_unsubscribe = challenge["meta"]["unsubscribe"]

    def hook_confirmed():
        listed = json.loads(call("GET", "/admin/subscribers")[1])["subscribers"]
        return any(s["kind"] == "webhook" and s["confirmed"] for s in listed), listed
    until("the webhook confirmed by its answer", hook_confirmed, 30)

    # The link opens a page whose button confirms: a link scanner's GET confirms no one.
    status, body, _ = call("GET", link.group(1))
    if status != 200 or '<form method="post"' not in body:
        fail(f"the confirmation link's page: {status} {body}")
    status, body, _ = call("POST", link.group(1))
    if status != 200:
        fail(f"confirm: {status} {body}")
    forged = re.sub(r"token=[0-9a-f]+", "token=" + "0" * 64, link.group(1))
    status, body, _ = call("POST", forged)
    if status != 404:
        fail(f"a forged token: {status}")
    if len(mails_to("ana@example.com")) != 1:
        fail(f"the cooldown's ask sent a mail: {len(mails_to('ana@example.com'))}")

    def events(address, n, what):
        # Ana's mails after her confirmation, and the webhook's posts.
        until(what, lambda: (len(mails_to(address)) == n + 1 and len(hooks) == n,
                             (len(mails_to(address)) - 1, len(hooks))), 40)

    # The outage: one message each.
    call("PUT", "/demo/chaos/primary-db", {"mode": "outage"})
    events("ana@example.com", 1, "the outage told once to each")
    opened = mails_to("ana@example.com")[1]
    if "Outage of Online shop" not in opened["subject"]:
        fail(f"the outage's subject: {opened['subject']}")
    ids = [m["Message-ID"] for m in mails_to("ana@example.com")]
    if not all(i and i.endswith("@quickstart.example>") for i in ids) or len(set(ids)) != len(ids):
        fail(f"each mail its own Message-ID at the sender's domain: {ids}")
    if opened["List-Unsubscribe-Post"] != "List-Unsubscribe=One-Click":
        fail(f"no one-click unsubscription: {dict(opened)}")
    unsubscribe = opened["List-Unsubscribe"].strip("<>")
    if "unsubscribe?token=" not in unsubscribe or "unsubscribe?token=" not in text(opened):
        fail(f"no unsubscribe link: {unsubscribe!r} / {text(opened)}")
    if hooks[0]["incident"]["status"] != "investigating" or hooks[0]["page"]["status_indicator"] != "critical":
        fail(f"the webhook's first post: {hooks[0]}")
    if "primary-db" in json.dumps(hooks[0]) or "primary-db" in text(opened):
        fail("a dependency id reached a subscriber")
    incident = hooks[0]["incident"]["id"]

    # An operator's update.
    status, body, _ = call("POST", f"/admin/incidents/{incident}/updates",
                           {"status": "identified", "message": "The primary lost its disk.", "actor": "ops"})
    if status != 201:
        fail(f"update: {status} {body}")
    events("ana@example.com", 2, "the update told once to each")
    if "The primary lost its disk." not in text(mails_to("ana@example.com")[2]):
        fail("the operator's words are not in the mail")

    # Recovery, resolved after the quiet time.
    call("PUT", "/demo/chaos/primary-db", {"mode": "ok"})
    events("ana@example.com", 3, "the resolution told once to each")
    if hooks[2]["incident"]["status"] != "resolved":
        fail(f"the resolution's post: {hooks[2]['incident']['status']}")

    # The postmortem.
    status, body, _ = call("PUT", f"/admin/incidents/{incident}/postmortem",
                           {"body": "The disk filled.\n\nWe now alert at 80 %."})
    if status != 200:
        fail(f"postmortem: {status} {body}")
    events("ana@example.com", 4, "the postmortem told once to each")
    if "We now alert at 80 %." not in text(mails_to("ana@example.com")[4]):
        fail("the postmortem is not in the mail")

    # A maintenance announced, starting now: its announcement and its start, told once each.
    now = time.time()
    iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
    status, body, _ = call("POST", "/admin/maintenances", {
        "title": "Database upgrade", "message": "Checkout may be slow.",
        "dependencies": ["primary-db"], "start": iso(now), "end": iso(now + 600)})
    if status != 201:
        fail(f"announce: {status} {body}")
    events("ana@example.com", 6, "the maintenance's announcement and start told once to each")
    subjects = sorted(m["subject"] for m in mails_to("ana@example.com")[5:7])
    if not all("Database upgrade" in s for s in subjects):
        fail(f"the maintenance's mails: {subjects}")
    maintenance = json.loads(body)["id"]
    call("DELETE", f"/admin/maintenances/{maintenance}")
    # Called off: told once to each, as such.
    events("ana@example.com", 7, "the maintenance called off told once to each")
    called_off = mails_to("ana@example.com")[7]["subject"]
    if "Called off" not in called_off or "Database upgrade" not in called_off:
        fail(f"the maintenance called off: {called_off}")

    # One click: Ana is out; the next outage reaches the webhook only.
    status, body, _ = call("POST", unsubscribe, raw=b"List-Unsubscribe=One-Click",
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
    if status != 200:
        fail(f"one-click unsubscribe: {status} {body}")
    call("PUT", "/demo/chaos/primary-db", {"mode": "outage"})
    until("the next outage at the webhook", lambda: (len(hooks) == 8, len(hooks)), 40)
    time.sleep(6)
    if len(mails_to("ana@example.com")) != 8:
        fail(f"ana got {len(mails_to('ana@example.com'))} mails after unsubscribing, not 8")
    if len(mails_to("bob@example.com")) != 1:
        fail(f"bob, unconfirmed, got {len(mails_to('bob@example.com'))} mails")
    if len(hooks) != 8:
        fail(f"the webhook got {len(hooks)} posts, not 8 (one per event)")
    status, _, _ = call("GET", hook_unsubscribe)
    if status != 200 or not json.loads(call("GET", "/admin/subscribers")[1])["subscribers"]:
        fail(f"the webhook's unsubscribe link, opened: {status}, or it unsubscribed")
    status, _, _ = call("POST", hook_unsubscribe)
    listed = json.loads(call("GET", "/admin/subscribers")[1])["subscribers"]
    if status != 200 or any(s["kind"] == "webhook" for s in listed):
        fail(f"the webhook's unsubscribe button: {status}, {listed}")

    # A flood from one address: bounded, with Retry-After; the mail sent stays bounded too.
    answers = [call("POST", "/status/page/subscriptions", {"email": f"flood{i}@example.com"})
               for i in range(60)]
    taken = sum(1 for s, _, _ in answers if s == 202)
    refused = [(s, h.get("Retry-After")) for s, _, h in answers if s == 429]
    if taken > 35 or not refused or any(not r for _, r in refused):
        fail(f"a flood of 60: {taken} taken, {len(refused)} refused")
    time.sleep(3)
    with mails_lock:
        flood_mails = sum(1 for (to, _) in mails if any(t.startswith("flood") for t in to))
    if flood_mails != taken:
        fail(f"{flood_mails} confirmation mails for {taken} subscriptions taken")
    print(f"subscribers: 7 events, one message each to the confirmed (mail and webhook), none to "
          f"the unconfirmed or the unsubscribed; a flood of 60: {taken} taken, {len(refused)} refused")
finally:
    server.terminate()
    server.wait()
    smtp.stop()
    hook_server.shutdown()
