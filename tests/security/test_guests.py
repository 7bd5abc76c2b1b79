"""Guests of an instance (``[access] allow-guest-user = true``): each sees and acts on its own.

The instance is root's; two other local users connect to it as guests and
drive the real ``pflux`` command. A guest lists every job, reads and changes
only its own, and is refused (EPERM, naming what) every owner-only service;
nothing a client sends makes it another user.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux.protocol.message import REQUEST, Decoder, Message, encode
from support.instance import LiveInstance, console
from support.users import User, guest_instance

# a raw request as the guest's own connection sends it, with whatever envelope it likes
RAW = """
import json, os, socket, sys
from pflux.protocol.message import REQUEST, Decoder, Message, encode
sock = socket.socket(socket.AF_UNIX)
sock.settimeout(60)
sock.connect(sys.argv[1])
topic, payload = sys.argv[2], json.loads(sys.argv[3])
userid, rolemask = int(sys.argv[4]), int(sys.argv[5])
sock.sendall(encode(Message(REQUEST, topic, 7, payload, userid=userid, rolemask=rolemask)))
decoder, got = Decoder(), []
while not got:
    got = decoder.feed(sock.recv(1 << 16))
print(json.dumps([got[0].errnum, got[0].errstr, got[0].payload]))
"""


class Guests:
    """The instance, and its two guests with a job each: ``alice``'s runs, ``bob``'s waits."""

    def __init__(self, live: LiveInstance, alice: User, bob: User) -> None:
        self.live = live
        self.alice, self.bob = alice, bob
        self.socket = live.uri.removeprefix("local://")

    def pflux(self, user: User, *args: str) -> tuple[int, str, str]:
        proc = user.pflux(*args, PFLUX_URI=self.live.uri)
        return proc.returncode, proc.stdout, proc.stderr

    def ok(self, user: User, *args: str) -> str:
        rc, out, err = self.pflux(user, *args)
        assert rc == 0, err
        return out

    def sign(self, user: User, jobspec: object) -> str:
        """J: ``jobspec`` signed by ``user`` under MUNGE, as its client signs it."""
        code = "import sys, pflux; from _pfluxcore.sign import wrap; print(wrap(sys.argv[1]))"
        proc = user.code(code, json.dumps(jobspec))
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    def raw(self, user: User, topic: str, payload: object, userid: int, rolemask: int) -> list:  # type: ignore[type-arg]
        proc = user.code(RAW, self.socket, topic, json.dumps(payload), str(userid), str(rolemask))
        assert proc.returncode == 0, proc.stderr
        answer: list = json.loads(proc.stdout)  # type: ignore[type-arg]
        return answer


@pytest.fixture(scope="module")
def guests(other_users: tuple[User, User], munged: None) -> Iterator[Guests]:
    with guest_instance("pflux-guests-") as live:
        yield Guests(live, *other_users)


def _state(g: Guests, jobid: str) -> str:
    return (
        g.ok(g.alice, "jobs", "-A", "-n", "-o", "{id} {state}").split(jobid + " ", 1)[1].split()[0]
    )


def test_a_guest_submits_as_itself_and_lists_every_users_jobs(guests: Guests) -> None:
    g = guests
    mine = g.ok(g.alice, "submit", "--urgency=0", "sleep", "600").strip()  # held
    theirs = g.ok(g.bob, "submit", "--urgency=0", "true").strip()
    listed = g.ok(g.alice, "jobs", "-A", "-n", "-o", "{id} {userid}").splitlines()
    assert f"{mine} {g.alice.uid}" in listed
    assert f"{theirs} {g.bob.uid}" in listed
    first = g.ok(g.alice, "job", "eventlog", mine).splitlines()[0]
    assert f" userid={g.alice.uid} " in first
    # without -a, a guest's own jobs, as flux's jobs
    assert g.ok(g.bob, "jobs", "-n", "-o", "{id}").split() == [theirs]
    g.ok(g.alice, "cancel", mine)
    g.ok(g.bob, "cancel", theirs)


def test_a_guests_job_is_refused_rather_than_run_as_the_instance_owner(
    guests: Guests, tmp_path: Path
) -> None:
    """No privileged helper runs a job as its submitter yet: a guest's job would run
    with the instance owner's rights, so it fails before anything of it runs."""
    g = guests
    proof = tmp_path / "ran"
    tmp_path.chmod(0o777)
    job = g.ok(g.alice, "submit", "sh", "-c", f"id -u > {proof}").strip()
    g.ok(g.alice, "job", "wait-event", "-t", "60", job, "clean")
    rc, _, err = g.pflux(g.alice, "job", "attach", job)
    assert rc != 0
    assert "unable to run a guest's job" in err, err
    assert not proof.exists()
    events = g.ok(g.alice, "job", "eventlog", job)
    assert "exception" in events
    assert "start" not in events.split()  # never began
    # the guest uses its job as the owner does: status, events, R
    rc, _, _ = g.pflux(g.alice, "job", "status", job)
    assert rc != 0
    assert g.ok(g.alice, "job", "info", job, "R").startswith("{")


def test_a_guest_cannot_read_another_users_job(guests: Guests) -> None:
    g = guests
    job = g.ok(g.bob, "submit", "--urgency=0", "--env=SECRET=bob-secret", "true").strip()
    for args in (
        ("job", "eventlog", job),
        ("job", "info", job, "jobspec"),
        ("job", "attach", job),
    ):
        rc, out, err = g.pflux(g.alice, *args)
        assert rc != 0, args
        assert "bob-secret" not in out + err
        assert "permission denied" in err.lower(), (args, err)
    # nor through the KVS's primary namespace
    rc, out, err = g.pflux(g.alice, "kvs", "get", f"job.{job}.jobspec")
    assert rc != 0
    assert "bob-secret" not in out + err
    assert "permission denied" in err.lower(), err
    # the job's user reads it all
    assert "bob-secret" in g.ok(g.bob, "job", "info", job, "jobspec")
    g.ok(g.bob, "cancel", job)


def test_a_guest_cannot_change_another_users_job(guests: Guests) -> None:
    g = guests
    theirs = g.ok(g.bob, "submit", "--urgency=0", "true").strip()
    held = _state(g, theirs)
    assert held == "SCHED"
    for args, what in (
        (("cancel", theirs), "permission denied"),
        (("job", "urgency", theirs, "16"), "permission denied"),
        (("job", "raise", theirs), "permission denied"),
        (("job", "memo", theirs, "x=1"), "guests can only add a memo to their own jobs"),
        (("submit", f"--dependency=afterany:{theirs}", "true"), "permission denied"),
        (("cancel", "--all", "--user", "all"), "guests may only raise exceptions on their own"),
        (("job", "status", theirs), "permission denied"),
    ):
        rc, _, err = g.pflux(g.alice, *args)
        assert rc != 0, args
        assert what in err.lower(), (args, err)
    assert _state(g, theirs) == held
    g.ok(g.alice, "cancel", "--all")  # the guest's own jobs alone
    events = g.ok(g.bob, "job", "eventlog", theirs)
    assert "exception" not in events
    assert "memo" not in events
    assert "urgency urgency=16" not in events
    # the guest's urgency range is 0-16; the owner's the rest
    mine = g.ok(g.alice, "submit", "--urgency=0", "true").strip()
    rc, _, err = g.pflux(g.alice, "job", "urgency", mine, "17")
    assert rc != 0
    assert "only the instance owner may set more than 16" in err
    g.ok(g.alice, "job", "urgency", mine, "10")
    assert "urgency=10" in g.ok(g.alice, "job", "eventlog", mine)
    g.ok(g.bob, "cancel", theirs)


@pytest.mark.parametrize(
    ("args", "topic"),
    [
        (("resource", "drain", "0"), "sched.drain"),
        (("queue", "stop"), "job-manager.queue-start"),
        (("job", "purge", "--force"), "job-manager.purge"),
        (("module", "list"), "module.list"),
        (("dmesg",), "log.dmesg"),
        (("setattr", "log-stderr-level", "7"), "attr.set"),
        (("exec", "-r", "0", "true"), "rexec.exec"),
        (("kvs", "put", "a=1"), "kvs"),
        (("event", "pub", "some.topic"), "event.pub"),
        (("shutdown",), "broker.shutdown"),
    ],
)
def test_owner_only_services_refuse_a_guest_naming_what(
    guests: Guests, args: tuple[str, ...], topic: str
) -> None:
    rc, _, err = guests.pflux(guests.alice, *args)
    assert rc != 0
    assert topic in err, err
    assert "only the instance owner" in err or "permission denied" in err.lower(), err
    assert guests.live.proc.poll() is None  # the instance serves on


def test_a_guest_cannot_claim_another_userid_or_role(guests: Guests) -> None:
    g = guests
    errnum, errstr, _ = g.raw(g.alice, "module.list", {}, 0, 1)
    assert errnum == 1, errstr  # EPERM: the envelope's userid and role are the broker's
    assert errstr == "module.list: only the instance owner may do this"
    jobspec = json.loads(g.ok(g.alice, "submit", "--dry-run", "true"))
    signed = g.sign(g.alice, jobspec)
    errnum, errstr, reply = g.raw(
        g.alice, "job-ingest.submit", {"J": signed, "urgency": 0}, g.bob.uid, 1
    )
    assert errnum == 0, errstr
    job = str(reply["id"])
    listed = g.ok(g.bob, "jobs", "-A", "-n", "-o", "{id.dec} {userid}").splitlines()
    assert f"{job} {g.alice.uid}" in listed
    errnum, errstr, _ = g.raw(
        g.alice,
        "job-manager.raiseall",
        {"type": "cancel", "severity": 0, "userid": g.bob.uid, "states": 0x3E},
        g.bob.uid,
        1,
    )
    assert errnum == 1, errstr
    g.ok(g.alice, "cancel", job)


def test_a_service_a_client_provides_serves_the_owner_alone(guests: Guests) -> None:
    with socket.socket(socket.AF_UNIX) as provider:
        provider.settimeout(60)
        provider.connect(guests.socket)
        provider.sendall(encode(Message(REQUEST, "broker.service-add", 1, {"service": "mine"})))
        decoder: Decoder = Decoder()
        got: list[Message] = []
        while not got:
            got = decoder.feed(provider.recv(1 << 16))
        assert got[0].errnum == 0, got[0].errstr
        # the broker answers the guest itself: the provider is never asked
        errnum, errstr, _ = guests.raw(guests.alice, "mine.hello", {}, 0, 1)
        assert (errnum, errstr) == (1, "mine.hello: only the instance owner may do this")


def test_the_socket_is_reachable_only_with_guests_allowed(guests: Guests) -> None:
    state = Path(guests.socket).parent
    assert state.stat().st_mode & 0o777 == 0o711
    assert Path(guests.socket).stat().st_mode & 0o777 == 0o777
    looked = guests.alice.code("import os, sys; os.listdir(sys.argv[1])", str(state))
    assert looked.returncode == 1
    assert "PermissionError" in looked.stderr
    # the owner is served as ever
    assert console("jobs", "-a", PFLUX_URI=guests.live.uri).returncode == 0
