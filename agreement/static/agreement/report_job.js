// A report being computed: poll its status and update the page in place; open the report
// when it is done, show the reason when it failed. Without JavaScript the page refreshes.
(function () {
  "use strict";
  var card = document.querySelector("[data-testid=report-job]");
  if (!card) return;
  var url = card.getAttribute("data-status-url");
  var failures = 0;

  function text(id, value) {
    var el = card.querySelector("[data-testid=" + id + "]");
    if (el) el.textContent = value;
  }

  function show(state) {
    text("job-status", state.status.charAt(0).toUpperCase() + state.status.slice(1));
    text("job-stage", state.stage);
    text(
      "job-cells",
      state.cells_total
        ? state.cells_done + " of " + state.cells_total + " cells"
        : "cells not counted yet"
    );
    text("job-resamples", state.resamples_done + " of " + state.resamples_total);
    card.querySelector("[data-testid=job-progress]").value = state.percent;
    card.setAttribute("data-status", state.status);
    var error = card.querySelector("[data-testid=job-error]");
    error.textContent = state.error;
    error.hidden = !state.error;
    if (state.status === "finished" && state.report_url) {
      var done = card.querySelector("[data-testid=job-done]");
      done.querySelector("a").href = state.report_url;
      done.hidden = false;
      window.location.assign(state.report_url);
      return false;
    }
    return state.status === "queued" || state.status === "running";
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(function (state) {
        failures = 0;
        if (show(state)) window.setTimeout(poll, 1000);
      })
      .catch(function (err) {
        failures += 1;
        var error = card.querySelector("[data-testid=job-error]");
        error.textContent = "Could not read the job's state (" + err.message + "); retrying.";
        error.hidden = false;
        window.setTimeout(poll, Math.min(1000 * Math.pow(2, failures), 15000));
      });
  }

  var status = card.getAttribute("data-status");
  if (status === "queued" || status === "running") window.setTimeout(poll, 500);
})();
