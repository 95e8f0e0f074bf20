// The quickstart's Statuspage v2 JSON read by `statuspage.io` (npm), a client written for
// Atlassian Statuspage's public API: its own endpoints fetch each document, and each answer
// is checked against the types the client declares (its Result.d.ts, turned into JSON Schema
// by ts-json-schema-generator, checked by ajv). Then a chaos outage opens one incident, an
// operator's update shows, and recovery resolves it after the quiet time.
//
// Usage: node check.js BASE_URL ADMIN_TOKEN
"use strict";
const path = require("path");
const { Statuspage } = require("statuspage.io");
const { createGenerator } = require("ts-json-schema-generator");
const Ajv = require("ajv");

const [base, token] = process.argv.slice(2);
const fail = (why) => {
  console.error(`FAIL: ${why}`);
  process.exit(1);
};
const expect = (ok, why) => ok || fail(why);

const declared = path.join(require.resolve("statuspage.io"), "..", "interfaces", "Result.d.ts");
// Statuspage adds fields its clients ignore: what is declared must be there, more may be.
const generator = createGenerator({ path: declared, type: "*", skipTypeCheck: true, additionalProperties: true });
const ajv = new Ajv({ allErrors: true, strict: false });
const validators = {};
for (const type of ["Status", "Components", "Incidents", "ScheduledMaintenances"]) {
  const schema = generator.createSchema(type);
  validators[type] = ajv.compile(schema);
}
// The schemas refuse what the client's types would: a component without its position.
expect(
  !validators.Components({ page: { id: "", name: "", time_zone: "", updated_at: "", url: "" }, components: [{ id: "x" }] }),
  "the schema made of statuspage.io's types refuses a component missing its fields",
);
function conforms(type, data, where) {
  const validate = validators[type];
  if (!validate(data)) {
    fail(`${where} is not a ${type} as statuspage.io declares it: ${ajv.errorsText(validate.errors)}`);
  }
}

const client = new Statuspage("status");
client.setApiUrl(base);
const api = client.api;

async function admin(method, route, body) {
  const answer = await fetch(`${base}${route}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: answer.status, body: await answer.json().catch(() => null) };
}

async function until(what, probe, seconds) {
  const deadline = Date.now() + seconds * 1000;
  let last;
  while (Date.now() < deadline) {
    last = await probe();
    if (last.ok) return last.value;
    await new Promise((r) => setTimeout(r, 250));
  }
  fail(`${what} within ${seconds} s; last seen: ${JSON.stringify(last && last.seen)}`);
}

/// Every document, read by the client and checked against its types.
async function readAll(where) {
  const status = await api.getStatus();
  conforms("Status", status, `${where}: status.json`);
  const components = await api.getComponents();
  conforms("Components", components, `${where}: components.json`);
  const summary = await api.getSummary();
  // statuspage.io declares Summary as Status & ScheduledMaintenance (singular) & Components &
  // Incidents, which no page could answer; Statuspage's summary holds each of the others.
  for (const type of ["Status", "Components", "Incidents", "ScheduledMaintenances"]) {
    conforms(type, summary, `${where}: summary.json`);
  }
  const all = await api.incidents.getAll();
  conforms("Incidents", all, `${where}: incidents.json`);
  const unresolved = await api.incidents.getUnresolved();
  conforms("Incidents", unresolved, `${where}: incidents/unresolved.json`);
  const maintenances = await api.scheduledMaintenances.getAll();
  conforms("ScheduledMaintenances", maintenances, `${where}: scheduled maintenances`);
  return { status, components, summary, all, unresolved };
}

(async () => {
  const calm = await until(
    "every dependency checked and operational",
    async () => {
      const r = await readAll("at start");
      return { ok: r.status.status.indicator === "none", value: r, seen: r.status.status };
    },
    30,
  );
  expect(calm.components.components.length >= 2, "components: groups and public dependencies");
  expect(
    calm.components.components.every((c) => c.status === "operational"),
    `all operational at start: ${JSON.stringify(calm.components.components)}`,
  );
  const before = calm.all.incidents.length;

  // The primary database goes down: one incident, critical.
  let chaos = await admin("PUT", "/demo/chaos/primary-db", { mode: "outage" });
  expect(chaos.status === 200, `chaos: ${chaos.status}`);
  const down = await until(
    "one unresolved incident, critical",
    async () => {
      const r = await readAll("in the outage");
      const open = r.unresolved.incidents;
      return { ok: open.length === 1 && r.status.status.indicator === "critical", value: r, seen: { open, status: r.status.status } };
    },
    30,
  );
  const incident = down.unresolved.incidents[0];
  expect(incident.impact === "critical", `impact ${incident.impact}`);
  expect(incident.status === "investigating", `status ${incident.status}`);
  expect(!JSON.stringify(down.summary).includes("primary-db"), "no dependency id in the public JSON");

  // An operator's word shows at once in what the client reads.
  const posted = await admin("POST", `/admin/incidents/${incident.id}/updates`, {
    status: "identified",
    message: "The primary lost its disk; failing over.",
    actor: "statuspage-client",
  });
  expect(posted.status === 201, `update: ${posted.status} ${JSON.stringify(posted.body)}`);
  const refused = await admin("POST", `/admin/incidents/${incident.id}/updates`, { status: "fixed", message: "x" });
  expect(refused.status === 400 && typeof refused.body.error === "string", `a bad status: ${refused.status}`);
  await until(
    "the update in unresolved.json",
    async () => {
      const r = await api.incidents.getUnresolved();
      const i = r.incidents[0];
      const ok = i && i.status === "identified" && i.incident_updates[0].body === "The primary lost its disk; failing over.";
      return { ok, value: r, seen: i };
    },
    10,
  );

  // Recovery, then the quiet time: resolved.
  chaos = await admin("PUT", "/demo/chaos/primary-db", { mode: "ok" });
  expect(chaos.status === 200, `chaos: ${chaos.status}`);
  const after = await until(
    "the incident resolved after the quiet time",
    async () => {
      const r = await readAll("after recovery");
      const mine = r.all.incidents.find((i) => i.id === incident.id);
      return { ok: r.unresolved.incidents.length === 0 && mine && mine.status === "resolved", value: r, seen: mine };
    },
    60,
  );
  const resolved = after.all.incidents.find((i) => i.id === incident.id);
  expect(resolved.resolved_at !== null, "resolved_at is set");
  expect(after.all.incidents.length === before + 1, "exactly one incident was opened");
  expect(after.status.status.indicator === "none", "operational again");
  console.log(`statuspage.io read every document; incident ${incident.id} opened, updated and resolved`);
})().catch((e) => fail(e.stack || e));
