"""``traceflow scenarios list | show NAME``: the bundled scenarios."""
import click

from traceflow.cli.options import echo_json, json_option

#: top-level keys of which a scenario file has at least one (sim/schema.py)
SCENARIO_TABLES = {"simulation", "topology", "tcp", "traffic", "base", "experiment"}


@click.group(name="scenarios")
def command():
    """List and show the bundled scenarios. ``simulate``, ``sweep`` and ``replay --scenario``
    take them by name from any directory.

    \b
    Examples:
      traceflow scenarios list
      traceflow scenarios show dumbbell > my.toml
      traceflow simulate dumbbell -o run/ --set simulation.duration=10
    """


@command.command(name="list")
@json_option
def list_(as_json):
    """List the bundled scenarios with their descriptions.

    \b
    Examples:
      traceflow scenarios list
      traceflow scenarios list --json
    """
    from traceflow.replays import bundled, describe

    rows = [{"name": name, "kind": describe(path)[0], "description": describe(path)[1],
             "path": str(path)} for name, path in bundled().items() if _is_scenario(path)]
    if as_json:
        echo_json(rows)
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        tag = " [experiment: traceflow reproduce]" if r["kind"] == "experiment" else ""
        click.echo(f"{r['name']:<{width}}  {r['description']}{tag}")


def _is_scenario(path):
    """Whether the bundled TOML file ``path`` is a scenario (setups.toml is the papers' set-up
    values, read by traceflow.experiments.setups, not something to run)."""
    import tomllib

    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError:
        return True  # listed, with describe()'s "invalid TOML"
    return bool(SCENARIO_TABLES & set(doc))


@command.command()
@click.argument("name")
def show(name):
    """Print the TOML of scenario NAME (a bundled name or a file).

    \b
    Examples:
      traceflow scenarios show dumbbell
      traceflow scenarios show replay_testbed > mine.toml
    """
    from traceflow.replays import resolve_scenario

    click.echo(resolve_scenario(name).read_text(), nl=False)
