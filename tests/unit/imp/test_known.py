"""A guest's shell keeps the last jobspec it decoded and what checking against it needs;
each job is still checked in full, against the jobspec its own J carries."""

from __future__ import annotations

import json
import marshal
import os
import resource
import socket
from typing import Any

import pytest

from pflux.exec.plan import plan
from pflux.fluxshim import shim_env
from pflux.imp.check import Allowed, mismatch
from pflux.imp.config import ImpConfig
from pflux.imp.server import ImpServer, Refused
from pflux.protocol import impwire
from pflux.protocol.shellwire import Description
from pflux.spec.builder import from_command
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet

SHIM = shim_env()
R = ResourceSet.build({0: (IdSet.decode("0"), IdSet())}, "h").to_json()
UID = 4242


def planned(jobspec: dict[str, Any]) -> Description:
    shells = plan(
        7, jobspec, R, uri="local:///x", namespace="job-7", tmp_parents=("/t",),
        hostname="h", cpus=(0,), shim=SHIM,
    ).shells  # fmt: skip
    return Description(*marshal.loads(shells[0][1]))


def changed(description: Description, **fields: Any) -> Description:
    return Description(**{**dict(zip(Description._fields, description, strict=True)), **fields})


class Shell:
    """A guest shell's checks, with J's verification left out: the payload is the J."""

    def __init__(self) -> None:
        config = ImpConfig(
            socket="/nowhere", allowed_users=frozenset({1}), allowed_mechanisms=("munge",),
            max_ttl=None, job_tmpdir="/jobs", python=SHIM.python,
        )  # fmt: skip
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.server = ImpServer(config, listener)
        listener.close()
        for fd in (self.server.taken, self.server.taking):
            os.close(fd)
        self.server._user = lambda userid_text, signed: (signed.encode(), UID)  # type: ignore[method-assign]

    def check(self, jobspec: dict[str, Any], description: Description) -> Description:
        data = impwire.encode_description(description)
        payload = impwire.spawn_as(UID, json.dumps(jobspec), data)
        uid, settled, _ = self.server._checked(b"local:///x\n" + payload)
        assert uid == UID
        return settled


def test_each_job_of_one_jobspec_is_checked_in_full() -> None:
    shell = Shell()
    jobspec = from_command(["true"], environment={"PATH": "/usr/bin"})
    genuine = planned(jobspec)
    assert shell.check(jobspec, genuine).argv == ["true"]
    kept = shell.server.known
    for change, said in (
        ({"argv": ["sh", "-c", "evil"]}, "command ['sh', '-c', 'evil']"),
        ({"env": {**genuine.env, "LD_PRELOAD": "/tmp/evil.so"}}, "LD_PRELOAD"),
        ({"cwd": "/tmp"}, "cwd '/tmp'"),
        ({"stdin": "/etc/shadow"}, "input file"),
        ({"files": [("x", b"rm -rf ~\n", 0o100700)]}, "files: not the jobspec's"),
    ):
        with pytest.raises(Refused, match="not what its user signed") as info:
            shell.check(jobspec, changed(genuine, **change))
        assert said in str(info.value)
        assert shell.server.known is kept  # the same jobspec: decoded once
    assert shell.check(jobspec, genuine).argv == ["true"]


def test_a_job_of_another_jobspec_is_checked_against_its_own() -> None:
    shell = Shell()
    first = from_command(["true"], environment={"PATH": "/usr/bin"})
    first["attributes"]["system"]["shell"] = {"options": {"rlimit": {"core": 0}}}
    second = from_command(["hostname"], environment={"PATH": "/usr/bin"})
    settled = shell.check(first, planned(first))
    assert settled.rlimit == [(resource.RLIMIT_CORE, 0)]
    assert settled.tmpdirs == ("/jobs/jobtmp-0-ƒ8",)
    with pytest.raises(Refused, match="command"):  # the last jobspec's is not this one's
        shell.check(second, changed(planned(second), argv=["true"]))
    settled = shell.check(second, planned(second))
    assert settled.argv == ["hostname"]
    assert settled.rlimit == []  # the limits are the jobspec's own, not the last one's
    assert shell.check(first, planned(first)).rlimit == [(resource.RLIMIT_CORE, 0)]


def test_a_jobspec_broken_in_a_later_part_names_an_earlier_parts_difference_first() -> None:
    jobspec = from_command(["true"], environment={"PATH": "/usr/bin"})
    genuine = planned(jobspec)
    jobspec["attributes"]["system"]["shell"] = {"options": {"output": "not a table"}}
    allowed = Allowed(jobspec, SHIM)
    assert "command" in allowed.mismatch(changed(genuine, argv=["sh"]))
    assert allowed.mismatch(genuine) == "the jobspec is not one the instance could have run"
    assert mismatch(genuine, jobspec, SHIM) == allowed.mismatch(genuine)
    jobspec["attributes"]["system"]["shell"] = {}
    jobspec["attributes"]["system"]["files"] = {"x": "not a table"}
    assert "cwd" in Allowed(jobspec, SHIM).mismatch(changed(genuine, cwd="/tmp"))
    assert Allowed(jobspec, SHIM).mismatch(genuine).startswith("the jobspec's files")
