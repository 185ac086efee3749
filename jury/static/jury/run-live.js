// The jury run page follows its run in place: it polls the run's JSON status
// (jury.views.run_status) every few seconds and updates the counts, the state, the time
// left and which actions apply, without reloading the page. A failed poll says so on the
// page and tries again; polling stops once the run is no longer queued or running.
(function () {
  "use strict";
  const root = document.querySelector("[data-status-url]");
  if (!root) return;
  const url = root.dataset.statusUrl;
  const note = root.querySelector("[data-testid=run-refresh]");
  const bar = root.querySelector("progress");
  const INTERVAL_MS = 3000;
  let wasLive = root.dataset.live === "1";

  function field(name, value) {
    document.querySelectorAll('[data-field="' + name + '"]').forEach(function (el) {
      el.textContent = value === null || value === undefined ? "" : String(value);
    });
  }

  function show(name, visible) {
    root.querySelectorAll('[data-show="' + name + '"]').forEach(function (el) {
      el.hidden = !visible;
    });
  }

  // The judges' table, rebuilt from the status (text only: names are never read as HTML).
  function judges(rows) {
    const body = document.querySelector("[data-judges]");
    if (!body) return;
    body.replaceChildren.apply(body, rows.map(function (h) {
      const tr = document.createElement("tr");
      const cells = [h.judge, h.total, null, h.failure_rate, h.mean_latency, h.cost];
      cells.forEach(function (value) {
        const td = document.createElement("td");
        if (value === null) {
          h.by_status.forEach(function (text) {
            const tag = document.createElement("span");
            tag.className = "tag";
            tag.textContent = text;
            td.append(tag, " ");
          });
        } else {
          td.textContent = String(value);
        }
        tr.append(td);
      });
      return tr;
    }));
  }

  function apply(data) {
    ["status_display", "done", "total", "ok", "failed", "remaining", "cached",
      "input_tokens", "output_tokens", "cost", "eta_text", "waiting"].forEach(function (name) {
      field(name, data[name]);
    });
    if (bar) bar.value = data.percent;
    judges(data.judges || []);
    show("cached", data.cached > 0);
    show("eta_text", Boolean(data.eta_text));
    show("waiting", Boolean(data.waiting));
    show("can_cancel", data.can_cancel);
    show("can_resume", data.can_resume);
    root.dataset.live = data.live ? "1" : "0";
    if (wasLive && !data.live) {
      note.textContent = "";
      const link = document.createElement("a");
      link.href = window.location.pathname;
      link.textContent = "Reload the page";
      note.append("The run is " + data.status_display.toLowerCase() + ". ", link,
        " for its final error reasons and flagged verdicts.");
    } else {
      note.textContent = "";
    }
    wasLive = data.live;
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" }, cache: "no-store" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (data) {
        apply(data);
        if (data.live) window.setTimeout(poll, INTERVAL_MS);
      })
      .catch(function (error) {
        note.textContent = "Could not update the run's status at " +
          new Date().toLocaleTimeString() + " (" + error.message + "); trying again.";
        window.setTimeout(poll, INTERVAL_MS);
      });
  }

  if (wasLive) window.setTimeout(poll, INTERVAL_MS);
})();
