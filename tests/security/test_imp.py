"""The privileged helper (``pflux-imp``), run as root, as a compromised instance account
would talk to it: directly on its socket, with requests of its own making.

``pfluxsec1`` is the instance account (the helper's ``allowed-users``), ``pfluxsec2``
a guest who signs its job with MUNGE. The guest's genuine request runs as the guest;
every forged one is refused with its reason, and nothing of it runs (its command
would create a marker file).
"""

from __future__ import annotations

import base64
import grp
import json
import marshal
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.exec.plan import plan
from pflux.protocol.impwire import encode_description, spawn_as
from pflux.protocol.shellwire import Description
from pflux.spec.builder import from_command
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet
from support.imp import Helper
from support.munge import munged
from support.users import User

__all__ = ["munged"]

JOB = 1 << 24
GROUP = "pfluximp"  # a supplementary group of the guest's

# the instance account's side: send a request, then act as job-exec to the shell (ACK
# everything), printing the helper's answer and the shell's records as JSON
ASK = """
import json, os, select, socket, sys
from pflux.protocol import shellwire as wire
path, key, request = sys.argv[1], int(sys.argv[2]), open(sys.argv[3], "rb").read()
control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
records, shells = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
conn.settimeout(60)
conn.connect(path)
data = wire.record(b"u", key, request)
fds = theirs.fileno().to_bytes(4, sys.byteorder) + shells.fileno().to_bytes(4, sys.byteorder)
try:
    conn.sendmsg([data[:65536]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    for start in range(65536, len(data), 65536):
        conn.send(data[start:start + 65536])
except BrokenPipeError:
    pass  # refused before it was all read: the answer says why
theirs.close(); shells.close()
answer = wire.split(conn.recv(1 << 16))[0]
got, offset = [], 0
if answer and answer[0][0] == wire.STARTED:
    while not got or got[-1][0] != "w":
        ready, _, _ = select.select([records], [], [], 60)
        assert ready, got
        data = records.recv(1 << 20)
        assert data, got
        for kind, k, payload in wire.split(data)[0]:
            got.append((kind.decode(), payload.decode(errors="replace")))
        offset += len(data)
        try:
            control.send(wire.record(wire.ACK, key, b"%d" % offset))
        except OSError:
            pass  # it has ended
print(json.dumps({"answer": [(k.decode(), p.decode()) for k, _, p in answer], "records": got}))
"""

# the instance account's side of a launcher that dies once its request is sent: the
# connection closed before any answer; what came on the shell's records socket until its end
HANG_UP = """
import json, select, socket, sys
from pflux.protocol import shellwire as wire
path, key, request = sys.argv[1], int(sys.argv[2]), open(sys.argv[3], "rb").read()
control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
records, shells = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
conn.connect(path)
data = wire.record(b"u", key, request)
fds = theirs.fileno().to_bytes(4, sys.byteorder) + shells.fileno().to_bytes(4, sys.byteorder)
conn.sendmsg([data[:65536]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
for start in range(65536, len(data), 65536):
    conn.send(data[start:start + 65536])
conn.close()
theirs.close(); shells.close()
got = []
while True:
    assert select.select([records], [], [], 60)[0], got
    data = records.recv(1 << 20)
    if not data:
        break
    got += [kind.decode() for kind, _, _ in wire.split(data)[0]]
print(json.dumps(got))
"""

SIGN = """
import os, sys, pflux, _pfluxcore.sign as s
uid = None if sys.argv[2] == "munge" else os.getuid()
print(s.wrap(sys.argv[1], mechanism=sys.argv[2], userid=uid))
"""


class Imp:
    """The helper, started as root for the instance account ``inst``; the guest, ``guest``."""

    def __init__(self, base: Path, inst: User, guest: User) -> None:
        self.base = base
        self.inst, self.guest = inst, guest
        self.helper = Helper(base, inst.name, inst.python)
        self.socket = self.helper.socket
        self.log = self.helper.log
        self.shared = base / "shared"  # where a command leaves its marker
        self.shared.mkdir(mode=0o777)
        self.shared.chmod(0o1777)

    def jobspec(self, command: list[str], **system: Any) -> dict[str, Any]:
        jobspec = from_command(
            command, environment={"HOME": str(self.guest.home), "PATH": os.environ["PATH"]}
        )
        jobspec["attributes"]["system"]["cwd"] = str(self.guest.home)
        jobspec["attributes"]["system"].update(system)
        return jobspec

    def sign(
        self, jobspec: dict[str, Any], by: User | None = None, mechanism: str = "munge"
    ) -> str:
        proc = (by or self.guest).code(SIGN, json.dumps(jobspec), mechanism)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    def description(self, jobspec: dict[str, Any]) -> Description:
        """The shell's description, as job-exec plans it."""
        R = ResourceSet.build({0: (IdSet.decode("0"), IdSet())}, "h").to_json()  # noqa: N806
        planned = plan(
            JOB, jobspec, R, uri="local:///x", namespace=f"job-{JOB}",
            tmp_parents=("/nowhere",), hostname="h", cpus=(0,),
        )  # fmt: skip
        return Description(*marshal.loads(planned.shells[0][1]))

    def ask(
        self,
        signed: str,
        description: Description,
        *,
        userid: int | None = None,
        by: User | None = None,
    ) -> dict[str, Any]:
        """Send the request as ``by`` (the instance account); the answer and the records."""
        uid = self.guest.uid if userid is None else userid
        request = self.base / "request"
        request.write_bytes(b"\n" + spawn_as(uid, signed, encode_description(description)))
        request.chmod(0o644)
        proc = (by or self.inst).code(ASK, str(self.socket), str(JOB), str(request))
        assert proc.returncode == 0, (proc.stderr, self.log)
        answer: dict[str, Any] = json.loads(proc.stdout)
        return answer

    def close(self) -> None:
        self.helper.close()


@pytest.fixture(scope="module")
def imp(other_users: tuple[User, User], munged: None) -> Iterator[Imp]:
    inst, guest = other_users
    subprocess.run(["groupadd", "-f", GROUP], check=True)
    subprocess.run(["gpasswd", "-a", guest.name, GROUP], check=True, capture_output=True)
    base = Path(tempfile.mkdtemp(prefix="pflux-imp-"))
    base.chmod(0o755)
    helper = Imp(base, inst, guest)
    try:
        yield helper
    finally:
        helper.close()
        shutil.rmtree(base, ignore_errors=True)


def _output(answer: dict[str, Any]) -> str:
    return "".join(payload[5:] for kind, payload in answer["records"] if kind == "o")


def refused(answer: dict[str, Any]) -> str:
    [(kind, why)] = answer["answer"]
    assert kind == "x", answer
    assert answer["records"] == []
    return str(why)


def test_a_guests_signed_job_runs_as_the_guest_with_its_groups_and_limits(imp: Imp) -> None:
    script = (
        "id -u; id -G; stat -c %u $FLUX_JOB_TMPDIR; touch made; stat -c %u made; ulimit -n;"
        " echo $LD_PRELOAD"
    )
    options = {"rlimit": {"nofile": 321}}
    jobspec = imp.jobspec(["sh", "-c", script], shell={"options": options})
    answer = imp.ask(imp.sign(jobspec), imp.description(jobspec))
    assert answer["answer"][0][0] == "s", answer
    lines = _output(answer).splitlines()
    assert len(lines) == 6, answer
    group = grp.getgrnam(GROUP).gr_gid
    assert lines[0] == str(imp.guest.uid)
    assert set(map(int, lines[1].split())) == {imp.guest.gid, group}
    assert lines[2] == str(imp.guest.uid)  # FLUX_JOB_TMPDIR
    assert lines[3] == str(imp.guest.uid)  # a file it made in its cwd
    assert lines[4] == "321", answer
    assert answer["records"][-1] == ["w", "0"]
    assert (imp.guest.home / "made").stat().st_uid == imp.guest.uid


def test_a_guests_output_file_is_the_guests(imp: Imp) -> None:
    out = imp.guest.home / "out.txt"
    options = {"output": {"stdout": {"type": "file", "path": str(out)}}}
    jobspec = imp.jobspec(["id", "-u"], shell={"options": options})
    answer = imp.ask(imp.sign(jobspec), imp.description(jobspec))
    assert answer["records"][-1] == ["w", "0"], answer
    assert out.read_text() == f"{imp.guest.uid}\n"
    assert out.stat().st_uid == imp.guest.uid


def marker_job(imp: Imp, name: str) -> tuple[dict[str, Any], Path]:
    marker = imp.shared / name
    return imp.jobspec(["touch", str(marker)]), marker


def test_a_request_whose_asker_is_gone_by_the_answer_is_not_run(imp: Imp) -> None:
    """A launcher that dies before it hears the helper's answer could not journal the
    shell: the helper runs nothing then, and the job's records socket ends."""
    jobspec, marker = marker_job(imp, "asker-gone")
    # an environment long enough that checking it outlasts the asker's hang-up by far
    environment = jobspec["attributes"]["system"]["environment"]
    environment.update({f"PAD{n}": "x" * 1000 for n in range(100)})
    signed = imp.sign(jobspec)
    request = imp.base / "request"
    plain = encode_description(imp.description(jobspec))
    request.write_bytes(b"\n" + spawn_as(imp.guest.uid, signed, plain))
    request.chmod(0o644)
    proc = imp.inst.code(HANG_UP, str(imp.socket), str(JOB), str(request))
    assert proc.returncode == 0, (proc.stderr, imp.log)
    assert json.loads(proc.stdout) == []
    assert not marker.exists()


def test_a_request_from_a_user_not_allowed_is_refused(imp: Imp) -> None:
    jobspec, marker = marker_job(imp, "not-allowed")
    answer = imp.ask(imp.sign(jobspec), imp.description(jobspec), by=imp.guest)
    assert refused(answer) == f"uid {imp.guest.uid} is not one of the helper's allowed-users"
    assert not marker.exists()


def test_a_j_the_instance_account_made_for_another_user_is_refused(imp: Imp) -> None:
    jobspec, marker = marker_job(imp, "forged-j")
    own = imp.sign(jobspec, by=imp.inst)  # MUNGE says: the instance account's
    why = refused(imp.ask(own, imp.description(jobspec)))
    assert why == f"J is signed by uid {imp.inst.uid}, not the job's uid {imp.guest.uid}"
    unsigned = imp.sign(jobspec, by=imp.inst, mechanism="none")
    header = json.dumps({"version": 1, "mechanism": "none", "userid": imp.guest.uid})
    claimed = base64.urlsafe_b64encode(header.encode()).decode().rstrip("=")
    claimed += unsigned[unsigned.index(".") :]
    why = refused(imp.ask(claimed, imp.description(jobspec)))
    assert why.startswith("J does not verify: "), why
    assert not marker.exists()


def test_a_genuine_j_with_another_shell_description_is_refused(imp: Imp) -> None:
    jobspec, marker = marker_job(imp, "altered")
    signed = imp.sign(jobspec)
    genuine = imp.description(jobspec)
    fields = dict(zip(Description._fields, genuine, strict=True))
    for change, said in (
        ({"argv": ["sh", "-c", f"touch {marker}"]}, "command ['sh', '-c'"),
        ({"env": {**genuine.env, "LD_PRELOAD": "/tmp/evil.so"}}, "LD_PRELOAD is not the jobspec's"),
        ({"env": {**genuine.env, "PATH": "/tmp/evil:/usr/bin"}}, "PATH="),
        ({"cwd": "/tmp"}, "cwd '/tmp' is not the jobspec's"),
    ):
        why = refused(imp.ask(signed, Description(**{**fields, **change})))
        assert why.startswith("the job's shell is not what its user signed:"), why
        assert said in why, why
    assert not marker.exists()


def test_no_job_runs_as_root_or_as_a_user_that_does_not_exist(imp: Imp) -> None:
    jobspec, marker = marker_job(imp, "root")
    # a J that verifies, root's own (MUNGE says uid 0): still not run
    from _pfluxcore.sign import wrap

    signed = wrap(json.dumps(jobspec), mechanism="munge")
    assert refused(imp.ask(signed, imp.description(jobspec), userid=0)) == (
        "the helper runs no job as root"
    )
    # no user can sign for a uid that does not exist; "none" claims are not believed
    unsigned = imp.sign(jobspec, by=imp.inst, mechanism="none").split(".", 1)[1]
    header = json.dumps({"version": 1, "mechanism": "none", "userid": 4242})
    ghost = base64.urlsafe_b64encode(header.encode()).decode().rstrip("=")
    why = refused(imp.ask(f"{ghost}.{unsigned}", imp.description(jobspec), userid=4242))
    assert why.startswith("J does not verify"), why
    assert not marker.exists()
