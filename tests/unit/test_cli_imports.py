"""What a short command loads: its start-up is most of its time (docs/architecture.md).

Each command runs in a fresh interpreter against a live instance; the test reads
``sys.modules`` at the command's end, so it asserts which modules load, not how
long they take.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.instance import environ

from pflux import fluxshim

SHIM_BIN = Path(fluxshim.__file__).parent / "bin"

#: heavy to import and not needed by a short command: orjson (~20 ms, with uuid, platform,
#: dataclasses), dataclasses and inspect (~12 ms), socket and selectors (enum conversions),
#: shutil (bz2, lzma), asyncio, msgspec and yaml; typing (~4 ms, with contextlib), signal
#: (its enums), copy, and locale (gettext's search for a catalogue of argparse's messages)
HEAVY = (
    "orjson",
    "dataclasses",
    "inspect",
    "socket",
    "selectors",
    "shutil",
    "asyncio",
    "msgspec",
    "yaml",
    "typing",
    "contextlib",
    "signal",
    "copy",
    "locale",
)

#: what the commands run most (run, submit, jobs) do without: ``re`` (with the regular
#: expression compiler, a fifth of such a command's instructions), which argparse, the
#: json package and gettext each import (``pflux.cli.options``, ``pflux.spec.jsonlean``)
LEAN = ("re", "argparse", "json", "gettext")
#: and what a plain run and submit, and jobs, do without besides: the state machine's enum
#: (a client reads ``pflux.spec.statebits``; a listing's ``State`` is made when it is
#: read), functools, and the collections package (its classes taken from
#: ``_collections_abc`` and ``_collections``, where it would find them)
LEANER = ("enum", "functools", "collections", "importlib", "datetime")
#: and what a plain run and submit, which build a jobspec and validate it, do without: the
#: jobspec's codec and view, the API's builder (``pflux.api.jobspec``) and ``types``
BUILT = ("pflux.spec.jobspec.codec", "pflux.spec.jobspec.view", "pflux.api.jobspec", "types")

# the probe itself imports nothing the command might not: it writes one name a line
PROBE = """
import atexit, os, sys
def report():
    with open(os.environ["PROBE_OUT"], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
atexit.register(report)
sys.argv = ["pflux", *sys.argv[1:]]
from pflux.cli import main
sys.exit(main())
"""


@pytest.mark.parametrize(
    "command",
    [
        ["run", "true"],
        ["run", "-n1", "-o", "cpu-affinity=off", "--env=-*", "true"],
        ["submit", "true"],
        ["submit", "--cc=1-2", "true"],
        ["job", "last"],
        ["jobs", "-a"],
        ["jobs", "--stats"],
    ],
)
def test_a_short_command_loads_nothing_heavy(uri: str, tmp_path: Path, command: list[str]) -> None:
    out = tmp_path / "modules.txt"
    env = environ(PFLUX_URI=uri, PROBE_OUT=str(out))
    if command[0] in ("job", "jobs"):
        subprocess.run([sys.executable, "-m", "pflux.cli", "submit", "true"], env=env, check=True)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *command],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(out.read_text().splitlines())
    assert "pflux.api.client" in loaded  # the command did reach the instance
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    if command[0] in ("run", "submit", "jobs"):
        assert not loaded & set(LEAN), sorted(loaded & set(LEAN))
    if command in (["run", "true"], ["submit", "true"]) or command[0] == "jobs":
        assert not loaded & set(LEANER), sorted(loaded & set(LEANER))
    if command in (["run", "true"], ["submit", "true"]):
        assert not loaded & set(BUILT), sorted(loaded & set(BUILT))


@pytest.mark.parametrize("command", ["flux", "pflux"])
def test_the_instances_commands_start_pflux_without_runpy(uri: str, command: str) -> None:
    """The ``flux`` and ``pflux`` an instance puts on PATH run the CLI with ``-c``:
    ``-m`` would load runpy and importlib.util, a tenth of a short command's time."""
    done = subprocess.run(
        [str(SHIM_BIN / command), "getattr", "size"],
        env=environ(PFLUX_URI=uri, PFLUX_PYTHON=sys.executable, PYTHONPROFILEIMPORTTIME="1"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1\n"
    loaded = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines()}
    assert "pflux.cli" in loaded
    assert not loaded & {"runpy", "importlib.util"}
