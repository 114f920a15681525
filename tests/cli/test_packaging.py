"""Every package of the source tree is installed (a subpackage missing from setup.cfg works in
a checkout and fails only once installed)."""
import configparser
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_source_package_is_listed_in_setup_cfg():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    dirs = dict(line.split("=") for line in cfg["options"]["package_dir"].split("\n") if "=" in line)
    found = set()
    for name, where in ((k.strip(), v.strip()) for k, v in dirs.items()):
        for init in (REPO / where).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / where).parts
            found.add(".".join((name, *rel)))
    assert found and found == listed, (found - listed, listed - found)
