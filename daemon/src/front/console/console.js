// Live refresh: every element with data-live is reloaded from that URL
// every two seconds, unless the operator is working in it (a field of it
// has the focus), so a form being filled in is never replaced.
"use strict";
for (const live of document.querySelectorAll("[data-live]")) {
  setInterval(async () => {
    if (live.contains(document.activeElement)) return;
    try {
      const answer = await fetch(live.dataset.live, { credentials: "same-origin", cache: "no-store" });
      if (!answer.ok) return;
      const body = await answer.text();
      if (body !== live.dataset.shown) {
        live.innerHTML = body;
        live.dataset.shown = body;
      }
    } catch (_) {
      // praxisd restarting: the next tick tries again.
    }
  }, 2000);
}
