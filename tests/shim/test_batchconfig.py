"""``flux.job.BatchConfig``: a ``--conf`` option's configuration built from successive
updates (KEY=VAL, JSON or TOML text, a file, a named config), as flux's, and a nested
instance's ``conf`` given as one."""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

from support.shim import flux_output

UPDATES = """
import json, sys
from flux.job import BatchConfig
conf = BatchConfig()
conf.update("resource.noverify=true").update("tbon.fanout=4").update("tbon.name=x y")
conf.update('{"tbon": {"fanout": 8},\\n "a": [1]}')  # text: it has a newline
conf.update("[exec]\\nimp = 'sock'\\n")
conf.update(sys.argv[1])
conf.update("site")
print(json.dumps(conf.config, sort_keys=True))
print(conf.get("tbon.fanout"), conf.get("no.such", "dflt"))
for bad in ("x.yaml", "nosuch", "a\\n=b["):
    try:
        BatchConfig().update(bad)
    except ValueError as exc:
        print(exc)
"""


def test_updates_merge_in_order_and_bad_ones_say_why(tmp_path: Path) -> None:
    fromfile = tmp_path / "more.json"
    fromfile.write_text('{"more": {"x": 1}}')
    xdg = tmp_path / "xdg"
    (xdg / "flux" / "config").mkdir(parents=True)
    (xdg / "flux" / "config" / "site.toml").write_text("[site]\nname = 'named'\n")
    code = dedent(UPDATES).replace(
        "from flux.job import BatchConfig",
        "import os\n"
        + (f"os.environ['XDG_CONFIG_HOME'] = {str(xdg)!r}\nfrom flux.job import BatchConfig"),
    )
    out = flux_output(code.replace("sys.argv[1]", repr(str(fromfile))), None).splitlines()
    assert json.loads(out[0]) == {
        "a": [1],
        "exec": {"imp": "sock"},
        "more": {"x": 1},
        "resource": {"noverify": True},
        "site": {"name": "named"},
        "tbon": {"fanout": 8, "name": "x y"},
    }
    assert out[1] == "8 dflt"
    assert out[2] == "--conf: named config 'x.yaml' not found"
    assert out[3] == "--conf: named config 'nosuch' not found"
    assert out[4] == "--conf: failed to parse multiline as TOML or JSON"


NESTED = """
import json, sys
from flux.job import BatchConfig, JobspecV1
conf = BatchConfig().update("tbon.fanout=2")
for given in (conf, "tbon.fanout=2", {"tbon": {"fanout": 2}}):
    js = JobspecV1.from_batch(sys.argv[1], conf=given)
    files = js.jobspec["attributes"]["system"]["files"]
    print(json.dumps(files["conf.json"]["data"], sort_keys=True))
"""


def test_a_nested_instances_conf_may_be_a_batchconfig_or_its_text(tmp_path: Path) -> None:
    script = tmp_path / "batch.sh"
    script.write_text("#!/bin/sh\ntrue\n")
    code = dedent(NESTED).replace("sys.argv[1]", repr(str(script)))
    out = flux_output(code, None).splitlines()
    assert len(out) == 3
    assert len(set(out)) == 1
    assert json.loads(out[0]) == {"tbon": {"fanout": 2}}
