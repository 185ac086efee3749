"""axe-core accessibility checks inside a Playwright page.

The script is the npm package that `make axe` installs (pinned in the Makefile); it is
injected into the page under test and run there, so the check sees the page exactly as the
browser rendered it, styles and scripts included.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.unavailable import unavailable

AXE_JS = (
    Path(__file__).resolve().parents[2]
    / ".cache"
    / "npm"
    / "node_modules"
    / "axe-core"
    / "axe.min.js"
)

# Serious and critical are the impacts a screen-reader or keyboard user cannot work around.
BLOCKING_IMPACTS = frozenset({"serious", "critical"})


def axe_script() -> str:
    if not AXE_JS.exists():
        message = f"axe-core is not installed at {AXE_JS} (run `make axe`)"
        unavailable(message)
    return AXE_JS.read_text(encoding="utf-8")


def axe_violations(page, *, impacts: frozenset[str] = BLOCKING_IMPACTS) -> list[dict]:
    """The axe violations of the page as it is now, limited to the given impacts."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        # evaluated through the DevTools protocol, not an inline <script> tag, which the
        # site's Content-Security-Policy refuses
        page.evaluate(axe_script() + "\n;true")
    result = page.evaluate(
        """async () => {
            const r = await window.axe.run(document, {resultTypes: ['violations']});
            return r.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary})),
            }));
        }"""
    )
    return [v for v in result if v["impact"] in impacts]


def describe(violations: list[dict]) -> str:
    """One readable line per failing element, for the assertion message."""
    lines = []
    for v in violations:
        for node in v["nodes"]:
            lines.append(f"[{v['impact']}] {v['id']}: {v['help']} at {node['target']}")
    return "\n".join(lines)


def assert_accessible(page, where: str) -> None:
    violations = axe_violations(page)
    assert not violations, (
        f"axe found serious or critical violations on {where}:\n{describe(violations)}"
    )
