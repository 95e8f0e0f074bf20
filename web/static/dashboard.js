// status dashboard: live updates over server-sent events, client-side filters, operator
// actions with a token kept in this tab only (sessionStorage). No external requests.
"use strict";

(function () {
  const TOKEN_KEY = "status-admin-token";
  const live = document.getElementById("live");
  const connection = document.getElementById("connection");
  const result = document.getElementById("action-result");

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }
  function showToken() { document.body.classList.toggle("has-token", token() !== ""); }

  function say(text, isError) {
    result.textContent = text;
    result.classList.toggle("error", Boolean(isError));
  }

  // Filters: applied in place, kept in the URL so a reload shows the same.
  const filterIds = ["status", "urgency", "tag", "group", "q"];
  function filters() {
    const f = {};
    for (const id of filterIds) {
      const input = document.getElementById("filter-" + id);
      f[id] = input ? input.value.trim() : "";
    }
    return f;
  }
  function applyFilters() {
    const f = filters();
    const q = f.q.toLowerCase();
    for (const dep of live.querySelectorAll("li.dep")) {
      const d = dep.dataset;
      const keep = (!f.status || d.status === f.status)
        && (!f.urgency || d.urgency === f.urgency)
        && (!f.tag || d.tags.split(" ").includes(f.tag))
        && (!f.group || d.groups.split(" ").includes(f.group))
        && (!q || d.search.includes(q));
      dep.hidden = !keep;
    }
    for (const list of live.querySelectorAll("ul.deps")) {
      const any = Array.from(list.children).some((li) => !li.hidden);
      list.hidden = !any;
      if (list.previousElementSibling) list.previousElementSibling.hidden = !any;
    }
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(f)) if (v) params.set(k, v);
    const query = params.toString();
    history.replaceState(null, "", query ? "status?" + query : "status");
  }
  document.getElementById("filters").addEventListener("submit", (e) => { e.preventDefault(); applyFilters(); });
  for (const id of filterIds) {
    const input = document.getElementById("filter-" + id);
    if (input) input.addEventListener("input", applyFilters);
  }

  // Live updates: the server sends the live part of the page, rendered and escaped. While
  // the operator is in one of its forms, the newest update waits until they leave it.
  let pending = null;
  function editing() {
    const el = document.activeElement;
    return el && live.contains(el) && el.closest("form") !== null;
  }
  function swap(html) {
    if (editing()) {
      pending = html;
      return;
    }
    pending = null;
    const open = new Set(Array.from(live.querySelectorAll("li.dep details[open]"))
      .map((d) => d.closest("li.dep").dataset.id));
    live.innerHTML = html;
    for (const li of live.querySelectorAll("li.dep")) {
      if (open.has(li.dataset.id)) li.querySelector("details").open = true;
    }
    const banner = document.getElementById("banner");
    if (banner) document.title = banner.dataset.condition + " · " + document.title.split(" · ").slice(1).join(" · ");
    applyFilters();
  }
  live.addEventListener("focusout", () => {
    // Focus moves within the form first; look once it has settled.
    setTimeout(() => { if (pending !== null && !editing()) swap(pending); }, 0);
  });

  function connect() {
    const events = new EventSource("status/events");
    events.addEventListener("open", () => {
      connection.textContent = "live";
      connection.className = "connection live";
    });
    events.addEventListener("live", (e) => swap(e.data));
    // The server is shutting down; the stream ends and the browser reconnects, behind a
    // balancer to another instance.
    events.addEventListener("closing", () => {
      connection.textContent = "server restarting…";
      connection.className = "connection lost";
    });
    events.addEventListener("error", () => {
      if (events.readyState === EventSource.CLOSED) {
        // Refused (too many streams, from this address or in all) or gone for good: the
        // page is refreshed once a minute by a new stream (its first event is the whole
        // live part), never hammered every two seconds.
        connection.textContent = "live updates refused: refreshing every minute";
        connection.className = "connection lost";
        setTimeout(connect, 60000);
      } else {
        // A blip: EventSource reconnects by itself.
        connection.textContent = "reconnecting…";
        connection.className = "connection lost";
      }
    });
  }

  // Operator actions, against the admin API next to this page.
  async function call(method, path, body) {
    const response = await fetch(path, {
      method,
      headers: Object.assign({ "Authorization": "Bearer " + token() },
        body ? { "Content-Type": "application/json" } : {}),
      body: body ? JSON.stringify(body) : undefined,
    });
    let json = null;
    try { json = await response.json(); } catch (_) { /* no body */ }
    if (!response.ok) throw new Error((json && json.error) || ("HTTP " + response.status));
    return json;
  }

  const actions = {
    refresh: (el) => call("POST", "healthcheck/dependencies/" + encodeURIComponent(el.dataset.id) + "/refresh")
      .then((r) => "Refreshed " + r.id + ": " + r.status),
    undrain: () => call("DELETE", "admin/drain").then(() => "No longer draining"),
    "clear-override": (el) => call("DELETE", "features/" + encodeURIComponent(el.dataset.feature) + "/override")
      .then((f) => "Override cleared: " + f.name + " is " + (f.enabled ? "on" : "off")),
    drain: (form) => call("PUT", "admin/drain", {
      ttlSeconds: Number(form.ttlSeconds.value), reason: form.reason.value,
    }).then((d) => "Draining: " + d.reason),
    mute: (form) => call("PUT", "admin/mutes/" + encodeURIComponent(form.dataset.id), {
      ttlSeconds: Number(form.ttlSeconds.value), reason: form.reason.value,
    }).then((m) => "Muted " + m.dependency + " until " + m.until),
    unmute: (el) => call("DELETE", "admin/mutes/" + encodeURIComponent(el.dataset.id))
      .then((r) => r.wasMuted ? "Unmuted " + r.dependency : r.dependency + " was not muted"),
    override: (form) => call("PUT", "features/" + encodeURIComponent(form.dataset.feature) + "/override", {
      enabled: form.enabled.value === "true", ttlSeconds: Number(form.ttlSeconds.value), reason: form.reason.value,
    }).then((f) => "Override set: " + f.name + " is " + (f.enabled ? "on" : "off")),
  };

  function run(action, el) {
    actions[action](el).then((text) => say(text, false), (err) => say(err.message, true))
      .then(loadAudit);
  }

  // The audit trail, for whoever holds the token: built with textContent only.
  async function loadAudit() {
    const rows = document.getElementById("audit-rows");
    const note = document.getElementById("audit-note");
    if (!rows || !token()) return;
    let trail;
    try {
      trail = await call("GET", "admin/audit?limit=100");
    } catch (err) {
      note.textContent = "Audit trail unavailable: " + err.message;
      rows.replaceChildren();
      return;
    }
    note.textContent = "The last " + trail.entries.length + " acts, " +
      (trail.kept === "history" ? "kept across restarts." : "kept in this process.");
    rows.replaceChildren(...trail.entries.slice(0, 100).map((e) => {
      const tr = document.createElement("tr");
      const cells = [e.at, e.action, e.outcome, e.actor || "—"];
      cells.forEach((text, i) => {
        const td = document.createElement("td");
        td.textContent = text;
        if (i === 2 && e.refused) td.className = "refused";
        tr.appendChild(td);
      });
      return tr;
    }));
  }

  live.addEventListener("click", (e) => {
    const button = e.target.closest("button.admin-action");
    if (button) run(button.dataset.action, button);
  });
  live.addEventListener("submit", (e) => {
    const form = e.target.closest("form.admin-form");
    if (!form) return;
    e.preventDefault();
    run(form.dataset.action, form);
    if (document.activeElement) document.activeElement.blur();
  });

  document.getElementById("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const input = document.getElementById("token");
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    input.value = "";
    showToken();
    say(token() ? "Token set for this tab." : "No token.", false);
    loadAudit();
  });
  document.getElementById("forget-token").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showToken();
    say("Token forgotten.", false);
  });

  // Objectives: each one's budget left, its alert and a bar per burn window, read every 15 s
  // (the server reads them on the same beat). Built with DOM calls: no markup from data.
  const objectives = document.getElementById("objectives-live");
  const SVG = "http://www.w3.org/2000/svg";
  function burnChart(rates) {
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "0 0 300 96");
    svg.setAttribute("class", "burn");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "Burn rate per window");
    const y = (r) => 78 - Math.min(r, 20) / 20 * 76;
    for (const f of [1, 6, 14.4]) {
      const line = document.createElementNS(SVG, "line");
      for (const [k, v] of [["class", "threshold"], ["x1", 0], ["x2", 300], ["y1", y(f)], ["y2", y(f)]]) line.setAttribute(k, v);
      svg.appendChild(line);
    }
    ["5m", "30m", "1h", "6h", "1d", "3d"].forEach((w, i) => {
      const rate = rates[w];
      const bar = document.createElementNS(SVG, "rect");
      const top = y(rate || 0);
      const level = rate > 14.4 ? "outage" : rate > 1 ? "major" : "ok";
      for (const [k, v] of [["class", "bar " + level], ["x", 10 + i * 48], ["y", top], ["width", 30], ["height", 78 - top]]) bar.setAttribute(k, v);
      const title = document.createElementNS(SVG, "title");
      title.textContent = w + ": " + (rate == null ? "nothing observed" : rate.toFixed(2));
      bar.appendChild(title);
      svg.appendChild(bar);
      const label = document.createElementNS(SVG, "text");
      for (const [k, v] of [["class", "window"], ["x", 25 + i * 48], ["y", 92], ["text-anchor", "middle"]]) label.setAttribute(k, v);
      label.textContent = w;
      svg.appendChild(label);
    });
    return svg;
  }
  async function loadObjectives() {
    if (!objectives) return;
    let body;
    try {
      const response = await fetch("healthcheck/slos", { headers: { "Accept": "application/json" } });
      if (!response.ok) return;
      body = await response.json();
    } catch (_) {
      return;
    }
    const rows = document.getElementById("objective-rows");
    rows.replaceChildren();
    for (const o of body.slos || []) {
      const li = document.createElement("li");
      li.className = "objective";
      li.dataset.slo = o.name;
      const head = document.createElement("p");
      const name = document.createElement("strong");
      name.textContent = o.name;
      const about = document.createElement("small");
      about.textContent = " " + o.target + " · " + (o.objective * 100) + " % over " + o.window;
      head.append(name, about);
      const firing = (o.alerts || []).find((a) => a.firing);
      if (firing) {
        const alert = document.createElement("span");
        alert.className = "alert " + firing.severity;
        alert.textContent = firing.severity;
        head.append(" ", alert);
      }
      const budget = document.createElement("p");
      const meter = document.createElement("meter");
      for (const [k, v] of [["min", 0], ["max", 1], ["low", 0.25], ["high", 0.75], ["optimum", 1]]) meter.setAttribute(k, v);
      meter.value = Math.max(0, Math.min(1, o.budget.remaining));
      budget.append(meter, " " + (o.budget.remaining * 100).toFixed(1) + " % of the budget left");
      li.append(head, budget, burnChart(o.burnRates || {}));
      rows.appendChild(li);
    }
    objectives.hidden = rows.children.length === 0;
  }

  showToken();
  applyFilters();
  connect();
  loadAudit();
  loadObjectives();
  setInterval(loadObjectives, 15000);
})();
