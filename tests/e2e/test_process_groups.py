"""Each task leads a process group of its own, as in flux-core's shell, unless the job
sets ``-o nosetpgrp``; either way signals reach the task."""

from __future__ import annotations

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import fails, ok

# the task's own pid and process group (fields 1 and 5 of /proc/self/stat)
LEADS_ITS_GROUP = ("awk", "{print ($5 == $1)}", "/proc/self/stat")


def test_a_task_leads_its_own_group_unless_nosetpgrp(uri: str) -> None:
    assert ok(uri, "run", "-n2", *LEADS_ITS_GROUP) == "1\n1\n"
    assert ok(uri, "run", "-n2", "-o", "nosetpgrp", *LEADS_ITS_GROUP) == "0\n0\n"
    err = fails(uri, "run", "-o", "nosetpgrp=yes", "true")
    assert err.endswith("nosetpgrp: takes no value (1)\n")


def test_a_signal_reaches_a_task_in_the_shells_group(uri: str, client: Client) -> None:
    jobid = JobID.parse(ok(uri, "submit", "-o", "nosetpgrp", "sleep", "60"))
    client.wait_event(jobid, "start")
    client.kill(jobid, 15)
    result = client.wait(jobid)
    assert (result.success, result.errstr) == (False, "task(s) Terminated")
