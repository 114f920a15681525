"""Issue 47: every command the README shows runs as shown, on the bundled sample.

The README's ```sh blocks run one after another in a temporary directory (bash, ``set -e``, with
the variables the earlier blocks set); a ```text block right after one is its output: each shown
line must be a line of what the block printed, in order (``...`` stands for any text). A block
preceded by ``<!-- readme-test: skip (REASON) -->`` is not run (it installs packages or needs
../shared or root), one preceded by ``<!-- readme-test: not compared ... -->`` is not compared.
The commands table must be the one ``traceflow --help`` prints."""
import fnmatch
import re
import subprocess

import pytest
from conftest import REPO

README = REPO / "README.md"
BLOCK = re.compile(r"(?:<!-- readme-test: (?P<mark>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```",
                   re.S)
ASSIGNMENT = re.compile(r"^(?:export )?[A-Z_][A-Z0-9_]*=")


def blocks():
    """``(lang, body, mark)`` of each fenced block of the README, in order."""
    return [(m["lang"], m["body"], m["mark"] or "") for m in BLOCK.finditer(README.read_text())]


def runs():
    """The shell blocks to run: ``(script, shown output or None)``, or a skip reason."""
    out, prelude, found = [], [], blocks()
    for i, (lang, body, mark) in enumerate(found):
        if lang != "sh":
            continue
        nxt = found[i + 1] if i + 1 < len(found) else ("", "", "")
        shown = nxt[1] if nxt[0] == "text" and not nxt[2].startswith("not compared") else None
        if mark.startswith("skip"):
            out.append(pytest.param(None, None, marks=pytest.mark.skip(reason=f"README: {mark}")))
            continue
        out.append(pytest.param("\n".join([*prelude, body]), shown, id=body.split()[1]))
        prelude += [line for line in body.splitlines() if ASSIGNMENT.match(line)]
    return out


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("readme")


@pytest.mark.parametrize("script, shown", runs())
def test_readme_block_runs_as_shown(script, shown, workdir):
    res = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=workdir,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"{script}\n{res.stderr}"
    if shown is None:
        return
    printed = res.stdout.splitlines()
    at = 0
    for line in shown.splitlines():
        pattern = glob_escape(line).replace("...", "*")
        while at < len(printed) and not fnmatch.fnmatchcase(printed[at], pattern):
            at += 1
        assert at < len(printed), f"README shows {line!r}; the command printed:\n{res.stdout}"
        at += 1


def glob_escape(line):
    return re.sub(r"([*?\[])", r"[\1]", line)


def test_readme_lists_the_commands_as_traceflow_help_does():
    from traceflow.cli.main import COMMANDS

    rows = re.findall(r"^\| `(\w+)` \| (.*) \|$", README.read_text(), re.M)
    assert {name: text.replace("\\|", "|") for name, text in rows} == COMMANDS


def test_readme_is_short_and_its_links_exist():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    for target in re.findall(r"\]\(([^)#:]+)\)", text):
        assert (REPO / target).exists(), target
