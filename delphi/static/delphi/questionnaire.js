// The Delphi questionnaire: autosaved drafts that survive a closed tab or a failed request.
//
// Every change is written to localStorage at once and posted (only the items that changed)
// to the draft endpoint shortly after. The local copy records the server's version of the
// draft it was made from (data-updated: when a response of this panelist last changed, by the
// server's clock); on the next visit it is restored only while the server still holds that
// version, i.e. when it carries changes the server never confirmed. A clinic PC with a wrong
// clock therefore can never discard or resurrect answers.
//
// Without JS the page still works: the form posts normally ("Save draft" / "Submit").
(function () {
  "use strict";

  // The read-only page of a submitted round: whatever was kept locally is spent.
  const done = document.getElementById("questionnaire-done");
  if (done) {
    try { localStorage.removeItem(done.dataset.storageKey); } catch (e) { /* ignore */ }
    return;
  }
  const form = document.getElementById("questionnaire");
  if (!form) return;

  const storageKey = form.dataset.storageKey;
  const roundNumber = parseInt(form.dataset.round, 10);
  const saveState = document.getElementById("save-state");
  const sections = Array.from(form.querySelectorAll("section.q-item"));
  let saveTimer = null;
  let inFlight = false;
  let submitting = false;
  let localVersion = 0; // bumped on every change; a save confirms the version it carried

  function show(text) { if (saveState) saveState.textContent = text; }

  function csrfToken() {
    // The cookie is current even after a login rotated it; the form's token is the fallback
    // for a site that marks the cookie HttpOnly.
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) return decodeURIComponent(match[1]);
    const input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  // --- reading and writing the form ------------------------------------------------------
  function control(section, name) {
    return form.elements.namedItem("item-" + section.dataset.item + "-" + name);
  }

  // One item's whole answer, in the services' shape: the server replaces an item's answer as
  // a whole, so a partial one would clear the fields left out.
  function answerOf(section) {
    const rating = control(section, "rating");
    const unable = control(section, "unable");
    const agrees = control(section, "placement_agrees");
    const choice = control(section, "placement_choice");
    const comment = control(section, "comment");
    const reason = control(section, "reason");
    const answer = {
      rating: rating && rating.value ? parseInt(rating.value, 10) : null,
      unable: !!(unable && unable.checked),
    };
    if (answer.unable) answer.rating = null;
    if (agrees) answer.placement_agrees = agrees.value === "yes" ? true : agrees.value === "no" ? false : null;
    if (choice) answer.placement_choice = choice.value || null;
    if (comment) answer.comment = comment.value;
    if (reason) answer.reason = reason.value;
    return answer;
  }

  function state() {
    const answers = {};
    for (const section of sections) answers[section.dataset.item] = answerOf(section);
    const comp = form.elements.namedItem("comprehensiveness");
    return { answers: answers, comprehensiveness: comp && comp.value ? parseInt(comp.value, 10) : null };
  }

  function setRadio(list, value) {
    if (!list) return;
    const radios = list instanceof RadioNodeList ? Array.from(list) : [list];
    radios.forEach((r) => { r.checked = value !== null && value !== undefined && String(value) === r.value; });
  }

  function apply(saved) {
    for (const section of sections) {
      const a = saved.answers && saved.answers[section.dataset.item];
      if (!a) continue;
      setRadio(control(section, "rating"), a.rating);
      const unable = control(section, "unable");
      if (unable) unable.checked = !!a.unable;
      const agrees = control(section, "placement_agrees");
      if (agrees && "placement_agrees" in a) setRadio(agrees, a.placement_agrees === true ? "yes" : a.placement_agrees === false ? "no" : null);
      const choice = control(section, "placement_choice");
      if (choice && "placement_choice" in a) choice.value = a.placement_choice || "";
      const comment = control(section, "comment");
      if (comment && "comment" in a) comment.value = a.comment || "";
      const reason = control(section, "reason");
      if (reason && "reason" in a) reason.value = a.reason || "";
      updateReason(section);
    }
    if (saved.comprehensiveness) setRadio(form.elements.namedItem("comprehensiveness"), saved.comprehensiveness);
  }

  // --- the reason asked for a rating outside the panel's IQR ------------------------------
  // Without JS the field is always shown (with when it is required); here only when needed.
  function updateReason(section) {
    const label = section.querySelector("[data-reason]");
    if (!label) return;
    const q1 = parseFloat(section.dataset.q1);
    const q3 = parseFloat(section.dataset.q3);
    const a = answerOf(section);
    const outside = a.rating !== null && (a.rating < q1 || a.rating > q3);
    label.hidden = !outside && !(a.reason || "").trim();
  }

  // --- drafts ------------------------------------------------------------------------------
  let confirmed = state(); // what the server holds: the page as rendered

  function remember() {
    localVersion += 1;
    try {
      localStorage.setItem(storageKey, JSON.stringify({ state: state(), base: form.dataset.updated }));
    } catch (e) { /* storage full or disabled: the server copy still follows */ }
  }
  function forget() { try { localStorage.removeItem(storageKey); } catch (e) { /* ignore */ } }

  function pending() {
    const now = state();
    const answers = {};
    for (const id of Object.keys(now.answers)) {
      if (JSON.stringify(now.answers[id]) !== JSON.stringify(confirmed.answers[id])) answers[id] = now.answers[id];
    }
    const body = { round: roundNumber, answers: answers };
    if (now.comprehensiveness !== null && now.comprehensiveness !== confirmed.comprehensiveness) {
      body.comprehensiveness = now.comprehensiveness;
    }
    return { body: body, empty: !Object.keys(answers).length && !("comprehensiveness" in body) };
  }

  // Times in the site's stated zone (base.html), as the server writes them: "2026-12-05 16:18 UTC".
  function savedAt(iso) {
    const d = new Date(iso);
    if (isNaN(d)) return "";
    const zone = document.documentElement.dataset.timeZone || "UTC";
    try {
      const parts = {};
      new Intl.DateTimeFormat("en-GB", {
        timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "short",
      }).formatToParts(d).forEach((p) => { parts[p.type] = p.value; });
      return " " + parts.year + "-" + parts.month + "-" + parts.day + " " + parts.hour + ":" + parts.minute + " " + parts.timeZoneName;
    } catch (e) {
      return " " + d.toISOString().slice(0, 16).replace("T", " ") + " UTC";
    }
  }

  // "x of n answered": an item with a rating or "unable to rate", as the server counts it.
  const answeredCount = document.getElementById("answered-count");
  function updateAnswered() {
    if (!answeredCount) return;
    answeredCount.textContent = String(sections.filter((s) => {
      const a = answerOf(s);
      return a.rating !== null || a.unable;
    }).length);
  }

  function saveDraft(keepalive) {
    if (submitting) return Promise.resolve();
    if (inFlight && !keepalive) { scheduleSave(300); return Promise.resolve(); } // keep saves in order
    const change = pending();
    if (change.empty) { forget(); return Promise.resolve(); }
    const sentVersion = localVersion;
    inFlight = true;
    show("Saving…");
    return fetch(form.dataset.draftUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify(change.body),
      credentials: "same-origin",
      keepalive: !!keepalive,
    }).then((response) => response.json().catch(() => ({})).then((data) => {
      inFlight = false;
      if (!response.ok) {
        // Kept locally; the next change (or reload) tries again. The message names the item.
        show("Not saved: " + (data.error || "error " + response.status) + ". Your answers are kept in this browser.");
        return;
      }
      for (const id of Object.keys(change.body.answers)) confirmed.answers[id] = change.body.answers[id];
      if ("comprehensiveness" in change.body) confirmed.comprehensiveness = change.body.comprehensiveness;
      form.dataset.updated = String(data.updated_at_ms);
      const newer = localVersion !== sentVersion; // changed while the request was out
      if (newer) { remember(); scheduleSave(400); show("Unsaved changes"); }
      else { forget(); show("Draft saved" + savedAt(data.saved_at)); }
    }), () => {
      inFlight = false;
      show("Offline: your answers are kept in this browser and will be sent when the connection is back");
      scheduleSave(5000);
    });
  }

  function scheduleSave(delay) {
    clearTimeout(saveTimer);
    saveTimer = setTimeout(() => saveDraft(false), delay);
  }

  function changed(event) {
    const target = event.target;
    // The suggestion fields sit inside this form on the page but belong to #suggestion-form.
    if (!target || target.form !== form) return;
    const section = target.closest("section.q-item");
    if (section) {
      // A rating and "unable to rate" exclude each other.
      if (target.type === "radio" && target.name.endsWith("-rating") && target.checked) {
        const unable = control(section, "unable");
        if (unable) unable.checked = false;
      } else if (target.type === "checkbox" && target.name.endsWith("-unable") && target.checked) {
        setRadio(control(section, "rating"), null);
      }
      updateReason(section);
    }
    updateAnswered();
    remember();
    show("Unsaved changes");
    scheduleSave(event.type === "input" ? 800 : 300);
  }
  form.addEventListener("change", changed);
  form.addEventListener("input", (e) => { if (e.target.tagName === "TEXTAREA" || e.target.type === "text") changed(e); });

  // Restore what the server never confirmed (closed tab, failed or blocked request).
  try {
    const stored = JSON.parse(localStorage.getItem(storageKey) || "null");
    if (stored && String(stored.base) !== form.dataset.updated) forget(); // the server moved on
    else if (stored && stored.state) {
      apply(stored.state);
      updateAnswered();
      localVersion += 1;
      show("Restored answers kept in this browser; saving…");
      scheduleSave(50);
    }
  } catch (e) { forget(); }
  sections.forEach(updateReason);
  updateAnswered();

  // A refused submission: the summary takes the focus, each line links to its question.
  const summary = document.getElementById("errors");
  if (summary) summary.focus();

  form.addEventListener("submit", () => {
    // The post carries every answer; the page it leads to settles the local copy (a newer
    // server version discards it, the thank-you page clears it).
    clearTimeout(saveTimer);
    submitting = true;
  });
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") saveDraft(true); });
  window.addEventListener("pagehide", () => { saveDraft(true); });

  // --- the suggestion form: show the fields its kind takes ---------------------------------
  const kind = document.getElementById("s-kind");
  if (kind) {
    const newKind = document.getElementById("s-new-kind");
    const fields = Array.from(document.querySelectorAll("#suggestion-fields [data-for]"));
    const update = () => {
      for (const p of fields) {
        let shown = p.dataset.for.split(" ").includes(kind.value);
        // A new category has no parent.
        if (shown && kind.value === "add" && p.querySelector("#s-parent") && newKind && newKind.value === "category") shown = false;
        p.hidden = !shown;
      }
    };
    kind.addEventListener("change", update);
    if (newKind) newKind.addEventListener("change", update);
    update();
  }
})();
