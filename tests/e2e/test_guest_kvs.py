"""The guest namespace end to end (RFC 16): what a job's tasks and tools keep in the KVS.

A job's tasks run ``pflux kvs`` with no ``-N``: ``PFLUX_KVS_NAMESPACE`` in their
environment makes it the job's guest namespace, as flux-core's job shell sets
``FLUX_KVS_NAMESPACE``. They may write ``application`` and ``tools.<name>``
keys there, not the execution service's ``exec``, ``output`` and ``input``.
While the job runs the namespace is readable by name; once it is inactive the
namespace is gone and its final snapshot is read through the primary
namespace (``job.<id>.guest...``) or ``pflux job info ID guest.KEY``.
"""

from __future__ import annotations

import os
from pathlib import Path

from pflux.api import Client, jobspec_of
from support.instance import PFLUX, fails, ok, pflux

DENIED = (
    'key "{key}" in namespace "job-{id}": permission denied: exec, output and input are'
    " written by the execution service only (use application or tools.<name>)"
)

SCRIPT = """
pflux kvs put application.x=1 tools.mytool.port=4242 || exit 1
echo "x=$(pflux kvs get application.x) port=$(pflux kvs get tools.mytool.port)"
echo "ns=$PFLUX_KVS_NAMESPACE"
pflux kvs ls
pflux kvs put output=oops; echo "output rc=$?"
pflux kvs put exec.eventlog=oops; echo "exec rc=$?"
pflux kvs put -A input=oops; echo "input rc=$?"
read go < {fifo}
pflux kvs put application.done=yes
"""


def test_a_job_keeps_its_own_keys_in_its_guest_namespace(
    uri: str, client: Client, tmp_path: Path
) -> None:
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    env = {"PATH": f"{PFLUX.parent}:/usr/bin:/bin"}
    jobid = client.submit(jobspec_of(["sh", "-c", SCRIPT.format(fifo=fifo)], environment=env))
    namespace = f"job-{int(jobid)}"
    client.wait_event(jobid, "start")  # its namespace exists
    # while it runs, the namespace is readable by name, and through job-info
    assert ok(uri, "kvs", "get", "-W", "-N", namespace, "application.x") == "1\n"
    assert ok(uri, "job", "info", str(jobid), "guest.tools.mytool.port") == "4242\n"
    fifo.write_text("go\n")
    attach = pflux(uri, "job", "attach", str(jobid))
    assert attach.returncode == 0, attach.stderr
    lines = attach.stdout.splitlines()
    assert lines[:2] == ["x=1 port=4242", f"ns={namespace}"]
    assert lines[2].split() == ["application", "exec", "output", "tools"]
    assert lines[3:] == ["output rc=1", "exec rc=1", "input rc=1"]
    assert attach.stderr.splitlines() == [
        f"pflux-kvs: ERROR: kvs.commit: ops[0]: {DENIED.format(key=key, id=int(jobid))}"
        for key in ("output", "exec.eventlog", "input")
    ]
    # the job's own record is untouched
    assert "oops" not in ok(uri, "job", "eventlog", "-p", "exec", str(jobid))
    assert "oops" not in ok(uri, "job", "info", str(jobid), "guest.output")

    # inactive: the final snapshot stays, read through primary or job-info; the namespace is gone
    snapshot = f"{jobid.kvs}.guest"
    assert ok(uri, "kvs", "get", f"{snapshot}.application.x") == "1\n"
    assert ok(uri, "kvs", "get", f"{snapshot}.application.done") == "yes\n"
    info = ok(uri, "job", "info", str(jobid), "guest.application.x", "guest.tools.mytool.port")
    assert info == "1\n4242\n"
    gone = fails(uri, "kvs", "get", "-N", namespace, "application.x")
    assert f'namespace "{namespace}": was removed' in gone


def test_job_info_guest_keys_name_what_is_missing(uri: str, client: Client) -> None:
    jobid = client.submit(jobspec_of(["true"], environment={"PATH": "/usr/bin:/bin"}))
    client.wait(jobid)
    err = fails(uri, "job", "info", str(jobid), "guest.application.nothing")
    assert f"job {jobid} has no guest.application.nothing" in err
    err = fails(uri, "job", "info", str(jobid), "bogus")
    assert "unknown key 'bogus'" in err
