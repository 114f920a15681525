"""``traceflow datasets list | verify [NAME...] | path NAME [FILE]``: the dataset registry."""
import click

from traceflow.cli.options import echo_json, json_option

#: how an external dataset becomes present (datasets/registry.py: Dataset.root)
HOW_TO_GET = ("external datasets live in the project's shared/ directory: put it next to this "
              "checkout (../shared) or set TRACEFLOW_SHARED=/path/to/shared")


@click.group(name="datasets")
def command():
    """List, verify (SHA-256) and locate registered datasets.

    Bundled samples ship with traceflow; external datasets (marked "external") are only described:
    they are looked for in ../shared next to the checkout, or under $TRACEFLOW_SHARED; `list`
    says where, `path` fails (exit 2) for one that is absent, `verify` checks them there.

    \b
    Examples:
      traceflow datasets list
      traceflow datasets verify sample-sim-dumbbell
      traceflow fit "$(traceflow datasets path sample-sim-dumbbell sim_dumbbell_a135.pcap.gz)" -o m.json
    """


@command.command(name="list")
@json_option
def list_(as_json):
    """List the registered datasets.

    \b
    Examples:
      traceflow datasets list
      traceflow datasets list --json
    """
    from traceflow.datasets.registry import load_registry

    rows = [{"name": d.name, "bundled": d.bundled, "present": d.present,
             "files": len(d.files), "bytes": sum(f.size for f in d.files), "licence": d.licence,
             "location": str(d.root), "description": d.description, "provenance": d.provenance}
            for d in load_registry()]
    if as_json:
        echo_json(rows)
        return
    for r in rows:
        where = "bundled" if r["bundled"] else "external, not bundled"
        state = "present" if r["present"] else f"absent (looked for in {r['location']})"
        click.echo(f"{r['name']:<24} {r['files']} files {r['bytes'] / 1e6:8.2f} MB  {where}, {state}")
        click.echo(f"    {r['description']}")
    if not all(r["present"] for r in rows):
        click.echo(f"\nAbsent datasets: {HOW_TO_GET}.")


@command.command()
@click.argument("names", nargs=-1)
@json_option
def verify(names, as_json):
    """Recompute the SHA-256 of every file (of NAMES, default all present datasets).

    Exits 1 when a file is missing or differs.

    \b
    Examples:
      traceflow datasets verify
      traceflow datasets verify testbed-alpha1.35 --json
    """
    from traceflow.datasets.registry import get, load_registry, verify as check

    reg = load_registry()
    sets = [get(n, reg) for n in names] if names else [d for d in reg if d.bundled or d.present]
    rows = [row for d in sets for row in check(d)]
    if as_json:
        echo_json(rows)
    else:
        for r in rows:
            click.echo(f"{r['status']:<8} {r['dataset']}/{r['file']}  ({r['path']})")
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        raise click.exceptions.Exit(1)


@command.command()
@click.argument("name")
@click.argument("file", required=False)
def path(name, file):
    """Print the path of dataset NAME's folder (or of its FILE).

    \b
    Examples:
      traceflow datasets path sample-sim-dumbbell
      traceflow datasets path sample-sim-dumbbell sim_dumbbell_a135.pcap.gz
    """
    from traceflow.datasets.registry import get
    from traceflow.errors import TraceflowError

    d = get(name)
    where = d.file_path(file) if file else d.root
    if not where.exists():
        raise TraceflowError(f"dataset {name!r} is not present (looked for {where}): {HOW_TO_GET}")
    click.echo(str(where))
