"""``--uri`` takes effect in every command that has it: the command goes to the
instance it names (here one that is not there, which the error names), not to
PFLUX_URI's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.instance import jobspec, pflux

# each command with --uri, and the arguments it needs to reach the instance
COMMANDS: dict[str, tuple[str, ...]] = {
    "submit": ("submit", "true"),
    "run": ("run", "true"),
    "jobs": ("jobs",),
    "job attach": ("job", "attach", "1"),
    "job submit": ("job", "submit", "JOBSPEC"),
    "job eventlog": ("job", "eventlog", "1"),
    "job wait-event": ("job", "wait-event", "1", "start"),
    "job info": ("job", "info", "1", "jobspec"),
    "job urgency": ("job", "urgency", "1", "10"),
    "job raise": ("job", "raise", "1"),
    "job kill": ("job", "kill", "1"),
    "job cancel": ("job", "cancel", "1"),
    "job wait": ("job", "wait", "1"),
    "job status": ("job", "status", "1"),
    "job memo": ("job", "memo", "1", "a=1"),
    "job last": ("job", "last"),
    "job stats": ("job", "stats"),
    "job timeleft": ("job", "timeleft", "1"),
    "job raiseall": ("job", "raiseall", "test"),
    "job killall": ("job", "killall"),
    "job taskmap": ("job", "taskmap", "1"),
    "job hostpids": ("job", "hostpids", "1"),
    "watch": ("watch", "1"),
    "kvs get": ("kvs", "get", "a"),
    "kvs put": ("kvs", "put", "a=1"),
    "kvs ls": ("kvs", "ls"),
    "kvs eventlog get": ("kvs", "eventlog", "get", "a"),
    "kvs eventlog append": ("kvs", "eventlog", "append", "a", "e"),
    "kvs eventlog wait-event": ("kvs", "eventlog", "wait-event", "a", "e"),
    "kvs dir": ("kvs", "dir"),
    "kvs unlink": ("kvs", "unlink", "a"),
    "kvs mkdir": ("kvs", "mkdir", "a"),
    "kvs link": ("kvs", "link", "a", "b"),
    "kvs readlink": ("kvs", "readlink", "a"),
    "kvs copy": ("kvs", "copy", "a", "b"),
    "kvs move": ("kvs", "move", "a", "b"),
    "kvs dropcache": ("kvs", "dropcache"),
    "kvs namespace create": ("kvs", "namespace", "create", "n"),
    "kvs namespace remove": ("kvs", "namespace", "remove", "n"),
    "kvs namespace list": ("kvs", "namespace", "list"),
    "resource list": ("resource", "list"),
    "resource info": ("resource", "info"),
    "resource status": ("resource", "status"),
    "resource drain": ("resource", "drain"),
    "resource undrain": ("resource", "undrain", "0"),
    "resource R": ("resource", "R"),
    "resource eventlog": ("resource", "eventlog"),
    "queue list": ("queue", "list"),
    "hostlist": ("hostlist", "instance"),
    "pgrep": ("pgrep", "x"),
    "pkill": ("pkill", "x"),
    "pstree": ("pstree",),
    "shutdown": ("shutdown",),
    "cancel": ("cancel", "1"),
    "queue status": ("queue", "status"),
    "queue enable": ("queue", "enable"),
    "queue disable": ("queue", "disable"),
    "queue start": ("queue", "start"),
    "queue stop": ("queue", "stop"),
    "queue drain": ("queue", "drain"),
    "queue idle": ("queue", "idle"),
    "update": ("update", "1", "duration=1m"),
    "getattr": ("getattr", "size"),
    "setattr": ("setattr", "log-ring-size", "1024"),
    "lsattr": ("lsattr",),
    "uptime": ("uptime",),
    "dmesg": ("dmesg",),
    "ping": ("ping", "-c", "1", "kvs"),
    "event pub": ("event", "pub", "t"),
    "event sub": ("event", "sub", "t"),
    "logger": ("logger", "x"),
    "module list": ("module", "list"),
    "config get": ("config", "get"),
    "startlog": ("startlog",),
    "overlay status": ("overlay", "status"),
    "overlay lookup": ("overlay", "lookup", "0"),
    "overlay parentof": ("overlay", "parentof", "1"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_uri_names_the_instance(command: str, uri: str, tmp_path: Path) -> None:
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps(jobspec()))
    args = [str(spec) if arg == "JOBSPEC" else arg for arg in COMMANDS[command]]
    words = len(command.split())
    elsewhere = tmp_path / "elsewhere"
    proc = pflux(uri, *args[:words], f"--uri=local://{elsewhere}", *args[words:])
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert f"cannot connect to the instance at {elsewhere}" in proc.stderr
