"""Table 2 for a paper: LaTeX (booktabs) and Markdown downloads whose text survives hostile
names, whose numbers are the report's JSON values, and the methods paragraph generated from
the stored method record. The module's two reports (one under hostile names) are computed
once for the module."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess

import pytest
from django.utils.html import escape

from agreement import renderings, services
from agreement.models import ReportSnapshot
from delphi.models import TaxonomyNode
from jury.models import Judge
from tests.agreement.factories import demo_study_with_jury
from tests.support.latex import check_structure, plain_text, tabular_columns, tabular_rows
from tests.support.pdf import pdf_text

PARAMS = {"n_resamples": 40, "seed": 11}
HOSTILE = [
    "rouge_l 100% & co #1",
    "judge $x^2$ ~ {braces} \\textbf{bold} \\",
    "Ärzte\u2013Gruppe 診断 — naïve <b>|pipe|</b> `code` *star* [link](x)",
    "dash--dash --- and\nnew line\ttab \ufeffbom",
    "%comment at start",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_latex_escape_prints_the_name_as_written_and_cannot_break_a_document(name):
    escaped = renderings.latex_escape(name)
    check_structure(escaped)
    assert plain_text(escaped) == printed(name)
    assert "\n" not in escaped


@pytest.mark.parametrize("name", HOSTILE)
def test_markdown_escape_keeps_one_cell_on_one_line(name):
    escaped = renderings.markdown_escape(name)
    assert "\n" not in escaped
    assert not re.search(r"(?<!\\)[|`*_<\[\]$]", escaped)
    assert re.sub(r"\\(.)", r"\1", escaped) == printed(name)


def printed(name: str) -> str:
    """A name as a table prints it: on one line, without a byte-order mark."""
    return re.sub(r"[\n\t]", " ", name.replace("\ufeff", ""))


def _json_cells(snap) -> dict[tuple[str, str], dict]:
    """(row label as printed, column) -> the overall cell as the JSON export carries it."""
    cells = services.export_json(snap)["results"]["cells"]
    return {(printed(c["row"]), c["column"]): c for c in cells if c["section"] == "overall"}


def _close(text: str, value: float) -> bool:
    return abs(float(text.replace("\u2212", "-")) - value) <= 0.0005 + 1e-12


@pytest.fixture(scope="module")
def hostile_once(module_db, built_once) -> ReportSnapshot:
    """A report computed under hostile names, which are then put back: the module's other
    tests see the study as built."""
    with module_db():
        category = TaxonomyNode.objects.filter(kind="category", name__startswith="Clinical")
        (category_pk,) = category.values_list("pk", flat=True)
        category_name = TaxonomyNode.objects.get(pk=category_pk).name
        hostile_items = list(
            built_once.study.items.filter(benchmark="MEDIQA").values_list("pk", flat=True)
        )
        category.update(name=HOSTILE[0])
        Judge.objects.filter(name="gpt-judge").update(name=HOSTILE[1])
        Judge.objects.filter(name="claude-judge").update(name=HOSTILE[2])
        built_once.study.items.filter(pk__in=hostile_items).update(benchmark=HOSTILE[3])
        snapshot = services.create_snapshot(study=built_once.study, actor=None, parameters=PARAMS)
        TaxonomyNode.objects.filter(pk=category_pk).update(name=category_name)
        Judge.objects.filter(name=HOSTILE[1]).update(name="gpt-judge")
        Judge.objects.filter(name=HOSTILE[2]).update(name="claude-judge")
        built_once.study.items.filter(pk__in=hostile_items).update(benchmark="MEDIQA")
        return snapshot


@pytest.fixture
def hostile_snapshot(built, hostile_once) -> ReportSnapshot:
    return copy.deepcopy(hostile_once)


def test_latex_table_is_well_formed_and_holds_the_json_values(hostile_snapshot):
    snap = hostile_snapshot
    tex = services.export_latex(snap)
    check_structure(tex)
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    columns = [c["column"] for c in snap.results["columns"]]
    assert tabular_columns(tex) == 2 + 2 * len(columns)
    rows = tabular_rows(tex)
    header = [plain_text(src) for _, src in rows[0]]
    assert header[2:] == columns  # every name, hostile ones included, printed as written
    by_cell = _json_cells(snap)
    checked = alphas = 0
    label = ""
    for row in rows[2:]:
        if len(row) == 1:  # a group heading
            continue
        if r"$\alpha$" in row[0][1]:  # alpha beneath the ICCs of the row above
            level = plain_text(row[0][1]).split()[-1]
            alphas += _check_alpha_row(row[2:], [by_cell[(label, c)] for c in columns], level)
            continue
        label = plain_text(row[0][1])
        values = row[2:]
        position = 0
        for column in columns:
            span, src = values[position]
            cell = by_cell[(label, column)]
            if span == 2:  # no number: "n.e." or a dash, with its note
                assert cell["estimate"] is None or cell["status"] != "ok"
                position += 1
                continue
            assert cell["status"] == "ok"
            assert _close(plain_text(src), cell["estimate"])
            low, high = plain_text(values[position + 1][1]).strip("()").split(", ")
            assert _close(low, cell["ci_low"]) and _close(high, cell["ci_high"])
            checked += 1
            position += 2
    assert checked >= len(columns)  # at least the all-items row, every column
    assert alphas >= len(columns)  # alpha beneath the ICCs, both levels
    assert {plain_text(r[0][1]) for r in rows[2:]} >= {HOSTILE[0], printed(HOSTILE[3])}


def _check_alpha_row(values: list[tuple[int, str]], cells: list[dict], level: str) -> int:
    """One alpha line of the LaTeX table: per column its estimate and interval, or empty
    where the cell has no alpha; returns how many numbers it checked."""
    assert level in ("interval", "ordinal")
    assert len(values) == 2 * len(cells)
    checked = 0
    for n, cell in enumerate(cells):
        estimate, interval = plain_text(values[2 * n][1]), plain_text(values[2 * n + 1][1])
        if cell.get(f"alpha_{level}") is None or cell["status"] != "ok":
            assert estimate == interval == ""
            continue
        assert _close(estimate, cell[f"alpha_{level}"])
        low, high = interval.strip("()").split(", ")
        assert _close(low, cell[f"alpha_{level}_ci_low"])
        assert _close(high, cell[f"alpha_{level}_ci_high"])
        checked += 1
    return checked


def _md_cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def test_markdown_table_has_one_cell_per_column_and_the_json_values(hostile_snapshot):
    snap = hostile_snapshot
    md = services.export_markdown(snap)
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    columns = [c["column"] for c in snap.results["columns"]]
    kinds = [c["column_kind"] for c in snap.results["columns"]]
    header = [re.sub(r"\\(.)", r"\1", c) for c in _md_cells(lines[0])]
    assert header == ["Items", "n", *(f"{c} ({k})" for c, k in zip(columns, kinds, strict=True))]
    by_cell = _json_cells(snap)
    checked = alphas = approximate = 0
    number = r"(-?[\d.]+) \((-?[\d.]+), (-?[\d.]+)\)"
    for line in lines[2:]:
        cells = _md_cells(line)
        assert len(cells) == 2 + len(columns), line
        if cells[0].startswith("*"):
            continue
        label = re.sub(r"\\(.)", r"\1", cells[0].removeprefix("&emsp;"))
        for column, text in zip(columns, cells[2:], strict=True):
            cell = by_cell[(label, column)]
            icc, *alpha_lines = text.split("<br>")
            m = re.fullmatch(number + r"(<sup>\d+</sup>)?", icc)
            if m is None:
                assert cell["status"] != "ok" and not alpha_lines
                continue
            assert _close(m.group(1), cell["estimate"])
            assert _close(m.group(2), cell["ci_low"]) and _close(m.group(3), cell["ci_high"])
            # an interval on fewer items than the simulated coverage was checked for is
            # marked approximate, with the note saying so; others are not marked
            below = snap.method["intervals"]["approximate_below_items"]
            assert (m.group(4) is not None) == (cell["n_items"] < below), (label, column)
            if m.group(4):
                note = int(m.group(4)[5:-6])
                assert f"<sup>{note}</sup> approximate interval" in md
                approximate += 1
            checked += 1
            levels = [lv for lv in ("interval", "ordinal") if cell.get(f"alpha_{lv}") is not None]
            assert len(alpha_lines) == len(levels), text
            for level, alpha_line in zip(levels, alpha_lines, strict=True):
                m = re.fullmatch(f"\u03b1 {level} {number}", alpha_line)
                assert m is not None, alpha_line
                assert _close(m.group(1), cell[f"alpha_{level}"])
                assert _close(m.group(2), cell[f"alpha_{level}_ci_low"])
                assert _close(m.group(3), cell[f"alpha_{level}_ci_high"])
                alphas += 1
    assert checked >= len(columns)
    assert alphas >= len(columns)
    assert approximate == checked  # the demo-shaped study has fewer than 100 items


def test_methods_paragraph_states_the_stored_method(report):
    snap = report
    text = services.methods_text(snap)
    method = snap.method
    for fact in (
        method["forms"]["machine_vs_clinicians"],
        method["standardisation"],
        method["composite"],
        method["pairwise_rule"],
        method["forms"]["alpha"].rstrip("."),
        method["ci_method"],
        f"{method['confidence'] * 100:g}%",
        f"{method['n_resamples']:,} resamples",
        f"seed {method['seed']}",
        snap.input_hash,
        *(f"{p} {method['package_versions'][p]}" for p in ("numpy", "pandas", "krippendorff")),
        f"pingouin {method['package_versions']['pingouin']}",
        method["intervals"]["by_statistic"]["machine_vs_clinicians"],
        method["intervals"]["by_statistic"]["difference"],
        f"from {method['intervals']['approximate_below_items']} items on",
    ):
        assert fact in text, fact
    # generated, not written: another stored record gives another paragraph
    snap.method = {**method, "seed": 424242, "n_resamples": 2500, "confidence": 0.9}
    changed = services.methods_text(snap)
    assert "seed 424242" in changed and "2,500 resamples" in changed and "90% " in changed
    assert services.methods_text(snap) in services.export_markdown(snap).replace("\\", "")
    assert renderings.latex_escape(changed) in services.export_latex(snap)


def test_paper_downloads_on_the_page_and_through_the_api(built, report, client, api_as):
    snap = report
    client.force_login(built.members.researcher)
    page = client.get(f"/studies/{built.study.pk}/agreement/{snap.pk}/").content.decode()
    assert 'data-testid="methods-paragraph"' in page and 'data-copy="methods-paragraph"' in page
    assert escape(services.methods_text(snap)) in page
    base = f"/studies/{built.study.pk}/agreement/{snap.pk}/report"
    tex = client.get(base + ".tex")
    assert tex["Content-Type"].startswith("application/x-tex")
    assert 'filename="agreement-table2-' in tex["Content-Disposition"]
    assert tex.content.decode() == services.export_latex(snap)
    md = client.get(base + ".md")
    assert md["Content-Type"].startswith("text/markdown")
    assert md.content.decode() == services.export_markdown(snap)
    api = api_as(built.members.researcher)
    root = f"/api/studies/{built.study.pk}/agreement/reports/{snap.pk}"
    assert api.get(root + "/latex/").content.decode() == services.export_latex(snap)
    assert api.get(root + "/markdown/").content.decode() == services.export_markdown(snap)
    assert api.get(root + "/methods/").json() == {"text": services.methods_text(snap)}
    clinician = api_as(built.members.clinicians[0])
    assert clinician.get(root + "/latex/").status_code == 403


LATIN_HOSTILE = [*HOSTILE[:2], "Ärzte\u2013Gruppe naïve <b>|pipe|</b> `code` *star* [link](x)"]


@pytest.mark.skipif(not shutil.which("pdflatex"), reason="no pdflatex (apt-get install texlive)")
def test_the_latex_download_compiles_with_pdflatex(built, client, tmp_path):
    """With a real LaTeX: the table and the methods paragraph, hostile Latin-script names in
    every place a name goes, compile in a plain article with booktabs (non-Latin scripts
    need XeLaTeX or LuaLaTeX, as the file says)."""
    TaxonomyNode.objects.filter(kind="category", name__startswith="Clinical").update(
        name=LATIN_HOSTILE[0]
    )
    Judge.objects.filter(name="gpt-judge").update(name=LATIN_HOSTILE[1])
    Judge.objects.filter(name="claude-judge").update(name=LATIN_HOSTILE[2])
    built.study.items.filter(benchmark="MEDIQA").update(benchmark=HOSTILE[3])
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    client.force_login(built.members.researcher)
    tex = client.get(f"/studies/{built.study.pk}/agreement/{snap.pk}/report.tex").content
    (tmp_path / "table2.tex").write_bytes(tex)
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{booktabs}\n"
        "\\usepackage[a4paper,landscape,margin=1cm]{geometry}\n"
        "\\begin{document}\n\\input{table2}\n\\end{document}\n"
    )
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    log = (tmp_path / "paper.log").read_text(errors="replace")
    assert "Missing character" not in log  # every character has a glyph
    text = pdf_text((tmp_path / "paper.pdf").read_bytes())
    for name in (LATIN_HOSTILE[0], "rouge_l_f1", "MedCalc-Bench"):
        assert name in text, name
    assert (tmp_path / "paper.pdf").read_bytes().startswith(b"%PDF")


def test_not_estimable_cells_print_the_mark_and_their_reason(db):
    """The demo's clinician-pair ICC of -20.7: "n.e." in the cell, the reason in a note, no
    number, in both tables."""
    study = demo_study_with_jury()
    snap = services.create_snapshot(study=study, actor=None, parameters=PARAMS)
    cells = [c for c in snap.results["cells"] if c["section"] == "overall"]
    not_estimable = [c for c in cells if c["status"] == "not_estimable"]
    assert not_estimable
    tex, md = services.export_latex(snap), services.export_markdown(snap)
    check_structure(tex)
    rows = {plain_text(r[0][1]): r for r in tabular_rows(tex)[2:] if len(r) > 1}
    columns = [c["column"] for c in snap.results["columns"]]
    for c in not_estimable:
        assert c["reason"] in plain_text(tex)
        assert renderings.markdown_escape(c["reason"]) in md
        entries, position = rows[c["row"]], 2
        for _ in range(columns.index(c["column"])):  # an ok cell takes two entries
            position += 1 if entries[position][0] == 2 else 2
        span, src = entries[position]
        assert span == 2 and plain_text(src) == "n.e."


def test_page_states_each_statistics_interval_and_marks_small_cells_approximate(
    built, report, client
):
    snap = report
    intervals = snap.method["intervals"]
    assert intervals["by_statistic"]["machine_vs_clinicians"].startswith(snap.method["ci_method"])
    client.force_login(built.members.researcher)
    page = client.get(f"/studies/{built.study.pk}/agreement/{snap.pk}/").content.decode()
    stated = page.split('data-testid="interval-per-statistic">')[1].split("</dd>")[0]
    for text in intervals["by_statistic"].values():
        assert escape(text) in stated
    assert "bench/bench_coverage.py" in stated
    ok = [c for c in snap.results["cells"] if c["status"] == "ok" and c["ci_low"] is not None]
    small = [c for c in ok if c["n_items"] < intervals["approximate_below_items"]]
    assert small  # the demo-shaped study has fewer items than the threshold
    assert page.count('data-testid="approximate-interval"') == len(small)
    diffs = [
        d for d in snap.results["differences"] if d["status"] == "ok" and d["ci_low"] is not None
    ]
    assert diffs and page.count('data-testid="approximate-difference"') == len(diffs)
    # a report computed before the choice was recorded says so and marks nothing
    snap.method = {k: v for k, v in snap.method.items() if k != "intervals"}
    old = renderings.table2(snap.results, snap.method)
    # (a clinician cell in the two-way form still names its form: issues 16 and 21)
    notes = [c.note or "" for row in old.rows for c in row.cells if c.estimate]
    assert not any("approximate" in n for n in notes)
    assert all(n == "" or n.startswith("clinician-clinician: two-way") for n in notes)
