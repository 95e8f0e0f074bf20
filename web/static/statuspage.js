// The public status page, kept current: on each `changed` event, the page is fetched again
// and its main part replaced. Without JavaScript, it reloads itself every minute.
(() => {
  "use strict";
  if (!window.EventSource) return;
  const source = new EventSource("page/events");
  source.addEventListener("changed", async () => {
    try {
      const response = await fetch("page" + location.search, { cache: "no-store" });
      if (!response.ok) return;
      const doc = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = doc.getElementById("page");
      if (fresh) document.getElementById("page").replaceWith(fresh);
    } catch (_) {
      // The next event tries again.
    }
  });
})();
