"""The quickstart's MCP server, driven by the official MCP Python SDK (`mcp` from PyPI), a
client nobody here wrote, over streamable HTTP: it lists the tools and finds none that writes,
calls `summary` and `why` during a chaos outage of primary-db and gets the root cause and what
it takes down, calls `uptime` and `incidents`, reads the resources, and is refused without a
token. Then the door holds: a wrong token, malformed JSON-RPC and an oversized body change
nothing.

Usage: mcp-check.py QUICKSTART_BINARY WORK_DIR"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import anyio
import jsonschema
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

binary, work = sys.argv[1], sys.argv[2]
ADMIN, READER = "mcp-admin", "mcp-reader"


def fail(why):
    print(f"mcp: FAIL: {why}", file=sys.stderr)
    try:
        server.terminate()
    except NameError:
        pass
    sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


port = free_port()
base = f"http://127.0.0.1:{port}"
env = dict(os.environ, STATUS_ADMIN_TOKEN=ADMIN, STATUS_MCP_TOKEN=READER, RUST_LOG="warn")
log = open(os.path.join(work, "server.log"), "w")
server = subprocess.Popen(
    [binary, "--port", str(port), "--period-ms", "200",
     "--history", os.path.join(work, "history.db"), "--incident-quiet-secs", "3"],
    env=env, stdout=log, stderr=log)


def http(method, route, body=None, headers=None):
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    request = urllib.request.Request(base + route, method=method, data=data, headers=h)
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


def client(token):
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return Client(streamable_http_client(f"{base}/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=10)))


def answer(result):
    """A tool's line and its JSON."""
    texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
    if not texts:
        fail(f"a tool answered no text: {result!r}")
    body = json.loads(texts[1]) if len(texts) > 1 else None
    return texts[0], body


SCHEMAS = {}
VALIDATED = set()


async def call(c, name, args):
    """Calls tool `name`; its structuredContent must validate against the outputSchema it
    declares (jsonschema), and its text must say the same JSON."""
    if not SCHEMAS:
        for t in (await c.list_tools()).tools:
            SCHEMAS[t.name] = t.output_schema
    result = await c.call_tool(name, args)
    if result.is_error:
        return result
    schema = SCHEMAS.get(name)
    if not schema or schema.get("type") != "object":
        fail(f"tool {name} declares no object outputSchema: {schema!r}")
    if result.structured_content is None:
        fail(f"tool {name} answered no structuredContent")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
        jsonschema.validate(result.structured_content, schema, cls=jsonschema.validators.validator_for(schema))
    except jsonschema.exceptions.ValidationError as e:
        fail(f"tool {name}'s structuredContent does not validate: {e.message} at {list(e.absolute_path)}")
    texts = [b.text for b in result.content if getattr(b, "type", "") == "text"]
    if len(texts) < 2 or json.loads(texts[1]) != result.structured_content:
        fail(f"tool {name}'s text and structuredContent differ")
    VALIDATED.add(name)
    return result


def chaos(dependency, mode):
    status, body, _ = http("PUT", f"/demo/chaos/{dependency}", {"mode": mode},
                           {"Authorization": f"Bearer {ADMIN}"})
    if status != 200:
        fail(f"chaos {dependency} {mode}: {status} {body}")


async def main():
    until("the quickstart starts", lambda: (http("GET", "/healthcheck/live")[0] == 200, None), 60)

    # Without a token, or with a wrong one: refused, and the SDK says so.
    for token in (None, "wrong"):
        try:
            async with client(token) as c:
                await c.list_tools()
            fail(f"the SDK connected with token {token!r}")
        except Exception:  # the SDK raises its own error for the 401; the raw answer is checked below
            pass
        status, body, headers = http("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                     {} if token is None else {"Authorization": f"Bearer {token}"})
        if status != 401 or "Bearer" not in headers.get("WWW-Authenticate", ""):
            fail(f"/mcp with token {token!r}: {status} {body}")
        if "primary-db" in body:
            fail(f"a refusal leaked the registry: {body}")

    async with client(READER) as c:
        tools = (await c.list_tools()).tools
        names = sorted(t.name for t in tools)
        if names != ["fleet", "incidents", "maintenances", "slos", "summary", "uptime", "why"]:
            fail(f"tools: {names}")
        for t in tools:
            a = t.annotations
            if a is None or a.read_only_hint is not True or a.destructive_hint is True:
                fail(f"tool {t.name} is not marked read-only: {a!r}")
        print(f"mcp: {len(tools)} tools, every one read-only: {', '.join(names)}")
        line, body = answer(await call(c, "summary", {}))
        if body["condition"] != "OK" and body["failing"]:
            fail(f"the quickstart starts failing: {line}")
        line, body = answer(await call(c, "slos", {}))
        if (body is None and "history" not in line) or (body is not None and not isinstance(body.get("slos"), list)):
            fail(f"slos: {line} {body}")

    # A chaos outage of primary-db, and search failing through it.
    chaos("primary-db", "outage")
    chaos("search", "error")

    async def summary_names_the_root():
        async with client(READER) as c:
            return answer(await call(c, "summary", {}))

    deadline = time.monotonic() + 30
    while True:
        line, body = await summary_names_the_root()
        roots = [r["id"] for r in body["rootCauses"]]
        failing = {f["id"]: f for f in body["failing"]}
        # Hysteresis: MINOR first, OUTAGE after consecutive failures.
        if roots == ["primary-db"] and "search" in failing and body["condition"] == "OUTAGE":
            break
        if time.monotonic() > deadline:
            fail(f"summary never named primary-db the root cause: {line} {body}")
        await anyio.sleep(0.3)
    root = body["rootCauses"][0]
    if body["condition"] != "OUTAGE" or root["level"] != "OUTAGE":
        fail(f"summary: {line}")
    if "search" not in root["takesDown"]["dependencies"]:
        fail(f"primary-db takes down no search: {root}")
    if "search-box" not in root["takesDown"]["features"]:
        fail(f"primary-db turns off no search-box: {root}")
    if "ready" not in root["takesDown"]["groups"] or body["readiness"]["ready"] is not False:
        fail(f"primary-db fails no readiness: {body['readiness']} {root}")
    if failing["search"]["rootCauses"] != ["primary-db"]:
        fail(f"search's root causes: {failing['search']}")
    if "unreachable (chaos)" in root["message"]:
        fail(f"the read-only token read a check's message: {root['message']}")
    if not line.startswith("OUTAGE:") or "root cause primary-db OUTAGE" not in line:
        fail(f"summary's line: {line}")
    print(f"mcp: summary: {line}")

    async with client(ADMIN) as c:
        line, why = answer(await call(c, "why", {"id": "search"}))
        if why["rootCauses"] != ["primary-db"] or why["causes"][0]["id"] != "primary-db":
            fail(f"why search: {line} {why}")
        if "connection reset by peer (chaos)" not in why["message"]:
            fail(f"the admin token reads search's message in full: {why['message']}")
        print(f"mcp: why: {line}")
        line, why = answer(await call(c, "why", {"id": "primary-db"}))
        if "a root cause" not in line or "search" not in [d["id"] for d in why["dependents"]]:
            fail(f"why primary-db: {line} {why}")
        if not any(t["to"] == "OUTAGE" for t in why["transitions"]):
            fail(f"why primary-db has no transition to OUTAGE: {why['transitions']}")
        print(f"mcp: why: {line}")
        unknown = await call(c, "why", {"id": "no-such-thing"})
        if not unknown.is_error or "known: " not in unknown.content[0].text:
            fail(f"why of an unknown id: {unknown!r}")

        # Uptime over the last hour shows the outage; incidents show it open.
        async def uptime_shows_it():
            line, body = answer(await call(c, "uptime", {"dependency": "primary-db", "window": "1h"}))
            return body["spentMs"]["outage"] > 0, (line, body)

        deadline = time.monotonic() + 20
        while True:
            ok, (line, body) = await uptime_shows_it()
            if ok:
                break
            if time.monotonic() > deadline:
                fail(f"uptime never showed the outage: {line} {body}")
            await anyio.sleep(0.5)
        if not (body["uptime"] is not None and body["uptime"] < 1.0):
            fail(f"uptime during an outage: {line}")
        print(f"mcp: uptime: {line}")
        deadline = time.monotonic() + 20
        while True:
            line, body = answer(await call(c, "incidents", {"days": 1}))
            open_ = [i for i in body["incidents"] if "resolved" not in i]
            if open_ and open_[0]["roots"] == ["primary-db"]:
                break
            if time.monotonic() > deadline:
                fail(f"incidents never showed primary-db's: {line} {body}")
            await anyio.sleep(0.5)
        print(f"mcp: incidents: {line}")
        refused = await call(c, "incidents", {"days": 1000})
        if not refused.is_error:
            fail(f"incidents over 1000 days: {refused!r}")
        fleet = await call(c, "fleet", {})
        if not fleet.is_error or "no fleet view" not in fleet.content[0].text:
            fail(f"fleet without a fleet: {fleet!r}")

        resources = (await c.list_resources()).resources
        uris = {str(r.uri) for r in resources}
        if "status://summary" not in uris or "status://dependencies/primary-db" not in uris:
            fail(f"resources: {sorted(uris)}")
        read = await c.read_resource("status://dependencies/search")
        if json.loads(read.contents[0].text)["rootCauses"] != ["primary-db"]:
            fail(f"resource of search: {read!r}")

    # Malformed JSON-RPC and an oversized body: refused, nothing changed.
    headers = {"Authorization": f"Bearer {ADMIN}", "Accept": "application/json, text/event-stream"}
    status, body, _ = http("POST", "/mcp", b"{not json", headers)
    if status != 400 or json.loads(body)["error"]["code"] != -32700:
        fail(f"malformed JSON is not JSON-RPC's parse error: {status} {body}")
    status, body, _ = http("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                           {**headers, "MCP-Protocol-Version": "1999-01-01"})
    if status != 400 or "1999-01-01" in body and "primary-db" in body:
        fail(f"an unsupported MCP-Protocol-Version is not refused: {status} {body}")
    status, body, _ = http("POST", "/mcp", b"x" * 200_000, headers)
    if status != 413:
        fail(f"an oversized body: {status} {body}")
    status, body, _ = http("GET", "/demo/chaos", None, {"Authorization": f"Bearer {ADMIN}"})
    if json.loads(body)["primary-db"]["mode"] != "outage":
        fail(f"an MCP call changed the chaos: {body}")
    status, metrics, _ = http("GET", "/metrics")
    for outcome in ("answered", "unauthorized"):
        line = next((l for l in metrics.splitlines()
                     if l.startswith(f'status_mcp_requests_total{{outcome="{outcome}"}}')), None)
        if line is None or float(line.split()[-1]) < 1:
            fail(f"/metrics counts no {outcome} MCP request: {line}")

    # The prompts: triage names the root cause and the tools in order; explain takes an id.
    async with client(READER) as c:
        prompts = sorted(p.name for p in (await c.list_prompts()).prompts)
        if prompts != ["explain", "triage"]:
            fail(f"prompts: {prompts}")
        triage = (await c.get_prompt("triage")).messages[0].content.text
        for said in ("primary-db", "`summary`", "`why`", "Read only"):
            if said not in triage:
                fail(f"the triage prompt does not say {said}: {triage}")
        explain = (await c.get_prompt("explain", {"id": "search"})).messages[0].content.text
        if "`why` with id search" not in explain or "`uptime`" not in explain:
            fail(f"the explain prompt: {explain}")
        try:
            await c.get_prompt("explain", {"id": "no-such-thing"})
            fail("explain took an unknown id")
        except Exception as e:  # the SDK raises the server's JSON-RPC error
            if "no-such-thing" not in str(e) and "known" not in str(e):
                fail(f"explain of an unknown id: {e}")
    print(f"mcp: prompts: {', '.join(prompts)}")

    # A maintenance announced now: in progress, and who announced it for the admin token only.
    now = time.time()
    iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
    status, body, _ = http("POST", "/admin/maintenances", {
        "title": "Search reindex", "message": "Search may lag.", "dependencies": ["search"],
        "start": iso(now), "end": iso(now + 600), "actor": "ana"}, {"Authorization": f"Bearer {ADMIN}"})
    if status != 201:
        fail(f"announce: {status} {body}")
    for token, sees_actor in ((READER, False), (ADMIN, True)):
        async with client(token) as c:
            line, body = answer(await call(c, "maintenances", {}))
        shown = [m for m in body["maintenances"] if m["title"] == "Search reindex"]
        if body["inProgress"] < 1 or not shown or shown[0]["status"] != "in_progress" or "in progress: Search reindex" not in line:
            fail(f"maintenances: {line} {body}")
        if ("actor" in shown[0]) != sees_actor:
            fail(f"maintenances' actor for {'the admin' if sees_actor else 'a read-only'} token: {shown[0]}")
    print(f"mcp: maintenances: {line}")
    if VALIDATED != {"summary", "why", "uptime", "slos", "incidents", "maintenances"}:
        fail(f"structured answers validated for {sorted(VALIDATED)} only")
    print(f"mcp: every answer's structuredContent validated against its outputSchema: {', '.join(sorted(VALIDATED))}")

    chaos("primary-db", "ok")
    chaos("search", "ok")
    print("mcp: all checks passed")


try:
    anyio.run(main)
finally:
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
