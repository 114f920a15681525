"""HTML pages for reports: sections of text, PNG figures and tables, with the PNGs next to the page.

A page is plain HTML with inline CSS and relative ``<img src="NAME.png">`` links, so a report
directory can be copied, zipped or served as is. Comparison tables (predicted vs measured, paper
vs ours) mark disagreeing rows with the class ``disagree`` (highlighted in red) and rows without a
verdict with ``uncompared``; "not compared" is never counted as agreeing (:func:`verdict_counts`).
"""
import datetime
import html
import math
from dataclasses import dataclass, field
from pathlib import Path

from traceflow import __version__
from traceflow.atomic import write_text

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; border-bottom: 1px solid #ccc; margin-top: 2em; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; }
figure img { max-width: 34em; border: 1px solid #ddd; }
figcaption { font-size: 0.85em; color: #555; max-width: 34em; }
figure.wide img, figure.wide figcaption { max-width: 100%; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; display: block;
        overflow-x: auto; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.disagree td { background: #fde2e1; } tr.agree td.verdict { color: #176a21; }
tr.disagree td.verdict { color: #a4161a; font-weight: bold; }
p.meta { color: #777; font-size: 0.85em; } pre { background: #f6f6f6; padding: 0.6em; }
p.warning { color: #a4161a; }
p.banner { background: #fff3cd; border: 1px solid #e0c36c; padding: 0.6em; font-weight: bold; }
tr.uncompared td.verdict { color: #777; }
"""


@dataclass
class Figure:
    """A PNG file (name relative to the page) and its caption."""

    src: str
    caption: str = ""


@dataclass
class Table:
    """Rows of ``{column: value}``; ``verdict`` names a boolean column that marks (dis)agreement."""

    rows: list
    caption: str = ""
    columns: list | None = None
    verdict: str | None = None


@dataclass
class Section:
    heading: str
    text: str = ""
    figures: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    links: list = field(default_factory=list)  # (label, href)
    warnings: list = field(default_factory=list)


def fmt(value):
    """A table cell: numbers to 4 significant digits, None/NaN as an em dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v) for v in value)
    return str(value)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def table_html(table):
    rows = table.rows
    columns = table.columns or list(dict.fromkeys(k for row in rows for k in row))
    out = ["<table>"]
    if table.caption:
        out.append(f"<caption>{html.escape(table.caption)}</caption>")
    out.append("<tr>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in columns) + "</tr>")
    for row in rows:
        cls = ""
        if table.verdict is not None:
            cls = {True: ' class="agree"', False: ' class="disagree"'}.get(
                row.get(table.verdict), ' class="uncompared"')
        cells = []
        for c in columns:
            value = row.get(c)
            if c == table.verdict and value is None:
                value = "not compared"
            klass = "verdict" if c == table.verdict else ("num" if _is_number(value) else "")
            attr = f' class="{klass}"' if klass else ""
            cells.append(f"<td{attr}>{html.escape(fmt(value))}</td>")
        out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _paragraphs(text):
    blocks = [b.strip() for b in text.split("\n\n") if b.strip()]
    return "\n".join(f"<p>{html.escape(b)}</p>" for b in blocks)


#: figures wider than this aspect ratio (the three-panel Hurst plot) take the page's width
WIDE_ASPECT = 2.0


def _wide(png):
    """The PNG ``png`` (a Path) is wider than :data:`WIDE_ASPECT` (from its IHDR header; False
    when it cannot be read)."""
    try:
        with open(png, "rb") as f:
            head = f.read(24)
    except OSError:
        return False
    if head[:8] != b"\x89PNG\r\n\x1a\n" or len(head) < 24:
        return False
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    return height > 0 and width / height > WIDE_ASPECT


def section_html(section, folder=None):
    out = [f"<h2>{html.escape(section.heading)}</h2>"]
    out += [f'<p class="warning">{html.escape(w)}</p>' for w in section.warnings]
    if section.text:
        out.append(_paragraphs(section.text))
    for table in section.tables:
        out.append(table_html(table))
    for fig in section.figures:
        wide = ' class="wide"' if folder is not None and _wide(folder / fig.src) else ""
        out.append(f'<figure{wide}>'
                   f'<img src="{html.escape(fig.src, quote=True)}" '
                   f'alt="{html.escape(fig.caption or fig.src, quote=True)}">'
                   f"<figcaption>{html.escape(fig.caption)}</figcaption></figure>")
    if section.links:
        items = "".join(f'<li><a href="{html.escape(href, quote=True)}">'
                        f"{html.escape(label)}</a></li>" for label, href in section.links)
        out.append(f"<ul>{items}</ul>")
    return "\n".join(out)


def render_page(title, sections, path, *, intro="", banner=""):
    """Write the HTML page ``path`` (atomically) from :class:`Section` objects; returns the path.

    ``banner``: a highlighted line under the title (e.g. that the run was a quick smoke run)."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = [f"<h1>{html.escape(title)}</h1>",
            f'<p class="meta">traceflow {__version__} · {stamp}</p>']
    if banner:
        body.append(f'<p class="banner">{html.escape(banner)}</p>')
    if intro:
        body.append(_paragraphs(intro))
    body += [section_html(s, Path(path).parent) for s in sections]
    page = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
    path = Path(path)
    write_text(path, page)
    return path


COMPARISON_COLUMNS = ["quantity", "paper", "ours", "agree", "note"]
QUICK_BANNER = ("Quick run (--quick): fewer runs and shorter simulations. A smoke test only: "
                "it decides no agreement with the paper, and its numbers may reverse the "
                "paper's conclusions.")


CLAIM_COLUMNS = ["claim", "source", "statement", "paper", "ns-2", "ours", "holds", "missing"]
CLAIMS_TEXT = ("Each claim holds when every comparison row it reads agrees; one that also reads "
               "other experiments stays undecided here (traceflow reproduce --claims DIR judges "
               "all of them).")


def verdict_counts(comparison):
    """``{"agree", "disagree", "not_compared"}`` counts of comparison rows (``agree`` True /
    False / None): a row without a verdict is never counted as agreeing."""
    agree = [row.get("agree") for row in comparison]
    return {"agree": sum(a is True for a in agree), "disagree": sum(a is False for a in agree),
            "not_compared": sum(a is None for a in agree)}


def verdict_sentence(counts):
    """One line: "A agree, D disagree, N not compared (of T quantities)"."""
    total = sum(counts.values())
    return (f"{counts['agree']} agree, {counts['disagree']} disagree, "
            f"{counts['not_compared']} not compared (of {total} quantities)")


def experiment_page(summary, out_dir, *, table_preview_rows=12):
    """``out_dir/index.html`` for a reproduced experiment (the ``summary.json`` of ``reproduce``).

    Shows the text, a paper-vs-ours comparison table (disagreements highlighted), every figure,
    and a preview and link for every Parquet table.
    """
    out_dir = Path(out_dir)
    comparison = summary.get("comparison") or []
    sections = []
    if comparison:
        verdict = verdict_sentence(verdict_counts(comparison)) + "."
        if summary.get("quick"):
            verdict += " Quick run: no verdicts decided."
        sections.append(Section("Paper vs ours", verdict, tables=[
            Table(comparison, columns=COMPARISON_COLUMNS, verdict="agree")]))
    claims = summary.get("claims") or []
    if claims:
        sections.append(Section("The paper's claims", CLAIMS_TEXT, tables=[
            Table(claims, columns=CLAIM_COLUMNS, verdict="holds")]))
    figures = [Figure(name, _caption(name)) for name in summary.get("figures", [])]
    if figures:
        sections.append(Section("Figures", figures=figures))
    tables = summary.get("tables") or {}
    if tables:
        previews = []
        for name, file in tables.items():
            rows = _preview(out_dir / file, table_preview_rows)
            if rows:
                previews.append(Table(rows, caption=f"{name} ({file}, first rows)"))
        links = [(f"{name} ({file})", file) for name, file in tables.items()]
        sections.append(Section("Tables", tables=previews, links=links))
    run = {k: summary[k] for k in ("name", "quick", "executor", "workers", "seconds")
           if k in summary}
    if run:
        sections.append(Section("Run", tables=[Table([run])]))
    title = summary.get("title") or summary.get("name") or "Reproduction"
    intro = summary.get("text", "")
    if summary.get("reproduces"):
        intro = f"Reproduces: {summary['reproduces']}\n\n{intro}"
    return render_page(title, sections, out_dir / "index.html", intro=intro,
                       banner=QUICK_BANNER if summary.get("quick") else "")


def _caption(name):
    return Path(name).stem.replace("_", " ").replace("-", " ")


def _preview(path, n):
    import polars as pl

    if not path.exists():
        return []
    frame = pl.read_parquet(path, n_rows=n)
    return [{k: (v if _is_number(v) or v is None else str(v)) for k, v in row.items()}
            for row in frame.iter_rows(named=True)]
