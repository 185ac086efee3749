"""Content-Security-Policy in the browser: a page's violations, as the browser reports them.

Before any script of the page runs, a listener records every `securitypolicyviolation`
event; Chromium's console messages about the policy are recorded too.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page

#: Installed before the page's own scripts: every violation, as the browser reports it.
LISTEN = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push({directive: e.violatedDirective, blocked: e.blockedURI,
                               sample: e.sample, source: e.sourceFile, line: e.lineNumber});
});
"""


class Watch:
    """The policy violations a page reported: its events and Chromium's console lines."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.console: list[str] = []
        page.add_init_script(LISTEN)
        page.on("console", self._console)

    def _console(self, message: Any) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            self.console.append(message.text)

    def violations(self) -> list[Any]:
        events = self.page.evaluate("() => window.__cspViolations || []")
        return [*events, *self.console]


def policy_of(response: Any) -> str:
    """The response's policy; it must have one, and one that allows no inline code."""
    policy = response.headers.get("content-security-policy", "")
    assert policy, f"{response.url}: no Content-Security-Policy header"
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, policy
    return policy


def open_page(page: Page, url: str, status: int = 200) -> Any:
    """Open `url`, expect `status`, and wait until the page's requests have settled."""
    response = page.goto(url)
    assert response is not None and response.status == status, f"{url}: {response.status}"
    page.wait_for_load_state("networkidle")
    return response
