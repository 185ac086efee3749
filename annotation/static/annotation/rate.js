// The rating page: keyboard-first scoring, autosaved drafts, time on item.
// Nothing is lost on a closed tab, reload or dropped connection: every change the server does
// not hold is written to localStorage at once, and a draft goes to the server shortly after.
// Nothing is shown as saved that the server does not hold: a change to a submitted rating is
// an unsaved revision until Submit revision, a copy kept in this browser is shown as not
// saved on the next visit, and leaving with an unsaved change asks first.
(function () {
  "use strict";
  const form = document.getElementById("rating-form");
  if (!form) return;
  const locked = form.dataset.locked === "1";
  const assignment = form.dataset.assignment;
  const storageKey = "medhelm-draft-" + assignment;
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const saveState = document.getElementById("save-state");
  const barState = document.getElementById("bar-state");
  const fieldsets = Array.from(form.querySelectorAll("fieldset.criterion"));
  let active = 0;
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

  // --- what the server holds, and how the form differs from it -------------------------
  // The one source of every word the page shows about saving: the server's answers as last
  // heard from it (the page's own copy first, then each draft response) compared with the form.
  // A submitted rating changes only by submitting again (with its audit rows), so on a
  // submitted item a change is an unsaved revision until Submit revision; on any other item a
  // change is unsaved until a draft response holds the same answers.
  const server = {
    status: form.dataset.status,
    updated: form.dataset.updated,  // the server's own clock: versions the local copy
    answers: JSON.parse(document.getElementById("server-answers").textContent),
  };
  const keys = fieldsets.map((fs) => fs.dataset.key);
  const submitted = () => server.status === "submitted";
  function same(a, b) {
    a = a || {}; b = b || {};
    const value = (x) => (x.value === undefined ? null : x.value);
    const text = (x) => (x.comment || "").replace(/\r\n?/g, "\n");
    return value(a) === value(b) && !!a.cannot_assess === !!b.cannot_assess && text(a) === text(b);
  }
  function differing(local) { return keys.filter((k) => !same(local[k], server.answers[k])); }
  function unsaved() { return !locked && differing(answers()).length > 0; }

  // --- the local copy: kept exactly while the form holds something the server does not ---
  function remember() {
    if (locked) return;
    if (!unsaved()) { forget(); return; }
    try {
      localStorage.setItem(storageKey, JSON.stringify({ answers: answers(), base: server.updated }));
    } catch (e) { /* storage full or disabled: the page still says what is not saved */ }
  }
  function forget() { try { localStorage.removeItem(storageKey); } catch (e) { /* ignore */ } }

  // --- what the page says ------------------------------------------------------------------
  const banner = document.getElementById("unsaved");
  const bannerTitle = document.getElementById("unsaved-title");
  const bannerText = document.getElementById("unsaved-text");
  const bannerSubmit = document.getElementById("unsaved-submit");
  const statusBadge = document.querySelector("[data-testid=status]");
  const submitButton = document.getElementById("submit-button");
  let saving = null;        // the draft request in flight, if any
  let problem = null;       // why the last draft did not reach the server, until one does
  let restored = false;     // the unsaved answers came from this browser's copy, not this visit
  let confirmed = false;    // a draft sent during this visit is held by the server
  let overtaken = false;    // the item was submitted elsewhere (another tab) during this visit
  let note = "";            // a one-off remark (a discarded change), until the next change
  const SUBMITTED_BODY = " Submit revision replaces it with the answers shown here; Discard change goes back to it.";
  function render() {
    const diff = locked ? [] : differing(answers());
    fieldsets.forEach((fs) => markCriterion(fs, submitted() && diff.includes(fs.dataset.key)));
    let state = "";
    let body = "";
    if (!diff.length) {
      state = note || (confirmed && !submitted() ? "Draft saved" : "");
    } else if (submitted()) {
      if (overtaken) {
        state = "Not saved: this item was submitted meanwhile, from another tab or device";
        body = "The server holds that submitted rating (shown beside each criterion that differs)." + SUBMITTED_BODY;
      } else if (restored) {
        state = "Unsaved changes from this browser — not saved";
        body = "The server still holds your submitted rating (shown beside each changed criterion)." + SUBMITTED_BODY;
      } else {
        state = "Unsaved revision — not saved";
        body = "The server keeps your submitted rating until you press Submit revision. Discard change goes back to it.";
      }
    } else if (problem) {
      state = problem;
      body = "This browser keeps the change until the server has it. Discard change goes back to what the server holds.";
    } else if (saving) {
      state = "Saving…";
    } else if (restored) {
      state = "Unsaved changes from this browser — not saved yet";
      body = "Sending them to the server as your draft…";
    } else {
      state = "Unsaved changes";
    }
    if (saveState) {
      saveState.textContent = state;
      saveState.classList.toggle("unsaved", diff.length > 0);
    }
    if (barState) {
      barState.textContent = state;
      barState.classList.toggle("unsaved", diff.length > 0);
    }
    if (banner) {
      banner.hidden = !body;
      bannerTitle.textContent = body ? state : "";
      bannerText.textContent = body;
      bannerSubmit.hidden = !submitted();
    }
  }
  function markCriterion(fs, changed) {
    fs.classList.toggle("unsaved", changed);
    let was = fs.querySelector(".was");
    if (!changed) { if (was) was.remove(); return; }
    if (!was) {
      was = document.createElement("p");
      was.className = "was";
      fs.querySelector(".scale").after(was);
    }
    const held = server.answers[fs.dataset.key] || {};
    const local = answers()[fs.dataset.key];
    let text = "Submitted: " + (held.cannot_assess ? "cannot assess" : held.value === null || held.value === undefined ? "no score" : held.value);
    if (!same({ comment: held.comment }, { comment: local.comment })) text += " (comment changed)";
    was.textContent = text;
  }
  function reason(data, status) {
    if (data && typeof data === "object") {
      const parts = Object.entries(data).map(([field, msgs]) => {
        const text = Array.isArray(msgs) ? msgs.join(" ") : String(msgs);
        return ["detail", "answers", "non_field_errors"].includes(field) ? text : field + ": " + text;
      });
      if (parts.length) return parts.join("; ");
    }
    return "the server had an error (" + status + ")";
  }

  // --- drafts ------------------------------------------------------------------------------
  let saveTimer = null;
  let submitting = false;
  let revisionSeconds = false;  // time spent on a revision not yet reported to the server
  function saveDraft(keepalive) {
    if (locked || submitting) return Promise.resolve();
    if (submitted()) return keepalive ? reportRevisionTime() : Promise.resolve();
    if (saving) return saving.then(() => saveDraft(keepalive));  // one at a time, in order
    const sent = answers();
    if (!differing(sent).length) return Promise.resolve();
    const seconds = takeSeconds();
    const notSent = () => { unsentMs += seconds * 1000; };
    saving = fetch(form.dataset.draftUrl, {
      method: "PUT",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify({ answers: sent, time_spent_seconds: seconds }),
      credentials: "same-origin",
      keepalive: !!keepalive,
    }).then((response) => response.json().then((data) => [response, data], () => [response, null]))
      .then(([response, data]) => {
        saving = null;
        if (response.ok && data) {
          follow(data);
          // Saved means the server's answer holds what was sent, not merely a 200.
          const held = keys.every((k) => same(sent[k], server.answers[k]));
          problem = held ? null : "Not saved: the server kept other answers";
          confirmed = held;
        } else {
          notSent();
          // A refusal (4xx) says what to change; a server error (5xx) may pass: try again.
          // A 503 is the site's database outage: its message tells a person to retry, which
          // the page does itself, so it says that instead (and that the answers are kept).
          const why = response.status === 503
            ? "the database is unavailable for a moment, kept in this browser"
            : reason(data, response.status);
          problem = "Not saved: " + why + (response.status >= 500 ? "; will retry" : "");
          if (response.status === 400) refresh();  // e.g. submitted meanwhile from another tab
        }
        remember();
        render();
        if (!problem && unsaved()) scheduleSave(400);  // changed while the request was out
        else if (response.status >= 500) scheduleSave(5000);
      }, () => {
        saving = null;
        notSent();
        problem = "Offline: kept in this browser, not saved yet; will retry";
        render();
        scheduleSave(5000);
      });
    render();
    return saving;
  }
  // Time spent on a revision counts even when it is discarded: a time-only draft (no
  // answers) adds it, and leaves the submitted rating as it is.
  function reportRevisionTime() {
    if (!revisionSeconds && !unsaved()) return Promise.resolve();
    revisionSeconds = false;
    const seconds = takeSeconds();
    return fetch(form.dataset.draftUrl, {
      method: "PUT",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify({ answers: {}, time_spent_seconds: seconds }),
      credentials: "same-origin",
      keepalive: true,
    }).then(() => undefined, () => { unsentMs += seconds * 1000; });
  }
  function scheduleSave(delay) {
    clearTimeout(saveTimer);
    saveTimer = setTimeout(() => saveDraft(false), delay);
  }
  function changed() {
    if (locked) return;
    note = "";
    if (submitted()) revisionSeconds = true;
    if (!unsaved()) { restored = false; problem = null; }
    remember();
    render();
    if (!submitted()) scheduleSave(400);
  }
  // Only the criteria are the rating: the flag's reason (in the same form) is not.
  form.addEventListener("change", (e) => {
    const fs = e.target.closest("fieldset.criterion");
    if (!fs) return;
    changed();
    recheck(fs);
  });
  form.addEventListener("input", (e) => {
    const fs = e.target.closest("fieldset.criterion");
    if (fs && e.target.tagName === "TEXTAREA") { changed(); recheck(fs); }
  });

  // --- errors follow the form ----------------------------------------------------------------
  // After a refused submit the server's reasons stand beside each criterion; from the next
  // change on, a criterion's reasons are the same rules checked here (the server checks them
  // again on the next submit), so "a value is required" goes once a value is given.
  const commentAtOrBelow = form.dataset.commentAtOrBelow === undefined ? null : parseInt(form.dataset.commentAtOrBelow, 10);
  function problems(key) {
    const a = answers()[key];
    if (a.cannot_assess) return [];
    if (a.value === null) return ["a value is required to submit"];
    if (commentAtOrBelow !== null && a.value <= commentAtOrBelow && !a.comment.trim()) {
      return ["a comment is required for a score of " + commentAtOrBelow + " or lower"];
    }
    return [];
  }
  function recheck(fs) {
    const box = fs.querySelector(".errors");
    if (!box || !box.childElementCount) return;  // only criteria that show a reason
    const now = problems(fs.dataset.key);
    const shown = Array.from(box.children).map((p) => p.textContent);
    if (now.join("\n") === shown.join("\n")) return;
    box.replaceChildren(...now.map((text) => { const p = document.createElement("p"); p.className = "errorlist"; p.textContent = text; return p; }));
    if (now.length) fs.setAttribute("aria-invalid", "true"); else fs.removeAttribute("aria-invalid");
  }

  function discard() {
    clearTimeout(saveTimer);
    const back = {};
    for (const k of keys) back[k] = server.answers[k] || { value: null, cannot_assess: false, comment: "" };
    apply(back);
    forget();
    restored = false;
    problem = null;
    note = submitted() ? "Change discarded: your submitted rating is shown" : "Change discarded: the form shows what the server holds";
    render();
  }
  document.getElementById("unsaved-discard").addEventListener("click", discard);

  // Coming back: a copy this browser kept is shown as what it is, never as saved. It is
  // offered only while the server still holds the version it was made from, so a wrong clock
  // on a clinic PC can never discard or resurrect answers.
  try {
    const stored = JSON.parse(localStorage.getItem(storageKey) || "null");
    if (stored && !locked) {
      if (stored.base !== server.updated) {
        const local = stored.answers || {};
        if (differing(local).length) note = "An older unsaved change in this browser was dropped: this rating changed on the server since";
        forget();
      } else if (stored.answers) {
        apply(stored.answers);
        restored = unsaved();
        if (!restored) forget();
      }
    }
  } catch (e) { forget(); }
  render();
  if (unsaved() && !submitted()) scheduleSave(50);  // a kept copy, or answers a refused submit posted

  // --- leaving -----------------------------------------------------------------------------
  // Leaving with anything the server does not hold asks first: a draft is sent once more
  // before that; a revision can only be submitted, so it asks at once.
  const leaveDialog = document.getElementById("leave-dialog");
  const leaveText = document.getElementById("leave-text");
  let leaving = false;
  let onLeave = null;
  function leaveThen(proceed) {
    if (locked || submitting) { leaving = true; proceed(); return; }
    clearTimeout(saveTimer);
    saveDraft(false).then(() => {
      if (!unsaved()) { leaving = true; proceed(); return; }
      leaveText.textContent = submitted()
        ? "Your change to this submitted rating is not saved. The server keeps your submitted rating unless you stay and press Submit revision."
        : "Your latest change is not saved on the server" + (problem ? ": " + problem.replace(/^(Not saved|Offline): /, "").replace(/; will retry$/, "") : "")
          + ". If you leave and keep it, this browser sends it when you come back to this item.";
      onLeave = proceed;
      leaveDialog.returnValue = "";
      leaveDialog.showModal();
    });
  }
  leaveDialog.addEventListener("close", () => {
    const choice = leaveDialog.returnValue;
    const proceed = onLeave;
    onLeave = null;
    if (!proceed || (choice !== "keep" && choice !== "discard")) return;  // stay (or Escape)
    if (choice === "discard") discard();
    else { clearTimeout(saveTimer); remember(); }
    leaving = true;
    proceed();
  });
  function go(url) {
    if (url) leaveThen(() => { window.location.href = url; });
  }
  // Links (queue, pager, header) and other forms (log out) go through the same question.
  document.addEventListener("click", (e) => {
    const link = e.target.closest && e.target.closest("a[href]");
    if (!link || e.defaultPrevented || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
    if (link.target && link.target !== "_self") return;
    if (link.getAttribute("href").startsWith("#") || leaving || !unsaved()) return;
    e.preventDefault();
    go(link.href);
  });
  document.addEventListener("submit", (e) => {
    if (e.target === form || e.target.method === "dialog" || leaving || !unsaved()) return;
    e.preventDefault();
    const other = e.target;
    leaveThen(() => other.submit());
  });
  // Closing the tab or typing another address: only the browser's own question is possible.
  window.addEventListener("beforeunload", (e) => {
    if (leaving || locked || submitting || !unsaved()) return;
    e.preventDefault();
    e.returnValue = "";
  });

  // --- focus between criteria ------------------------------------------------------------
  // One criterion is highlighted, and keyboard focus is in it: Tab into a criterion
  // highlights it; j, k, the arrows and a digit move the highlight and take focus with them
  // (to its checked point, else its first), so a digit, x or an arrow always acts on the
  // criterion that has focus. Loading the page highlights without moving focus or scrolling.
  function highlight(i) {
    if (!fieldsets.length) return;
    active = Math.max(0, Math.min(fieldsets.length - 1, i));
    fieldsets.forEach((fs, j) => fs.classList.toggle("active", j === active));
  }
  function focusCriterion(i) {
    highlight(i);
    const fs = fieldsets[active];
    if (!fs) return;
    const target = fs.querySelector("input[type=radio]:checked") || fs.querySelector("input[type=radio]");
    if (target && !target.disabled) target.focus();
    fs.scrollIntoView({ block: "nearest" });
  }
  fieldsets.forEach((fs, i) => fs.addEventListener("focusin", () => highlight(i)));
  const firstOpen = fieldsets.findIndex((fs) => !fs.querySelector("input[type=radio]:checked"));
  highlight(firstOpen === -1 ? 0 : firstOpen);
  // After a refused submit, focus goes to the first criterion with a reason beside it.
  const firstInvalid = fieldsets.findIndex((fs) => fs.getAttribute("aria-invalid") === "true");
  if (firstInvalid !== -1) focusCriterion(firstInvalid);

  // --- single-key shortcuts can be switched off (WCAG 2.1.4), remembered in this browser ------
  const SHORTCUTS_KEY = "medhelm-shortcuts-off";
  const toggle = document.getElementById("shortcuts-toggle");
  let shortcutsOn = true;
  try { shortcutsOn = localStorage.getItem(SHORTCUTS_KEY) !== "1"; } catch (e) { /* default on */ }
  function showShortcuts() {
    document.documentElement.classList.toggle("shortcuts-off", !shortcutsOn);
    if (toggle) toggle.checked = shortcutsOn;
    const keysList = document.getElementById("legend-keys");
    const offNote = document.getElementById("shortcuts-off-note");
    if (keysList) keysList.hidden = !shortcutsOn;
    if (offNote) offNote.hidden = shortcutsOn;
  }
  if (toggle) {
    toggle.addEventListener("change", () => {
      shortcutsOn = toggle.checked;
      try {
        if (shortcutsOn) localStorage.removeItem(SHORTCUTS_KEY); else localStorage.setItem(SHORTCUTS_KEY, "1");
      } catch (e) { /* only this visit then */ }
      showShortcuts();
    });
  }
  showShortcuts();

  // --- n past the last item, p before the first: say so ------------------------------------
  const navNote = document.getElementById("nav-note");
  let navNoteTimer = null;
  function say(text) {
    if (!navNote) return;
    navNote.textContent = text;
    clearTimeout(navNoteTimer);
    navNoteTimer = setTimeout(() => { navNote.textContent = ""; }, 6000);
  }

  function score(digit) {
    const fs = fieldsets[active];
    if (!fs) return;
    const radio = fs.querySelector("input[type=radio][value='" + digit + "']");
    if (!radio) return;  // outside this criterion's scale
    radio.checked = true;
    const na = fs.querySelector("input[name='c-" + fs.dataset.key + "-na']");
    if (na) na.checked = false;
    changed();
    recheck(fs);
    focusCriterion(active < fieldsets.length - 1 ? active + 1 : active);
  }

  // --- flagging, in the page -------------------------------------------------------------
  // f (or the button) opens a reason box beside the button; the result stays in view. On a
  // flagged item the button removes the flag, and the page says so.
  const flagButton = document.getElementById("flag-button");
  const flagPanel = document.getElementById("flag-panel");
  const flagReason = document.getElementById("flag-reason");
  const flagError = document.getElementById("flag-error");
  const flagState = document.getElementById("flag-state");
  let isFlagged = flagButton.querySelector(".label").textContent.trim() === "Remove flag";
  let flagging = false;
  function openFlag() {
    flagPanel.hidden = false;
    flagButton.setAttribute("aria-expanded", "true");
    flagError.hidden = true;
    flagReason.focus();
  }
  function closeFlag(refocus) {
    flagPanel.hidden = true;
    flagButton.setAttribute("aria-expanded", "false");
    if (refocus) flagButton.focus();
  }
  function flag() {
    if (locked || flagging) return;
    if (isFlagged) { sendFlag(false, ""); return; }
    if (flagPanel.hidden) openFlag(); else closeFlag(true);
  }
  function flagProblem(text) {
    flagError.textContent = text;
    flagError.hidden = false;
    if (flagPanel.hidden) flagState.textContent = text;
  }
  function sendFlag(flagged, why) {
    if (flagged && !why.trim()) { flagProblem("Say why you flag this item."); flagReason.focus(); return; }
    flagging = true;
    fetch(form.dataset.flagUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify({ flagged: flagged, reason: why }),
      credentials: "same-origin",
    }).then((r) => r.json().then((data) => {
      if (!r.ok) { flagProblem("Flag not saved: " + reason(data, r.status)); return; }
      heard(data);
      isFlagged = !!data.flagged;
      flagButton.querySelector(".label").textContent = isFlagged ? "Remove flag" : "Flag item";
      flagState.textContent = isFlagged ? "Flagged for the coordinator: \u201c" + data.flag_reason + "\u201d" : "Flag removed: the coordinator no longer sees this item as flagged.";
      flagReason.value = "";
      closeFlag(true);
    }, () => flagProblem("Flag not saved: the server had an error (" + r.status + ")")),
    () => flagProblem("Flag not saved: offline. Try again when the connection is back."))
      .finally(() => { flagging = false; });
  }
  flagButton.addEventListener("click", flag);
  document.getElementById("flag-send").addEventListener("click", () => sendFlag(true, flagReason.value));
  document.getElementById("flag-cancel").addEventListener("click", () => { flagReason.value = ""; closeFlag(true); });
  flagReason.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); closeFlag(true); }
    else if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); e.stopPropagation(); sendFlag(true, flagReason.value); }
  });

  // A flag moves the assignment's version without touching its answers: the page follows the
  // server, so that a local copy stays tied to the version the server now holds.
  function heard(data) {
    follow(data);
    remember();
    render();
  }
  // Take what the server says it holds (any rater-item response) as the page's server state.
  function follow(data) {
    if (data.status === "submitted" && !submitted()) overtaken = true;
    server.status = data.status;
    server.updated = String(data.updated_at_ms);
    server.answers = data.answers || {};
    showStatus();
  }
  // Ask the server what it holds now (after a refused draft), and show that.
  function refresh() {
    fetch(form.dataset.itemUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then((r) => (r.ok ? r.json().then(heard) : undefined), () => undefined);
  }
  // The same words as rate.html renders, for a status learnt after the page was drawn.
  const STATUS_WORDS = { submitted: "Submitted — you may revise", in_progress: "Draft", pending: "Not started" };
  function showStatus() {
    if (!statusBadge || !STATUS_WORDS[server.status] || statusBadge.classList.contains("status-" + server.status)) return;
    const wasSubmitted = statusBadge.classList.contains("status-submitted");
    statusBadge.textContent = STATUS_WORDS[server.status];
    statusBadge.className = "status status-" + server.status;
    if (submitted() && !wasSubmitted) {
      const progress = document.querySelector("[data-testid=progress]");
      const progressText = document.querySelector("[data-testid=progress-text]");
      if (progress && progressText) {
        progress.value += 1;
        progressText.textContent = progress.value + " submitted";
      }
    }
    if (submitButton) submitButton.querySelector(".label").textContent = submitted() ? "Submit revision" : "Submit";
    document.querySelectorAll("[data-hint]").forEach((p) => { p.hidden = (p.dataset.hint === "submitted") !== submitted(); });
  }

  form.addEventListener("submit", () => {
    clearTimeout(saveTimer);
    document.getElementById("time-spent").value = takeSeconds().toFixed(1);
    // The local copy stays until the server holds the answers: the next visit drops it once
    // they match (a refused or lost POST keeps it, shown as not saved).
    submitting = true;
    leaving = true;
  });

  const texts = document.getElementById("texts");
  document.addEventListener("keydown", (e) => {
    if (leaveDialog.open) return;  // the dialog's own buttons, Tab and Escape
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const typing = e.target.tagName === "TEXTAREA" || (e.target.tagName === "INPUT" && e.target.type === "text");
    if (typing) {
      if (e.key === "Escape" && e.target.closest("fieldset.criterion")) { e.preventDefault(); focusCriterion(active); }
      return;
    }
    if (!shortcutsOn) return;  // every key keeps the browser's own meaning
    // On a focused link, button or checkbox, Enter and Space keep their own meaning.
    if (["A", "BUTTON", "SUMMARY", "SELECT"].includes(e.target.tagName) && (e.key === "Enter" || e.key === " ")) return;
    if (e.target.type === "checkbox" && e.key === " ") return;
    if (e.target === toggle) return;  // the shortcuts switch itself: only Space, Tab
    // In the texts pane the arrows scroll the text.
    const inTexts = texts && texts.contains(e.target);
    if (locked && e.key !== "n" && e.key !== "p") return;
    if (/^[0-9]$/.test(e.key)) { score(e.key); e.preventDefault(); }
    else if (e.key === "j" || (e.key === "ArrowDown" && !inTexts)) { focusCriterion(active + 1); e.preventDefault(); }
    else if (e.key === "k" || (e.key === "ArrowUp" && !inTexts)) { focusCriterion(active - 1); e.preventDefault(); }
    else if (e.key === "c") { const t = fieldsets[active] && fieldsets[active].querySelector("textarea"); if (t) { t.focus(); e.preventDefault(); } }
    else if (e.key === "x") { const fs = fieldsets[active]; const na = fs && fs.querySelector("input[name='c-" + fs.dataset.key + "-na']"); if (na) { na.checked = !na.checked; if (na.checked) fs.querySelectorAll("input[type=radio]").forEach((r) => { r.checked = false; }); changed(); recheck(fs); na.focus(); } }
    else if (e.key === "Enter") { e.preventDefault(); form.requestSubmit(submitButton); }
    else if (e.key === "n") { if (form.dataset.nextUrl) go(form.dataset.nextUrl); else say("This is the last item in your queue: there is no next one."); }
    else if (e.key === "p") { if (form.dataset.prevUrl) go(form.dataset.prevUrl); else say("This is the first item in your queue: there is no previous one."); }
    else if (e.key === "f") { e.preventDefault(); flag(); }
  });

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") { collectTime(); visibleSince = null; saveDraft(true); }
    else { visibleSince = performance.now(); }
  });
  window.addEventListener("pagehide", () => { saveDraft(true); });
})();
