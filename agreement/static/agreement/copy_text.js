// "Copy" buttons: <button data-copy="ID"> copies the text of the element with that id.
// Falls back to selecting the text where the clipboard API is not available (plain http).
(function () {
  "use strict";
  function select(el) {
    const range = document.createRange();
    range.selectNodeContents(el);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }
  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    const status = button.parentElement.querySelector("[data-copy-status]");
    const say = function (text) { if (status) status.textContent = text; };
    const text = source.textContent.trim();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(
        function () { say("Copied."); },
        function () { select(source); say("Selected: press Ctrl+C to copy."); }
      );
    } else {
      select(source);
      say("Selected: press Ctrl+C to copy.");
    }
  });
})();
