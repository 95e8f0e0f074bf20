// The quickstart's notices as Teams and Discord receive them: each Teams body is a bare
// Adaptive Card that Microsoft's own parser (adaptivecards, npm) reads without one warning,
// and each Discord body keeps within Discord's documented embed limits and mentions no one.
// Through an outage of primary-db and its recovery.
//
// Usage: node check.js QUICKSTART_BINARY
"use strict";
const http = require("http");
const { spawn } = require("child_process");
const AC = require("adaptivecards/dist/adaptivecards.js");

const binary = process.argv[2];
const TOKEN = "chat";
const got = { teams: [], discord: [] };

function fail(why) {
  console.error(`chat-cards: FAIL: ${why}`);
  process.exit(1);
}

const receiver = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const which = req.url.slice(1);
    if (which in got) got[which].push(JSON.parse(body));
    res.writeHead(which === "discord" ? 204 : 202);
    res.end();
  });
});

function call(port, method, path, body) {
  return new Promise((resolve) => {
    const req = http.request(
      { host: "127.0.0.1", port, method, path, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve([res.statusCode, text]));
      },
    );
    req.on("error", () => resolve([0, ""]));
    if (body) req.write(JSON.stringify(body));
    req.end();
  });
}

async function until(what, done, seconds) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  fail(`${what}: not within ${seconds} s (teams ${got.teams.length}, discord ${got.discord.length})`);
}

function checkTeams(body) {
  if (body.type !== "message" || body.attachments.length !== 1) fail(`teams: not a bare message: ${JSON.stringify(body)}`);
  const attachment = body.attachments[0];
  if (attachment.contentType !== "application/vnd.microsoft.card.adaptive") fail(`teams: ${attachment.contentType}`);
  const card = new AC.AdaptiveCard();
  const context = new AC.SerializationContext();
  card.parse(attachment.content, context);
  const said = [];
  for (let i = 0; i < context.eventCount; i++) said.push(context.getEventAt(i).message);
  said.push(...card.validateProperties().validationEvents.map((e) => e.message));
  if (said.length) fail(`teams: the Adaptive Card parser says: ${said.join("; ")}`);
  if (card.getItemCount() !== 3) fail(`teams: ${card.getItemCount()} items`);
  return attachment.content.body[0];
}

function chars(s) {
  return [...(s || "")].length;
}

function checkDiscord(body) {
  const embeds = body.embeds || [];
  if (embeds.length < 1 || embeds.length > 10) fail(`discord: ${embeds.length} embeds`);
  if (!body.allowed_mentions || body.allowed_mentions.parse.length !== 0) fail("discord: it may mention");
  let total = 0;
  for (const e of embeds) {
    const fields = e.fields || [];
    if (chars(e.title) > 256 || chars(e.description) > 4096 || fields.length > 25 || chars(e.footer && e.footer.text) > 2048)
      fail(`discord: an embed past its limits: ${JSON.stringify(e)}`);
    for (const f of fields) if (chars(f.name) > 256 || chars(f.value) > 1024) fail(`discord: a field past its limits: ${JSON.stringify(f)}`);
    total += chars(e.title) + chars(e.description) + chars(e.footer && e.footer.text) + fields.reduce((n, f) => n + chars(f.name) + chars(f.value), 0);
    if (!Number.isInteger(e.color) || e.color < 0 || e.color > 0xffffff) fail(`discord: colour ${e.color}`);
    if (Number.isNaN(Date.parse(e.timestamp))) fail(`discord: timestamp ${e.timestamp}`);
  }
  if (total > 6000) fail(`discord: ${total} characters in all`);
  return embeds[0];
}

receiver.listen(0, "127.0.0.1", async () => {
  const hooks = receiver.address().port;
  const port = await new Promise((resolve) => {
    const probe = http.createServer().listen(0, "127.0.0.1", () => {
      const p = probe.address().port;
      probe.close(() => resolve(p));
    });
  });
  const server = spawn(binary, [
    "--port", String(port), "--period-ms", "200", "--no-history", "--notify-hold-s", "0",
    "--notify-teams", `http://127.0.0.1:${hooks}/teams`,
    "--notify-discord", `http://127.0.0.1:${hooks}/discord`,
  ], { env: { ...process.env, STATUS_ADMIN_TOKEN: TOKEN, RUST_LOG: "error" }, stdio: ["ignore", "ignore", "inherit"] });
  const stop = () => server.kill();
  process.on("exit", stop);
  try {
    await until("the quickstart", async () => (await call(port, "GET", "/healthcheck/live"))[0] === 200, 60);
    await call(port, "PUT", "/demo/chaos/primary-db", { mode: "outage" });
    const told = (kind, what) => got[kind].some((b) => JSON.stringify(b).includes(what));
    await until("the outage told to both", async () => told("teams", "primary-db is OUTAGE") && told("discord", "primary-db is OUTAGE"), 60);
    await call(port, "PUT", "/demo/chaos/primary-db", { mode: "ok" });
    await until("the recovery told to both", async () => told("teams", "primary-db is OK again") && told("discord", "primary-db is OK again"), 60);
    const colours = new Map();
    for (const body of got.teams) {
      const heading = checkTeams(body);
      colours.set(heading.text, heading.color);
    }
    for (const body of got.discord) checkDiscord(body);
    const outage = [...colours].find(([t]) => t.includes("primary-db is OUTAGE"));
    const recovered = [...colours].find(([t]) => t.includes("primary-db is OK again"));
    if (!outage || outage[1] !== "Attention" || !recovered || recovered[1] !== "Good")
      fail(`teams: the headings' colours: ${JSON.stringify([...colours])}`);
    const red = got.discord.find((b) => b.embeds[0].title.includes("OUTAGE")).embeds[0].color;
    const green = got.discord.find((b) => b.embeds[0].title.includes("OK again")).embeds[0].color;
    if (red === green) fail("discord: an outage and a recovery have one colour");
    console.log(`chat-cards: ${got.teams.length} Adaptive Cards read by adaptivecards without a warning, ${got.discord.length} Discord bodies within its limits`);
  } finally {
    stop();
    receiver.close();
  }
  process.exit(0);
});
