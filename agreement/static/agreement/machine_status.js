// The report page's status panel: where the study's judge calls and metrics stand now,
// fetched once the stored report has opened (counting them reads every score of a large
// study). A failure says so in the panel instead of leaving the loading line.
(function () {
  "use strict";
  const panel = document.querySelector("[data-status-src]");
  if (!panel) return;
  const say = function (text) {
    panel.textContent = "";
    const p = document.createElement("p");
    p.className = "error";
    p.textContent = text;
    panel.appendChild(p);
  };
  fetch(panel.dataset.statusSrc, { credentials: "same-origin", headers: { Accept: "text/html" } })
    .then(function (response) {
      if (!response.ok) throw new Error("the server answered " + response.status);
      return response.text();
    })
    .then(function (html) {
      // HTML rendered by the site's own template, every value escaped there
      panel.innerHTML = html;
    })
    .catch(function (error) {
      say("Could not read where the judge calls and metrics stand (" + error.message +
          "). Reload the page to try again.");
    });
})();
