"""The rating page's text formatter (annotation/templatetags/rater_text.py): a small
markdown subset on escaped text, in time linear in the text, whatever markers it holds."""

from __future__ import annotations

import random
import re
import sys
import time

import pytest
from django.utils.html import escape

from annotation.templatetags.rater_text import rater_markdown

ORDINARY = [
    ("Plain text.", "<p>Plain text.</p>"),
    (
        "Take **two** tablets *daily* with `water`.",
        "<p>Take <strong>two</strong> tablets <em>daily</em> with <code>water</code>.</p>",
    ),
    (
        "# Plan\n\n- **Metformin** 500 mg\n- *Lisinopril*\n\n1. Check labs\n2) Review in `2 weeks`",
        "<h3>Plan</h3>\n<ul>\n<li><strong>Metformin</strong> 500 mg</li>\n"
        "<li><em>Lisinopril</em></li>\n</ul>\n<ol>\n<li>Check labs</li>\n"
        "<li>Review in <code>2 weeks</code></li>\n</ol>",
    ),
    (
        "Line one\nline two\r\nline three\rline four",
        "<p>Line one<br>line two<br>line three<br>line four</p>",
    ),
    ("snake_case_name and 2*3*4 = 24", "<p>snake_case_name and 2*3*4 = 24</p>"),
    (
        "**bold with *italic* inside**",
        "<p><strong>bold with <em>italic</em> inside</strong></p>",
    ),
    (
        "*italic with **bold** inside*",
        "<p><em>italic with <strong>bold</strong> inside</em></p>",
    ),
    ("#### Four\n##### five is text", "<h6>Four</h6>\n<p>##### five is text</p>"),
    (
        "  * indented bullet\n\t- tab bullet",
        "<ul>\n<li>indented bullet</li>\n<li>tab bullet</li>\n</ul>",
    ),
    ("**`code`** in bold", "<p><strong><code>code</code></strong> in bold</p>"),
]

TRICKY = [
    # unmatched markers stay text
    ("*unmatched", "<p>*unmatched</p>"),
    ("**unmatched bold", "<p>**unmatched bold</p>"),
    ("a *b and c* d *e", "<p>a <em>b and c</em> d *e</p>"),
    ("*", "<p>*</p>"),
    ("**", "<p>**</p>"),
    ("``", "<p>``</p>"),
    ("`unclosed *x*", "<p>`unclosed <em>x</em></p>"),
    # markers never pair across lines, and a marker may end a line
    ("x **a\n*b** y*", "<p>x **a<br><em>b*</em> y*</p>"),
    ("ends with *star*", "<p>ends with <em>star</em></p>"),
    ("ends with a star*\n*starts one", "<p>ends with a star*<br>*starts one</p>"),
    (
        "- item **bold**\n- item *open",
        "<ul>\n<li>item <strong>bold</strong></li>\n<li>item *open</li>\n</ul>",
    ),
    # nested and overlapping markers
    ("**a*", "<p><em>*a</em></p>"),
    ("*a**", "<p><em>a*</em></p>"),
    ("***", "<p><em>*</em></p>"),
    # inside code a star is text (a character reference, shown as "*"), never a marker
    ("`a*b*c`", "<p><code>a&#42;b&#42;c</code></p>"),
    ("`**x**` and **y**", "<p><code>&#42;&#42;x&#42;&#42;</code> and <strong>y</strong></p>"),
    ("*a `b*` c*", "<p><em>a <code>b&#42;</code> c</em></p>"),
    ("`a``b`", "<p><code>a</code><code>b</code></p>"),
]


@pytest.mark.parametrize(("text", "html"), ORDINARY + TRICKY)
def test_the_markdown_subset(text, html):
    assert rater_markdown(text) == html


def test_nothing_given_renders_nothing():
    assert rater_markdown(None) == rater_markdown("") == ""


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script>",
        "**<img src=x onerror=alert(1)>**",
        "*<b>x</b>*",
        "`<script>`*",
        "# <h1>head</h1>\n- <a href='javascript:x'>a</a>\n1. \"quoted\" & more",
        "`a` <i>`b`</i> *`<u>`*",
    ],
)
def test_every_character_of_the_text_is_escaped(text):
    html = rater_markdown(text)
    tags = re.findall(r"</?([a-z0-9]+)", html)
    assert set(tags) <= {"p", "br", "strong", "em", "code", "ul", "ol", "li", "h3", "h4", "h5"}
    assert "<script" not in html and "<img" not in html and "<a " not in html
    # the text itself comes back, escaped, once the formatter's tags are removed
    plain = re.sub(r"</?(p|br|strong|em|code|ul|ol|li|h\d)>", "", html).replace("&#42;", "*")
    for word in ("script", "img", "onerror", "quoted", "head"):
        if word in text:
            assert word in plain
    for char, escaped in (("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&#x27;")):
        assert char not in plain
        assert plain.count(escaped) == text.count(char)


# --- the same HTML as the patterns uncut -------------------------------------------------------

_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![\*\w])\*(?=\S)(.+?)(?<=\S)\*(?![\*\w])")
_CODE = re.compile(r"`([^`\n]+)`")


def reference_inline(line: str) -> str:
    """The formatter's inline steps as the patterns give them on a whole line (quadratic in
    the worst case: only for short texts here)."""
    line = _CODE.sub(r"<code>\1</code>", line)
    return _ITALIC.sub(r"<em>\1</em>", _BOLD.sub(r"<strong>\1</strong>", line))


PIECES = ["*", "**", "***", " ", "a", "b", "_", "1", "\t", "é", "<", "&", "'", "x*", "*y", "`a`"]


def test_on_random_lines_the_inline_steps_match_the_uncut_patterns():
    """Random lines of markers, words and code spans without stars (where the uncut patterns
    also format inside code): the same inline HTML, line by line."""
    rng = random.Random(30)
    for _ in range(20_000):
        line = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 30)))
        html = rater_markdown("x " + line)  # "x " keeps it a paragraph, whatever it starts with
        assert html == "<p>" + reference_inline(escape("x " + line)) + "</p>", line


# --- time ---------------------------------------------------------------------------------------

MEGABYTE = 1_000_000


def sized(shape: str, size: int) -> str:
    return (shape * (size // len(shape) + 1))[:size]


def skip_under_a_line_tracer() -> None:
    """Under a line tracer (coverage.py's, `make test PYTEST_ARGS='--cov'`) every Python line
    the renderer runs per marker costs the tracer's call: the hostile text then took 4.7-5.3x
    the plain one (2 failures of a coverage run), a ratio of the tracer, not of the search."""
    if sys.gettrace() is not None:
        pytest.skip("timing ratios under a line tracer measure the tracer")


def best_time(text: str, repeat: int = 5) -> float:
    """The least CPU time of a few renderings (CPU time: other processes on the machine
    slow the wall clock, not this)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        rater_markdown(text)
        best = min(best, time.process_time() - start)
    return best


# Markers that pair with nothing: each used to search to the end of its line.
UNMATCHED = {
    "italic openers": lambda size: sized("*a ", size),
    "bold openers": lambda size: sized("**a ", size),
    "backtick runs": lambda size: "`" * size,
    "backtick runs and spaces": lambda size: sized("`" * 1000 + " ", size),
    "star bullet lines": lambda size: sized("* \n", size),
    "long lines without markers": lambda size: sized("no markers here " * 5000 + "\n", size),
}
# Markers that pair: the HTML grows with them, in proportion.
PAIRED = {
    "italic openers then one closer": lambda size: sized("*a ", size - 2) + "b*",
    "bold openers then one closer": lambda size: sized("**a ", size - 3) + "b**",
    "italic pairs": lambda size: sized("*a* ", size),
    "bold pairs": lambda size: sized("**a** ", size),
    "code spans with stars": lambda size: sized("`*a*` ", size),
}


@pytest.mark.parametrize("make", list(UNMATCHED.values()), ids=list(UNMATCHED))
def test_a_megabyte_of_unmatched_markers_renders_within_4x_of_plain_text(make):
    """The plain text is the same text with each marker a letter: same size, same lines.
    A marker costs one step of a regular expression's search (a few times a plain
    character's share); searching to the end of the line from each made it thousands."""
    skip_under_a_line_tracer()
    hostile = make(MEGABYTE)
    plain = hostile.replace("*", "x").replace("`", "x")
    assert len(hostile) == len(plain) == MEGABYTE
    hostile_time, plain_time = best_time(hostile), best_time(plain)
    assert hostile_time <= 4 * plain_time, (hostile_time, plain_time)


@pytest.mark.parametrize("make", list(PAIRED.values()), ids=list(PAIRED))
def test_four_times_the_paired_markers_take_about_four_times_the_time(make):
    """Linear: a megabyte takes about 4 times what a quarter of it takes, at most 8 (16 if it
    were quadratic). Four times the text, not twice: between 2 and 4 a loaded machine ate the
    margin (3.0x against a limit of 3, in a run measuring coverage beside other work)."""
    skip_under_a_line_tracer()
    quarter, whole = best_time(make(MEGABYTE // 4)), best_time(make(MEGABYTE))
    assert whole <= 8 * quarter, (whole, quarter)
