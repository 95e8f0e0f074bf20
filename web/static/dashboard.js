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

  showToken();
  applyFilters();
  connect();
  loadAudit();
})();
