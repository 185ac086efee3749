// The rating page: keyboard-first scoring, autosaved drafts, time on item.
// Nothing is lost on a closed tab, reload or dropped connection: every change is written to
// localStorage at once and to the server shortly after; a draft the server has not confirmed
// is restored from localStorage on the next visit and sent again.
(function () {
  "use strict";
  const form = document.getElementById("rating-form");
  if (!form) return;
  const locked = form.dataset.locked === "1";
  const assignment = form.dataset.assignment;
  const storageKey = "medhelm-draft-" + assignment;
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const saveState = document.getElementById("save-state");
  const fieldsets = Array.from(form.querySelectorAll("fieldset.criterion"));
  let active = 0;
  let dirty = false;
  let saveTimer = null;
  let unsentMs = 0;
  let visibleSince = document.visibilityState === "visible" ? performance.now() : null;

  // --- time on item: only while the page is visible -------------------------------------
  function collectTime() {
    if (visibleSince !== null) {
      const now = performance.now();
      unsentMs += now - visibleSince;
      visibleSince = now;
    }
  }
  function takeSeconds() {
    collectTime();
    const seconds = unsentMs / 1000;
    unsentMs = 0;
    return seconds;
  }

  // --- reading and writing the form ------------------------------------------------------
  function answers() {
    const out = {};
    for (const fs of fieldsets) {
      const key = fs.dataset.key;
      const checked = fs.querySelector("input[type=radio]:checked");
      const na = fs.querySelector("input[name='c-" + key + "-na']");
      const comment = fs.querySelector("textarea");
      out[key] = {
        value: checked && !(na && na.checked) ? parseInt(checked.value, 10) : null,
        cannot_assess: !!(na && na.checked),
        comment: comment ? comment.value : "",
      };
    }
    return out;
  }
  function apply(saved) {
    for (const fs of fieldsets) {
      const a = saved[fs.dataset.key];
      if (!a) continue;
      fs.querySelectorAll("input[type=radio]").forEach((r) => { r.checked = a.value !== null && String(a.value) === r.value; });
      const na = fs.querySelector("input[name='c-" + fs.dataset.key + "-na']");
      if (na) na.checked = !!a.cannot_assess;
      const comment = fs.querySelector("textarea");
      if (comment) comment.value = a.comment || "";
    }
  }

  // --- drafts ------------------------------------------------------------------------------
  // The local copy records the server version (data-updated, the server's own clock) it was
  // made from: it is restored only while the server still holds that version, so a wrong
  // clock on a clinic PC can never discard or resurrect answers.
  let localVersion = 0;  // bumped on every change; a save confirms the version it carried
  function show(text) { if (saveState) saveState.textContent = text; }
  function remember() {
    localVersion += 1;
    try {
      localStorage.setItem(storageKey, JSON.stringify({ answers: answers(), base: form.dataset.updated }));
    } catch (e) { /* storage full or disabled: the server copy still follows */ }
  }
  function forget() { try { localStorage.removeItem(storageKey); } catch (e) { /* ignore */ } }

  function saveDraft(keepalive) {
    if (locked || !dirty) return Promise.resolve();
    const seconds = takeSeconds();
    const sentVersion = localVersion;
    const body = JSON.stringify({ answers: answers(), time_spent_seconds: seconds });
    dirty = false;
    show("Saving…");
    const failed = () => { dirty = true; unsentMs += seconds * 1000; };
    return fetch(form.dataset.draftUrl, {
      method: "PUT",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: body,
      credentials: "same-origin",
      keepalive: !!keepalive,
    }).then((response) => {
      if (response.ok) {
        return response.json().then((data) => {
          const newer = localVersion !== sentVersion;  // changed while the request was out
          if (form.dataset.status !== "submitted") {
            form.dataset.updated = String(data.updated_at_ms);
            if (newer) remember(); else forget();
          }
          // A submitted item keeps its submitted values until "Save revision": its local
          // copy stays, so that a revision in progress survives a reload.
          show(newer || dirty ? "Unsaved changes" : "Draft saved");
        });
      }
      failed();
      return response.json().then((data) => show("Not saved: " + JSON.stringify(data)), () => show("Not saved (" + response.status + ")"));
    }, () => {
      failed();
      show("Offline: kept in this browser, will retry");
      scheduleSave(5000);
    });
  }
  function scheduleSave(delay) {
    clearTimeout(saveTimer);
    saveTimer = setTimeout(() => saveDraft(false), delay);
  }
  function changed() {
    if (locked) return;
    dirty = true;
    remember();
    show("Unsaved changes");
    scheduleSave(400);
  }
  form.addEventListener("change", changed);
  form.addEventListener("input", (e) => { if (e.target.tagName === "TEXTAREA") changed(); });

  // Restore a draft the server never confirmed (closed tab, dropped connection).
  try {
    const stored = JSON.parse(localStorage.getItem(storageKey) || "null");
    if (stored && stored.base !== form.dataset.updated) forget();  // the server moved on since
    else if (stored && stored.answers && !locked) {
      apply(stored.answers);
      localVersion += 1;
      dirty = true;
      show("Restored answers saved in this browser");
      scheduleSave(50);
    }
  } catch (e) { forget(); }

  // --- focus between criteria ------------------------------------------------------------
  function focusCriterion(i) {
    if (!fieldsets.length) return;
    active = Math.max(0, Math.min(fieldsets.length - 1, i));
    fieldsets.forEach((fs, j) => fs.classList.toggle("active", j === active));
    fieldsets[active].scrollIntoView({ block: "nearest" });
  }
  fieldsets.forEach((fs, i) => fs.addEventListener("focusin", () => focusCriterion(i)));
  const firstOpen = fieldsets.findIndex((fs) => !fs.querySelector("input[type=radio]:checked"));
  focusCriterion(firstOpen === -1 ? 0 : firstOpen);

  function score(digit) {
    const fs = fieldsets[active];
    if (!fs) return;
    const radio = fs.querySelector("input[type=radio][value='" + digit + "']");
    if (!radio) return;  // outside this criterion's scale
    radio.checked = true;
    const na = fs.querySelector("input[name='c-" + fs.dataset.key + "-na']");
    if (na) na.checked = false;
    changed();
    if (active < fieldsets.length - 1) focusCriterion(active + 1);
  }

  function flag() {
    const isFlagged = document.getElementById("flag-button").textContent.trim().startsWith("Flagged");
    let reason = "";
    if (!isFlagged) {
      reason = window.prompt("Why do you flag this item for the coordinator?");
      if (reason === null || !reason.trim()) return;
    } else if (!window.confirm("Remove your flag from this item?")) {
      return;
    }
    fetch(form.dataset.flagUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify({ flagged: !isFlagged, reason: reason }),
      credentials: "same-origin",
    }).then((r) => r.json().then((data) => {
      const button = document.getElementById("flag-button");
      if (r.ok) button.innerHTML = (data.flagged ? "Flagged: " + escapeText(data.flag_reason) + " (unflag)" : "Flag item") + " <kbd>f</kbd>";
      else show("Flag not saved: " + JSON.stringify(data));
    }, () => show("Flag not saved (" + r.status + ")")), () => show("Flag not saved: offline"));
  }
  function escapeText(s) { const d = document.createElement("div"); d.textContent = s; return d.innerHTML; }
  document.getElementById("flag-button").addEventListener("click", flag);

  function go(url) {
    if (!url) return;
    saveDraft(true).finally(() => { window.location.href = url; });
  }

  form.addEventListener("submit", () => {
    clearTimeout(saveTimer);
    document.getElementById("time-spent").value = takeSeconds().toFixed(1);
    forget();  // the POST carries the answers; a validation error re-renders them
    dirty = false;
  });

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const typing = e.target.tagName === "TEXTAREA" || (e.target.tagName === "INPUT" && e.target.type === "text");
    if (typing) {
      if (e.key === "Escape") { e.target.blur(); fieldsets[active] && fieldsets[active].focus(); }
      return;
    }
    // On a focused link or button, Enter and Space keep their own meaning.
    if (["A", "BUTTON", "SUMMARY", "SELECT"].includes(e.target.tagName) && (e.key === "Enter" || e.key === " ")) return;
    if (locked && e.key !== "n" && e.key !== "p") return;
    if (/^[0-9]$/.test(e.key)) { score(e.key); e.preventDefault(); }
    else if (e.key === "j" || e.key === "ArrowDown") { focusCriterion(active + 1); e.preventDefault(); }
    else if (e.key === "k" || e.key === "ArrowUp") { focusCriterion(active - 1); e.preventDefault(); }
    else if (e.key === "c") { const t = fieldsets[active] && fieldsets[active].querySelector("textarea"); if (t) { t.focus(); e.preventDefault(); } }
    else if (e.key === "x") { const fs = fieldsets[active]; const na = fs && fs.querySelector("input[name='c-" + fs.dataset.key + "-na']"); if (na) { na.checked = !na.checked; if (na.checked) fs.querySelectorAll("input[type=radio]").forEach((r) => { r.checked = false; }); changed(); } }
    else if (e.key === "Enter") { e.preventDefault(); form.requestSubmit(); }
    else if (e.key === "n") { go(form.dataset.nextUrl); }
    else if (e.key === "p") { go(form.dataset.prevUrl); }
    else if (e.key === "f") { e.preventDefault(); flag(); }
  });

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") { collectTime(); visibleSince = null; saveDraft(true); }
    else { visibleSince = performance.now(); }
  });
  window.addEventListener("pagehide", () => { saveDraft(true); });
})();
