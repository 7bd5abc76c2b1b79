"""Signed job requests (RFC 15's J under MUNGE): a guest's job carries proof of who asked.

The instance is root's, with guests; two other local users submit to it. Each
guest's client signs its jobspec with its own MUNGE credential, and job-ingest
checks what the connection can tell: a jobspec unsigned, signed in the name of
someone else, malformed, or claiming a userid under ``none`` is refused, each
with its own message; the signature itself is proved by the helper that runs the
job (``test_guest_jobs``); the owner's submissions go unsigned, as before.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator

import pytest
from _pfluxcore.sign import unwrap, wrap

from pflux._corefinder import SHIM_PYTHON
from pflux.api import Client
from pflux.spec.kvs_keys import job_key
from support.instance import LiveInstance, console
from support.users import User, guest_instance

# a job-ingest.submit request sent as the user running it: [errnum, errstr, payload]
SUBMIT = """
import json, sys
from pflux.client.handle import Handle
from pflux.errors import RPCError
with Handle(sys.argv[1]) as h:
    try:
        print(json.dumps([0, "", h.call("job-ingest.submit", json.loads(sys.argv[2]))]))
    except RPCError as exc:
        print(json.dumps([exc.errnum, exc.errstr, None]))
"""
# J for argv[1] (the jobspec's text), signed by the user running it: argv[2] the mechanism,
# argv[3] the userid a ``none`` J claims
SIGN = """
import sys, pflux
from _pfluxcore.sign import wrap
userid = int(sys.argv[3]) if len(sys.argv) > 3 else None
print(wrap(sys.argv[1], mechanism=sys.argv[2], userid=userid))
"""


class Site:
    """Root's instance with guests, its two guests, and a jobspec to submit."""

    def __init__(self, live: LiveInstance, alice: User, bob: User) -> None:
        self.live = live
        self.alice, self.bob = alice, bob
        made = console("submit", "--dry-run", "true", PFLUX_URI=live.uri)
        assert made.returncode == 0, made.stderr
        self.jobspec = json.loads(made.stdout)
        self.text = json.dumps(self.jobspec)

    def sign(self, user: User, text: str, mechanism: str = "munge", *userid: int) -> str:
        proc = user.code(SIGN, text, mechanism, *map(str, userid))
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    def submit(self, user: User, **payload: object) -> tuple[int, str, dict[str, int] | None]:
        proc = user.code(SUBMIT, self.live.uri, json.dumps(payload))
        assert proc.returncode == 0, proc.stderr
        errnum, errstr, reply = json.loads(proc.stdout)
        return errnum, errstr, reply

    def stored(self, jobid: int, key: str) -> str:
        with Client(self.live.uri) as client:
            return str(client.kvs_get(job_key(jobid, key)))


@pytest.fixture(scope="module")
def site(other_users: tuple[User, User], munged: None) -> Iterator[Site]:
    with guest_instance("pflux-signed-") as live:
        yield Site(live, *other_users)


def test_a_guests_job_is_signed_by_the_guest_and_stored_as_sent(site: Site) -> None:
    proc = site.alice.pflux("submit", "--urgency=0", "true", PFLUX_URI=site.live.uri)
    assert proc.returncode == 0, proc.stderr
    jobid = int(console("job", "id", "--to=dec", proc.stdout.strip()).stdout)
    signed = unwrap(site.stored(jobid, "J"), max_ttl=600)
    assert (signed.userid, signed.mechanism) == (site.alice.uid, "munge")
    assert json.loads(signed.payload) == json.loads(site.stored(jobid, "jobspec"))
    console("cancel", str(jobid), PFLUX_URI=site.live.uri)


def test_a_guests_jobs_sent_at_once_are_numbered_in_order(site: Site) -> None:
    code = (
        "import json, sys; from pflux.api import Client;"
        " c = Client(sys.argv[1]);"
        " print(json.dumps(c.submit_many([json.loads(sys.argv[2])] * 24, urgency=0)))"
    )
    proc = site.alice.code(code, site.live.uri, site.text)
    assert proc.returncode == 0, proc.stderr
    ids = json.loads(proc.stdout)
    assert len(ids) == 24
    assert ids == sorted(set(ids))
    assert {unwrap(site.stored(jobid, "J")).userid for jobid in ids} == {site.alice.uid}
    console("cancel", *map(str, ids), PFLUX_URI=site.live.uri)


# argv[2]: J's sent at once, each in a job-ingest.submit of its own: each answer, in order
SUBMIT_ALL = """
import json, sys
from pflux.client.handle import Handle
from pflux.errors import RPCError
with Handle(sys.argv[1]) as h:
    rpcs = [h.rpc("job-ingest.submit", {"J": J, "urgency": 0}) for J in json.loads(sys.argv[2])]
    answers = []
    for rpc in rpcs:
        try:
            answers.append([0, rpc.get()["id"]])
        except RPCError as exc:
            answers.append([exc.errnum, exc.errstr])
print(json.dumps(answers))
"""


def test_jobs_sent_together_are_each_answered_in_order_a_malformed_one_among_them(
    site: Site,
) -> None:
    """A J that is not well formed is refused alone, and the others are taken, their
    ids rising in the order they were sent."""
    header, payload, _ = site.sign(site.alice, site.text).split(".")
    malformed = f"{header}.{payload}.none"
    sent = [site.sign(site.alice, site.text) for _ in range(9)]
    sent[2:2] = [malformed]
    sent.append(malformed)
    proc = site.alice.code(SUBMIT_ALL, site.live.uri, json.dumps(sent))
    assert proc.returncode == 0, proc.stderr
    answers = json.loads(proc.stdout)
    refused = [errno.EINVAL, "sign-unwrap: signature: not a MUNGE credential (MUNGE:...:)"]
    assert [answers[2], answers[10]] == [refused, refused]
    ids = [jobid for errnum, jobid in answers[:2] + answers[3:10] if errnum == 0]
    assert len(ids) == 9
    assert ids == sorted(set(ids))
    console("cancel", *map(str, ids), PFLUX_URI=site.live.uri)


def test_a_guest_signs_through_the_flux_package(site: Site) -> None:
    code = (
        "import sys, flux, flux.job; h = flux.Flux(sys.argv[1]);"
        " print(int(flux.job.submit(h, sys.argv[2], urgency=0)))"
    )
    path = f"import sys; sys.path.insert(0, {str(SHIM_PYTHON)!r})\n"
    proc = site.alice.run([site.alice.python, "-I", "-c", path + code, site.live.uri, site.text])
    assert proc.returncode == 0, proc.stderr
    jobid = int(proc.stdout)
    assert unwrap(site.stored(jobid, "J")).userid == site.alice.uid
    console("cancel", str(jobid), PFLUX_URI=site.live.uri)


def test_a_guests_unsigned_jobspec_is_refused(site: Site) -> None:
    assert site.submit(site.alice, jobspec=site.jobspec) == (
        errno.EPERM,
        "only instance owner can use sign-type=none",
        None,
    )


def test_a_request_signed_by_another_user_is_refused(site: Site) -> None:
    bobs = site.sign(site.bob, site.text)
    assert site.submit(site.alice, J=bobs) == (
        errno.EPERM,
        f"signer={site.bob.uid} != requestor={site.alice.uid}",
        None,
    )
    # nor may the instance owner present a guest's request as its own
    with Client(site.live.uri) as client, pytest.raises(Exception, match="signer=") as info:
        client.handle.call("job-ingest.submit", {"J": bobs})
    assert info.value.errnum == errno.EPERM  # type: ignore[attr-defined]


def test_none_claims_nothing_for_a_guest(site: Site) -> None:
    as_owner = site.sign(site.alice, site.text, "none", os.getuid())
    assert site.submit(site.alice, J=as_owner) == (
        errno.EPERM,
        f"signer={os.getuid()} != requestor={site.alice.uid}",
        None,
    )
    as_itself = site.sign(site.alice, site.text, "none", site.alice.uid)
    assert site.submit(site.alice, J=as_itself) == (
        errno.EPERM,
        "only instance owner can use sign-type=none",
        None,
    )


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda j: j[: len(j) // 2], "sign-unwrap: payload decode error: "),
        (lambda j: j[:-20], "sign-unwrap: signature: not a MUNGE credential"),
        (lambda j: "x" + j, "sign-unwrap: header decode error: "),
        (lambda j: j.replace(".", "!", 1), "sign-unwrap: header decode error: "),
        (lambda j: j.split(".")[0], "sign-unwrap: header decode error: "),
    ],
)
def test_a_damaged_request_is_refused_naming_the_fault(
    site: Site, damage: object, message: str
) -> None:
    signed = site.sign(site.alice, site.text)
    errnum, errstr, reply = site.submit(site.alice, J=damage(signed))  # type: ignore[operator]
    assert (errnum, reply) == (errno.EINVAL, None), errstr
    assert errstr.startswith(message), errstr


def test_the_guest_may_send_the_jobspec_with_j_only_if_they_match(site: Site) -> None:
    signed = site.sign(site.alice, site.text)
    other = {**site.jobspec, "version": 1, "tasks": []}
    assert site.submit(site.alice, J=signed, jobspec=other) == (
        errno.EINVAL,
        "jobspec: not the one J carries",
        None,
    )
    errnum, errstr, reply = site.submit(site.alice, J=signed, jobspec=site.jobspec, urgency=0)
    assert errnum == 0, errstr
    assert reply is not None
    console("cancel", str(reply["id"]), PFLUX_URI=site.live.uri)


def test_the_owners_jobspec_goes_unsigned_and_is_wrapped_under_none(site: Site) -> None:
    with Client(site.live.uri) as client:
        jobid = client.submit(site.jobspec, urgency=0)
        signed = unwrap(site.stored(jobid, "J"), allowed=("none",))
        assert (signed.userid, signed.mechanism) == (os.getuid(), "none")
        assert json.loads(signed.payload) == site.jobspec
        # its own J, under none or munge, is taken too
        for mechanism in ("none", "munge"):
            own = wrap(site.text, mechanism=mechanism, userid=os.getuid())
            jobid2 = client.handle.call("job-ingest.submit", {"J": own, "urgency": 0})["id"]
            assert site.stored(jobid2, "J") == own
            client.cancel(jobid2)
        client.cancel(jobid)


@pytest.mark.parametrize(
    "args",
    [
        ("submit", "--cc=1-3", "--urgency=0", "true"),
        ("batch", "-n1", "--urgency=0", "--wrap", "true"),
        ("run", "true"),  # refused when it would start: no helper runs a guest's job yet
        ("alloc", "-n1", "true"),
    ],
    ids=lambda args: args[0],
)
def test_every_submission_command_signs_a_guests_jobs(site: Site, args: tuple[str, ...]) -> None:
    before = set(_jobs_of(site, site.bob))
    proc = site.bob.pflux(*args, PFLUX_URI=site.live.uri)
    if args[0] in ("submit", "batch"):
        assert proc.returncode == 0, proc.stderr
    new = [jobid for jobid in _jobs_of(site, site.bob) if jobid not in before]
    assert len(new) == (3 if "--cc=1-3" in args else 1), proc.stderr
    for jobid in new:
        signed = unwrap(site.stored(jobid, "J"))
        assert (signed.userid, signed.mechanism) == (site.bob.uid, "munge")
        console("cancel", str(jobid), PFLUX_URI=site.live.uri)


def _jobs_of(site: Site, user: User) -> list[int]:
    listed = console("jobs", "-a", "-A", "-n", "-o", "{id.dec} {userid}", PFLUX_URI=site.live.uri)
    rows = [line.split() for line in listed.stdout.splitlines()]
    return [int(jobid) for jobid, userid in rows if int(userid) == user.uid]


def test_root_signs_where_it_is_a_guest(other_users: tuple[User, User], munged: None) -> None:
    """Root is a guest of another user's instance unless it is let in as the owner (then
    it sends the jobspec unsigned: tests/security/test_access.py)."""
    owner, _ = other_users
    config = owner.home / "guests-root.toml"
    config.write_text("[access]\nallow-guest-user = true\n")
    config.chmod(0o644)
    with owner.instance(owner.home / "root-guest", "--config", str(config)) as live:
        proc = console("submit", "--urgency=0", "true", PFLUX_URI=live.uri)
        assert proc.returncode == 0, proc.stderr
        jobid = proc.stdout.strip()
        stored = console("job", "info", jobid, "J", PFLUX_URI=live.uri)
        assert stored.returncode == 0, stored.stderr
        signed = unwrap(stored.stdout.strip())
        assert (signed.userid, signed.mechanism) == (0, "munge")
        console("cancel", jobid, PFLUX_URI=live.uri)
