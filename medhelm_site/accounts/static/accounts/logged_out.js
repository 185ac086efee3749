// After a logout: forget the rating page's drafts kept in this browser (the logout response
// also sends Clear-Site-Data: "storage"; this covers a browser that ignores it).
(function () {
  "use strict";
  try {
    const doomed = [];
    for (let i = 0; i < localStorage.length; i += 1) {
      const key = localStorage.key(i);
      if (key && key.indexOf("medhelm-draft-") === 0) doomed.push(key);
    }
    doomed.forEach(function (key) { localStorage.removeItem(key); });
  } catch (e) { /* storage unavailable: nothing stored either */ }
})();
