// The public status page, kept current: on each `changed` event, the page is fetched again
// and its main part replaced. When the stream is refused (too many open, from this address
// or in all) or lost for good, the page refreshes every minute instead and tries the stream
// again then. Without JavaScript, it reloads itself every minute.
(() => {
  "use strict";
  const MINUTE = 60000;
  let polling = null;

  async function refresh() {
    try {
      const response = await fetch("page" + location.search, { cache: "no-store" });
      if (!response.ok) return;
      const doc = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = doc.getElementById("page");
      if (fresh) document.getElementById("page").replaceWith(fresh);
    } catch (_) {
      // The next event, or the next minute, tries again.
    }
  }

  function poll() {
    if (polling === null) polling = setInterval(refresh, MINUTE);
    document.documentElement.dataset.updates = "polling";
  }

  function connect() {
    const source = new EventSource("page/events");
    source.addEventListener("open", () => {
      if (polling !== null) {
        clearInterval(polling);
        polling = null;
        refresh(); // what changed while polling
      }
      document.documentElement.dataset.updates = "live";
    });
    source.addEventListener("changed", refresh);
    source.addEventListener("error", () => {
      // A refusal (429, 503) or a stream gone for good closes it; a blip reconnects alone.
      if (source.readyState === EventSource.CLOSED) {
        poll();
        setTimeout(connect, MINUTE);
      }
    });
  }

  if (window.EventSource) connect();
  else poll();
})();
