// A queued design simulation: poll its status and show its progress in place; when it has
// ended (result, failure or lost), load the page again, which shows the result or the
// reason. Without JavaScript the page refreshes itself (a <noscript> meta refresh).
(function () {
  "use strict";
  var card = document.querySelector("[data-testid=simulation-status]");
  if (!card) return;
  var url = card.getAttribute("data-status-url");
  var state = card.getAttribute("data-state");
  if (!url || (state !== "waiting" && state !== "running")) return;
  var failures = 0;
  var note = card.querySelector("[data-testid=simulation-progress]");

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(function (s) {
        failures = 0;
        if (s.state === "waiting" || s.state === "running") {
          if (note) {
            note.textContent =
              s.state === "waiting"
                ? "Waiting for a worker."
                : s.total
                  ? "Running: " + s.done + " of " + s.total + " studies."
                  : "Running.";
          }
          window.setTimeout(poll, 1000);
        } else {
          window.location.reload();
        }
      })
      .catch(function () {
        failures += 1;
        if (note && failures >= 3) note.textContent = "Cannot reach the server; retrying.";
        window.setTimeout(poll, Math.min(10000, 1000 * 2 ** failures));
      });
  }
  window.setTimeout(poll, 1000);
})();
