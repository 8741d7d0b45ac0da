"""The report as Markdown (``report.md``), one self-contained HTML page (``report.html``) and a claims table.

The HTML page opens offline: PNG/SVG figures are embedded as base64 data URIs and each CircuitsVis attention
view is inlined (its ``<div>`` in the figure, its render call in one module script at the end of the page, with
CircuitsVis' JavaScript bundle included once); an HTML page of another form is embedded whole in an
``<iframe srcdoc>``.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from analyses.report import scale
from mechrecall.claims import (
    NOT_REPRODUCED,
    PAPER_SCALE,
    PARTIAL,
    REPRODUCED,
    label,
    scale_words,
    summary,
    summary_by_class,
)

COLUMNS = ("claim", "paper", "ours", "control", "rule", "verdict", "scale", "preset", "seeds")
CHECK_COLUMNS = ("claim", "ours", "control", "rule", "verdict", "seeds")  # a check has no paper number, no scale
KEPT_COLUMNS = ("claim", "paper", "ours", "control", "rule", "verdict", "scale", "seeds", "kept", "device")
KEPT_TITLE = "#### At the paper's scale: kept runs (committed results, not re-run here)"
JUDGED = (REPRODUCED, PARTIAL, NOT_REPRODUCED)
CLASS_WORDS = {"extension": "extensions", "ablation": "ablations", "check": "checks"}
VERDICT_COLOURS = {
    "reproduced": "#d7f5dd",
    "partial": "#fff3c4",
    "not reproduced": "#fbd5d5",
    "vacuous": "#f3d5fb",
    "not comparable": "#dde6f5",
    "not run": "#e8e8e8",
}


def _num(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _cell(row: Mapping[str, Any], column: str) -> str:
    value = row.get(column)
    if column == "paper":
        return _num(value)
    if column == "ours":
        spread = row.get("spread")
        return _num(value) + (f" [{_num(spread[0])}, {_num(spread[1])}]" if spread and value is not None else "")
    if column == "control":
        what = f" ({row['control_is']})" if row.get("control_is") else ""
        return _num(value) + what if value is not None or what else "—"
    if column == "seeds":
        seeds = ", ".join(str(s) for s in value or []) or "—"
        each = row.get("per_seed") or []
        return f"{seeds} ({row.get('passed', 0)}/{len(each)} passed)" if len(each) > 1 else seeds
    if column == "claim":
        where = f" ({row['where']})" if row.get("where") else ""
        return f"{value}{where}"
    if column == "verdict" and row.get("reason") and value == "not run":
        return f"not run: {row['reason']}"
    if column == "verdict" and value == "vacuous":
        return "vacuous: the control passes the rule too"
    if column == "verdict":
        return label(row)
    if column == "scale":
        return scale_words(row)
    if column == "class":
        return row_class(row)
    if column == "kept" and row.get("changed"):  # a run at the paper's sizes but for these fields
        return f"{value} (the paper's sizes but {', '.join(row['changed'])})"
    return "" if value is None else str(value)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def claims_table_md(
    rows: Iterable[Mapping[str, Any]], experiment_column: bool = False, columns: Sequence[str] = COLUMNS
) -> str:
    columns = (("experiment",) if experiment_column else ()) + tuple(columns)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_md_escape(_cell(row, c)) for c in columns) + " |")
    return "\n".join(lines)


def _summary_line(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "no claims"


def scale_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """The ``paper`` rows' verdicts in three groups: judged at the paper's scale (``paper``), judged at reduced
    scale (``reduced``; a run that declares no scale counts here too: nothing shows it reached the paper's size),
    and the rest (``other``: vacuous, not comparable, not run)."""
    papers = [r for r in rows if row_class(r) == "paper"]
    judged = [r for r in papers if r["verdict"] in JUDGED]
    at_paper = [r for r in judged if r.get("at_scale") == PAPER_SCALE]
    reduced = [r for r in judged if r.get("at_scale") != PAPER_SCALE]
    other = summary(r for r in papers if r["verdict"] not in JUDGED)
    return {
        "paper": {v: n for v, n in summary(at_paper).items() if v in JUDGED},
        "reduced": {v: n for v, n in summary(reduced).items() if v in JUDGED},
        "other": {v: n for v, n in other.items() if v not in JUDGED},
    }


def headline(rows: Sequence[Mapping[str, Any]]) -> str:
    """The report's headline: the paper's claims reproduced at the paper's scale apart from those at reduced scale
    (a reduced-scale verdict never reads as a plain one), then extensions, ablations and checks apart (a check is an
    identity of the code, never one of the paper's claims)."""
    counts, by_class = scale_counts(rows), summary_by_class(rows)
    text = (
        f"paper claims at the paper's scale: {_summary_line(counts['paper'])}; "
        f"at reduced scale: {_summary_line(counts['reduced'])}"
    )
    if any(counts["other"].values()):
        text += f"; {_summary_line(counts['other'])}"
    for kind, words in CLASS_WORDS.items():
        if any(by_class[kind].values()):
            text += f"; {words}: {_summary_line(by_class[kind])}"
    return text


def _by_paper(report: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    papers: dict[str, list[Mapping[str, Any]]] = {}
    for section in report["experiments"]:
        papers.setdefault(section["paper"] or section["experiment"], []).append(section)
    return papers


def _rows(report: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    return [r for r in report["claims"] if r["experiment"] == name]


CHECKS_TITLE = (
    "Checks — identities of the code (its own closed form, two implementations of one computation): tests of the "
    "code, never counted among the paper's claims:"
)


def kept_line(report: Mapping[str, Any]) -> str:
    """`` Kept runs at the paper's sizes (committed, not re-run): …`` (and the rows of kept runs with a preset field
    changed, counted apart) — or nothing without kept rows."""
    kept = report.get("kept") or []
    full, changed = [r for r in kept if not r.get("changed")], [r for r in kept if r.get("changed")]
    line = f" Kept runs at the paper's sizes (committed, not re-run): {headline(full)}." if full else ""
    return line + (f" Kept runs with a preset field changed: {headline(changed)}." if changed else "")


def _kept(report: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    """Experiment ``name``'s rows from the kept paper-scale runs (``report["kept"]``)."""
    return [r for r in report.get("kept", []) if r.get("experiment") == name]


def _split_checks(rows: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """``(claims, checks)``: the rows of the claims table, and the rows of class ``check`` shown apart."""
    return [r for r in rows if row_class(r) != "check"], [r for r in rows if row_class(r) == "check"]


def markdown(report: Mapping[str, Any]) -> str:
    """``report.md``: a section per paper, per experiment its claims table and its figures with captions."""
    out = [
        f"# Reproduction report ({report['preset']} preset)",
        "",
        f"Created {report['created']}. {_cap(headline(report['claims']))}.{kept_line(report)} "
        "Every row comes from the experiments' `results.json`; verdicts are recomputed from each row's rule, its "
        "control (the same measurement on the untrained model, the model without the mechanism, or a perturbed "
        "input: a rule its control passes is `vacuous`) and the seeds' numbers.",
        "",
        *overview_md(report, anchors=False),
        "",
        *[f"- **Rule not from the policy:** {p}" for p in report.get("rule_problems", [])],
    ]
    for paper, sections in _by_paper(report).items():
        out += [f"## {paper}", ""]
        for s in sections:
            out += [f"### `{s['experiment']}` — preset {s['preset'] or '?'}, {_seeds(s)}", ""]
            if s["status"] == "failed":
                out += [f"**Failed:** `{_md_escape(s['error'])}` (logs: `report/logs/{s['experiment']}.*.log`)", ""]
            rows, checks = _split_checks(_rows(report, s["experiment"]))
            out += [claims_table_md(rows) if rows else "_No claims recorded._", ""]
            if checks:
                out += [CHECKS_TITLE, "", claims_table_md(checks, columns=CHECK_COLUMNS), ""]
            if kept := _kept(report, s["experiment"]):
                out += [KEPT_TITLE, "", claims_table_md(kept, columns=KEPT_COLUMNS), ""]
            for fig in s["figures"]:
                caption = _md_escape(f"{fig['file']} — {fig['caption']}")
                if not fig["file"]:
                    out += [f"- {_md_escape(fig['caption'])}"]
                elif fig["file"].endswith(".html"):
                    out += [f"- [{caption}](../{fig['file']}) (interactive attention view)"]
                else:
                    out += [f"![{caption}](../{fig['file']})", "", f"*{caption}*", ""]
            out.append("")
            for sweep in scale.of_experiment(report, s["experiment"]):
                out += scale.sweep_md(sweep, f"../{sweep['figure']}" if sweep["figure"] else None)
    if scale.elsewhere(report):
        out += ["## Sweeps of experiments not in this report", ""]
        for sweep in scale.elsewhere(report):
            out += scale.sweep_md(sweep, f"../{sweep['figure']}" if sweep["figure"] else None)
    return "\n".join(out)


CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:4px 6px;
vertical-align:top}th{background:#f3f3f3}figure{margin:1.5em 0}figure img{max-width:100%}
figcaption{font-size:13px;color:#555}iframe{width:100%;height:640px;border:1px solid #ccc}
.failed{background:#fbd5d5;padding:.5em;border-left:4px solid #c00;white-space:pre-wrap;font-family:monospace}
"""


# After loading, mark every figure as rendered or not (a decoded image; an attention view whose heads were drawn):
# a reader sees nothing of it, a headless browser's DOM dump shows it (tests/test_reproduce.py).
MARK_RENDERED = """
function markRendered(){
  document.querySelectorAll('figure img').forEach(function(i){i.dataset.rendered=i.naturalWidth>0?'yes':'no';});
  document.querySelectorAll('figure iframe').forEach(function(f){
    var n=0;try{n=f.contentDocument.querySelectorAll('canvas').length;}catch(e){}
    f.dataset.rendered=n>0?'yes':'no';f.dataset.canvases=String(n);});
  document.querySelectorAll('figure div.attention').forEach(function(d){
    var n=d.querySelectorAll('canvas').length;d.dataset.rendered=n>0?'yes':'no';d.dataset.canvases=String(n);});
}
window.addEventListener('load',function(){markRendered();setTimeout(markRendered,1500);});
"""


_CV = re.compile(
    r'<div id="(?P<id>circuits-vis-[^"]+)"[^>]*?/?>\s*<script crossorigin type="module">(?P<bundle>.*)'
    r"CircuitsVis\.render\(\s*\"(?P=id)\",(?P<call>.*?)\)\s*</script>",
    re.S,
)


class _Bundle:
    """The CircuitsVis bundle, included once, and the render calls of every attention view on the page."""

    def __init__(self) -> None:
        self.code: str | None = None
        self.calls: list[str] = []

    def add(self, page: str) -> str | None:
        """The ``<div>`` that holds ``page``'s view once the bundle runs (None: not a CircuitsVis page like ours)."""
        match = _CV.search(page)
        if match is None or (self.code is not None and match.group("bundle") != self.code):
            return None
        self.code = match.group("bundle")
        target = f"cv-view-{len(self.calls)}"
        self.calls.append(f'CircuitsVis.render("{target}",{match.group("call")});')
        return target

    def script(self) -> str:
        if self.code is None:
            return ""
        # one module script: the bundle's `var CircuitsVis` is module-scoped, so the calls go in the same one
        return '<script type="module">' + self.code + "\n" + "\n".join(self.calls) + "</script>"


def _figure_html(root: Path, fig: Mapping[str, Any], bundle: _Bundle | None = None) -> str:
    if not fig["file"]:
        return f'<p class="note">{html.escape(fig["caption"])}</p>'
    path = root / fig["file"]
    caption = html.escape(f"{fig['file']} — {fig['caption']}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f'<figure class="missing"><figcaption>{caption} (missing: {html.escape(str(exc))})</figcaption></figure>'
    suffix = path.suffix.lower()
    inline = bundle.add(data.decode("utf-8")) if suffix == ".html" and bundle is not None else None
    if inline is not None:
        body = f'<div class="attention" id="{inline}" title="{caption}"></div>'
    elif suffix == ".html":  # any other self-contained page: embedded whole
        doc = html.escape(data.decode("utf-8"), quote=True)
        body = f'<iframe class="attention" title="{caption}" srcdoc="{doc}"></iframe>'
    elif suffix in (".png", ".svg", ".jpg", ".jpeg"):
        mime = {".png": "image/png", ".svg": "image/svg+xml"}.get(suffix, "image/jpeg")
        body = f'<img alt="{caption}" src="data:{mime};base64,{base64.b64encode(data).decode()}">'
    else:
        body = f"<p>{html.escape(path.name)} ({len(data)} bytes, not embedded)</p>"
    return f"<figure>{body}<figcaption>{caption}</figcaption></figure>"


def html_page(report: Mapping[str, Any], root: str | Path) -> str:
    """``report.html``: one self-contained page (figures embedded; nothing is fetched)."""
    root = Path(root)
    bundle = _Bundle()
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>Reproduction report ({html.escape(report['preset'])})</title><style>{CSS}</style></head><body>",
        f"<h1>Reproduction report ({html.escape(report['preset'])} preset)</h1>",
        f"<p>Created {html.escape(report['created'])}. {html.escape(_cap(headline(report['claims'])))}."
        f"{html.escape(kept_line(report))}</p>",
        _overview_html(report),
        *[f'<p class="failed">Rule not from the policy: {html.escape(p)}</p>' for p in report.get("rule_problems", [])],
    ]
    for paper, sections in _by_paper(report).items():
        parts.append(f'<section class="paper"><h2>{html.escape(paper)}</h2>')
        for s in sections:
            name = html.escape(s["experiment"])
            parts.append(
                f'<div class="experiment" id="{name}"><h3>{name} — preset {html.escape(s["preset"] or "?")}, '
                f"{_seeds(s)}</h3>"
            )
            if s["status"] == "failed":
                parts.append(f'<div class="failed">Failed: {html.escape(s["error"])}</div>')
            rows, checks = _split_checks(_rows(report, s["experiment"]))
            parts.append(_claims_html(rows, name, COLUMNS, "claims") if rows else "<p><em>No claims recorded.</em></p>")
            if checks:
                parts += [f"<h4>{html.escape(CHECKS_TITLE)}</h4>", _claims_html(checks, name, CHECK_COLUMNS, "checks")]
            if kept := _kept(report, s["experiment"]):
                parts += [f"<h4>{html.escape(KEPT_TITLE[5:])}</h4>", _claims_html(kept, name, KEPT_COLUMNS, "kept")]
            parts += [_figure_html(root, fig, bundle) for fig in s["figures"]]
            parts += [_sweep_html(root, sweep) for sweep in scale.of_experiment(report, s["experiment"])]
            parts.append("</div>")
        parts.append("</section>")
    if scale.elsewhere(report):
        parts.append('<section class="paper"><h2>Sweeps of experiments not in this report</h2>')
        parts += [_sweep_html(root, sweep) for sweep in scale.elsewhere(report)]
        parts.append("</section>")
    parts.append(bundle.script())
    parts.append(f"<script>{MARK_RENDERED}</script></body></html>")
    return "\n".join(parts)


def _claims_html(rows: Sequence[Mapping[str, Any]], name: str, columns: Sequence[str], kind: str) -> str:
    """A claims (or checks) table of one experiment, each row coloured by its verdict."""
    head = "".join(f"<th>{c}</th>" for c in columns)
    body = "".join(
        f'<tr class="claim" style="background:{VERDICT_COLOURS.get(r["verdict"], "#fff")}">'
        + "".join(f"<td>{html.escape(_cell(r, c))}</td>" for c in columns)
        + "</tr>"
        for r in rows
    )
    return f'<table class="{kind}" data-experiment="{name}"><tr>{head}</tr>{body}</table>'


def _overview_html(report: Mapping[str, Any]) -> str:
    """The page's opening table: per experiment its ``paper`` claims at the paper's scale and at reduced scale, the
    rest, its extensions, ablations and checks, each experiment linking to its section."""
    head, lines = overview_rows(report)
    cells = ["<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for name, values in lines:
        link = f'<a href="#{html.escape(name)}">{html.escape(name)}</a>'
        cells.append(f"<tr><td>{link}</td>" + "".join(f"<td>{html.escape(v)}</td>" for v in values) + "</tr>")
    return f'<table class="overview">{"".join(cells)}</table>'


def overview_rows(report: Mapping[str, Any]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The overview's header and, per experiment, ``(name, cells)``: paper (authors), preset, seeds, the ``paper``
    claims at the paper's scale, at reduced scale, the rest, then extensions, ablations and checks."""
    head = ["experiment", "paper (authors)", "preset", "seeds", "paper claims at the paper's scale",
            "at reduced scale", "vacuous / not comparable / not run", "extensions", "ablations", "checks"]  # fmt: skip
    lines = []
    for section in report["experiments"]:
        rows = _rows(report, section["experiment"])
        counts, by_class = scale_counts(rows), summary_by_class(rows)
        status = " (failed)" if section["status"] == "failed" else ""
        cells = [_authors(section["paper"]) or "—", (section["preset"] or "?") + status, _seeds(section)]
        cells += [_summary_line(counts[k]) if any(counts[k].values()) else "—" for k in ("paper", "reduced", "other")]
        cells += [_summary_line(by_class[k]) if any(by_class[k].values()) else "—" for k in CLASS_WORDS]
        lines.append((section["experiment"], cells))
    return head, lines


def overview_md(report: Mapping[str, Any], anchors: bool = True) -> list[str]:
    """:func:`overview_rows` as a Markdown table (``anchors``: each experiment links to its section below)."""
    head, lines = overview_rows(report)
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, cells in lines:
        first = f"[`{name}`](#{name})" if anchors else f"`{name}`"
        out.append("| " + " | ".join([first, *(_md_escape(c) for c in cells)]) + " |")
    return out


def _sweep_html(root: Path, sweep: Mapping[str, Any]) -> str:
    """One sweep's block on the HTML page: heading, command, table and figure (embedded)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in scale.header(sweep))
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in scale.cells(sweep))
    figure = {"file": sweep["figure"], "caption": f"{scale.title(sweep)}: mean, min-max band"}
    return (
        f'<div class="sweep" data-sweep="{html.escape(sweep["name"])}"><h4>Along a scale axis: '
        f"{html.escape(scale.title(sweep))}</h4><p>{html.escape(scale.jobs_line(sweep))}</p>"
        f"<table>{'<tr>' + head + '</tr>' + body}</table>"
        + (_figure_html(root, figure) if sweep["figure"] else "")
        + "</div>"
    )


def write_report(report: Mapping[str, Any], root: str | Path) -> dict[str, Path]:
    """Write ``claims.json``, ``report.md`` and ``report.html`` under ``root/report/``; returns their paths."""
    from mechrecall.io import atomic_write_json, atomic_write_text

    root = Path(root)
    folder = root / "report"
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"claims": folder / "claims.json", "md": folder / "report.md", "html": folder / "report.html"}
    atomic_write_json(paths["claims"], dict(report))
    atomic_write_text(paths["md"], markdown(report))
    atomic_write_text(paths["html"], html_page(report, root))
    return paths


# ------------------------------------------------------------------ the README's summary and docs/claims.md

SUMMARY_START = "<!-- report-summary:start -->"
SUMMARY_END = "<!-- report-summary:end -->"
DOC_COLUMNS = ("claim", "class", "paper", "ours", "control", "rule", "verdict", "scale", "preset", "seeds", "note")
HEADLINES = 2  # headline rows per experiment in the README's summary


def row_class(row: Mapping[str, Any]) -> str:
    """A row's class: ``paper``, ``extension``, ``ablation`` or ``check`` (rows of older reports have none:
    ``paper``)."""
    return str(row.get("class") or "paper")


def headline_rows(rows: Sequence[Mapping[str, Any]], k: int = HEADLINES) -> list[Mapping[str, Any]]:
    """The ``k`` rows that stand for an experiment in the README: rows of class ``paper`` that state the paper's
    number, the measured ones (verdict other than ``not run``) first, each group in table order; where fewer than
    ``k`` state a number, the other ``paper`` rows follow on the same terms."""

    def ranked(candidates: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        measured = [r for r in candidates if r["verdict"] != "not run"]
        return measured + [r for r in candidates if r["verdict"] == "not run"]

    papers = [r for r in rows if row_class(r) == "paper"]
    numbered = [r for r in papers if r.get("paper") is not None]
    rest = [r for r in papers if r.get("paper") is None]
    return (ranked(numbered) + ranked(rest))[:k]


def _seeds(section: Mapping[str, Any]) -> str:
    seed = section.get("seed")
    return f"seeds {', '.join(map(str, seed))}" if isinstance(seed, list) else f"seed {seed}"


def _command(report: Mapping[str, Any]) -> str:
    """The command line that makes a report like ``report`` (its preset; its seeds, unless only seed 0)."""
    seeds = list(report.get("seeds") or [])
    if not seeds:  # a report of before --seeds: the experiments' seed
        seeds = sorted({s.get("seed") for s in report.get("experiments", [])} - {None})
    flag = ""
    if len(seeds) > 1:
        contiguous = seeds == list(range(seeds[0], seeds[-1] + 1))
        flag = f" --seeds {seeds[0]}-{seeds[-1]}" if contiguous else f" --seeds {','.join(map(str, seeds))}"
    elif seeds and seeds[0] != 0:
        flag = f" --seed {seeds[0]}"
    return f"python -m analyses.reproduce --preset {report.get('preset') or 'quick'}{flag}"


def _origin(report: Mapping[str, Any]) -> str:
    created = str(report.get("created") or "?").replace("T", " ").replace("+00:00", " UTC")
    return f"the `{report.get('preset') or '?'}` report (`{_command(report)}`) of {created}"


def _authors(paper: str) -> str:
    """``"Title (Chen, Bruna & Bietti)"`` -> ``"Chen, Bruna & Bietti"`` (the whole string when it has no authors)."""
    match = re.search(r"\(([^()]*)\)\s*$", paper)
    return match.group(1) if match else paper


def claims_doc_md(report: Mapping[str, Any], regenerate: str = "", figures: Mapping[str, str] | None = None) -> str:
    """``docs/claims.md``: every claim row of ``report``, a table per experiment, with where it came from, and
    its sweeps along a scale axis.

    ``regenerate``: the command that rewrites the file (named in its header). ``figures``: each sweep's figure
    as the document links it (by sweep name; a sweep not in it is shown without its figure)."""
    out = [
        "# Claims of the latest report",
        "",
        f"Generated from {_origin(report)}" + (f" by `{regenerate}`" if regenerate else "") + ". Do not edit by hand. "
        f"{_cap(headline(report['claims']))}. Every row is read from an experiment's `results.json`; its verdict "
        "is recomputed from its rule, its control and (over several seeds) each seed's number. Class: `paper` (the "
        "paper's statement), `extension` (beyond the paper), `ablation`, `check` (an identity of the code, in a "
        "table of its own, never counted as the paper's). Every rule comes from one line of the rule policy "
        "([rule-policy.md](rule-policy.md)) and the paper's number. The control is the same measurement on "
        "the untrained model, the model with the mechanism removed, or a perturbed input; a rule its control "
        "passes is `vacuous`. The scale column gives the run's sizes over the paper's along the axes that matter; a "
        "verdict below the paper's size reads 'at reduced scale'. A preset not comparable to the paper's sizes gets "
        "`not comparable`, never a verdict.",
        "",
    ]
    for section in report["experiments"]:
        rows = _rows(report, section["experiment"])
        out += [
            f"## `{section['experiment']}` — preset {section['preset'] or '?'}, {_seeds(section)}",
            "",
            f"{section['paper'] or '(paper not recorded)'}. {_cap(headline(rows))}.",
            "",
        ]
        if section["status"] == "failed":
            out += [f"**Failed:** `{_md_escape(section['error'])}`", ""]
        rows, checks = _split_checks(rows)
        out += [claims_table_md(rows, columns=DOC_COLUMNS) if rows else "_No claims recorded._", ""]
        if checks:
            out += [CHECKS_TITLE, "", claims_table_md(checks, columns=CHECK_COLUMNS), ""]
        for sweep in scale.of_experiment(report, section["experiment"]):
            out += scale.sweep_md(sweep, (figures or {}).get(sweep["name"]))
    return "\n".join(out)


def summary_md(report: Mapping[str, Any], claims_link: str | None = "docs/claims.md") -> str:
    """The README's per-paper summary of ``report``: per experiment its paper, preset, its ``paper`` claims per
    verdict and its extensions and ablations apart, then each experiment's :func:`headline_rows`.
    ``claims_link``: where the full table is (``None``: not linked)."""
    full = f" The full table: [{claims_link}]({claims_link})." if claims_link else ""
    out = [
        f"From {_origin(report)}: {headline(report['claims'])}.{full}",
        "",
        "Paper claims per verdict, those judged at the paper's scale apart from those at reduced scale (a run smaller "
        "than the paper along an axis that matters); extensions, ablations (ours, beyond the paper's claims) and "
        "checks (identities of the code) apart:",
        "",
        *overview_md(report, anchors=False),
    ]
    headlines = []
    for section in report["experiments"]:
        rows = _rows(report, section["experiment"])
        headlines += [(section["experiment"], r) for r in headline_rows(rows)]
    out += [
        "",
        f"Headline claims (per experiment, up to {HEADLINES} rows of class `paper` that state the paper's number, "
        "measured ones first, in table order):",
        "",
        "| experiment | claim | paper | ours | control | verdict | scale |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in headlines:
        cells = [f"`{name}`", _cell(row, "claim"), _num(row.get("paper")), _cell(row, "ours")]
        cells += [_cell(row, "control"), _cell(row, "verdict"), scale_words(row)]
        out.append("| " + " | ".join(_md_escape(c) for c in cells) + " |")
    return "\n".join(out + _sweeps_summary(report, claims_link))


def _sweeps_summary(report: Mapping[str, Any], claims_link: str | None) -> list[str]:
    """The README's lines on the report's sweeps: per sweep its first measure at each grid point (mean over
    seeds, [min, max], the verdicts)."""
    sweeps = [s for s in report.get("sweeps", []) if s.get("rows")]
    if not sweeps:
        return []
    where = f" (every measure and the figures: [{claims_link}]({claims_link}))" if claims_link else ""
    out = ["", f"Along a scale axis, each sweep's first measure{where}:", ""]
    out += ["| sweep | measure | at each grid point: mean [min, max], verdicts |", "|---|---|---|"]
    for sweep in sweeps:
        first = sweep["rows"][0]["measure"]
        points = [
            f"{', '.join(f'{k}={v}' for k, v in r['point'].items())}: {_num(r['mean'])} "
            f"[{_num(r['min'])}, {_num(r['max'])}]" + (f", {r['verdicts']}" if r.get("verdicts") else "")
            for r in sweep["rows"]
            if r["measure"] == first
        ]
        cells = [f"`{sweep['experiment']}:{sweep['part']}` ({sweep.get('preset')})", first, "; ".join(points)]
        out.append("| " + " | ".join(_md_escape(c) for c in cells) + " |")
    return out


def replace_block(text: str, block: str, start: str = SUMMARY_START, end: str = SUMMARY_END) -> str:
    """``text`` with what lies between the ``start`` and ``end`` marker lines replaced by ``block``.

    Raises ``ValueError`` when the markers are missing, repeated or out of order."""
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ValueError(f"expected one {start} line followed by one {end} line")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{block.strip()}\n{end}{tail}"
