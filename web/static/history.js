// status history page: the audit trail, fetched with the admin token kept in this tab
// (sessionStorage, set on the dashboard). Everything else on the page works without it.
"use strict";

(function () {
  const section = document.getElementById("audit");
  const state = document.getElementById("audit-state");
  const table = document.getElementById("audit-table");
  const token = sessionStorage.getItem("status-admin-token") || "";
  if (!section || !token) return;
  state.textContent = "Loading…";
  fetch(section.dataset.source, { headers: { Authorization: "Bearer " + token } })
    .then((r) => r.ok ? r.json() : r.json().then((e) => { throw new Error(e.error || r.status); }))
    .then((page) => {
      const body = table.tBodies[0];
      for (const a of page.entries) {
        const row = body.insertRow();
        const cells = [a.at, a.actor || "", a.action === "hold" ? "hold " + a.target : a.action, a.reason || "", a.address || "", a.outcome];
        for (const text of cells) row.insertCell().textContent = text;
      }
      table.hidden = false;
      state.textContent = page.entries.length ? "" : "Nothing recorded yet.";
    })
    .catch((e) => { state.textContent = "The audit trail could not be read: " + e.message; });
})();
