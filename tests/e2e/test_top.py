"""``pflux top`` on a real pseudo-terminal against a live instance of its own.

The module's instance holds, before any test runs, one running job (test mode:
it runs until canceled), one pending (held), one complete and one failed, so
the summary's counts are exact.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import LiveInstance, fails, held, ok
from support.screen import screen
from support.terminal import Terminal

HOLD = "--setattr=system.exec.test.run_duration=0s"  # runs until canceled
XTERM = {"TERM": "xterm"}


@pytest.fixture(scope="module")
def jobs(uri: str) -> Iterator[dict[str, JobID]]:
    with Client(uri) as client:
        made = {"running": JobID.parse(ok(uri, "submit", "--job-name=longrun", HOLD, "true"))}
        client.wait_event(made["running"], "start")
        made["pending"] = held(client)
        for key, command in (("complete", "true"), ("failed", "false")):
            made[key] = JobID.parse(ok(uri, "submit", command))
            client.wait(made[key])
        yield made


def test_top_shows_the_counts_and_the_running_job_and_q_quits(
    uri: str, jobs: dict[str, JobID]
) -> None:
    with Terminal(uri, "top", size=(30, 100), **XTERM) as term:
        for count in ("1 pending", "1 running", "1 complete", "1 failed"):
            term.expect_screen(re.escape(count))
        term.expect_screen(r"cores \[\|+ +1/4\]")
        term.expect_screen(r"JOBID +USER +ST +NTASKS +NNODES +RUNTIME +NAME")
        term.expect_screen(re.escape(jobs["running"].f58) + r" +\S+ +R +1 +1 +\S+ longrun")
        assert jobs["pending"].f58 not in term.text  # only running jobs are listed
        term.send(b"d")  # complete and failed as one count
        term.expect_screen(r"2 inactive")
        term.send(b"q")
        assert term.wait() == 0


def test_test_exit_draws_once_and_exits(uri: str, jobs: dict[str, JobID]) -> None:
    with Terminal(uri, "top", "--test-exit", "--color=never", **XTERM) as term:
        assert term.wait() == 0
        shown = "\n".join(screen(term.text, *term.size))
        assert "nodes [" in shown
        assert jobs["running"].f58 in shown
        assert "\x1b[33m" not in term.text  # the bars are not yellow
    with Terminal(uri, "top", "--test-exit", "--color", **XTERM) as term:
        assert term.wait() == 0
        assert "\x1b[33m" in term.text


def test_a_job_submitted_later_shows_at_the_next_refresh(uri: str, client: Client) -> None:
    with Terminal(uri, "top", size=(30, 100), **XTERM) as term:
        term.expect_screen(r"RUNTIME")
        later = JobID.parse(ok(uri, "submit", "--job-name=later", HOLD, "true"))
        term.expect_screen(re.escape(later.f58) + r" .* later")
        client.cancel(later)
        term.send(b"q")
        assert term.wait() == 0


def test_enter_opens_a_nested_instance_whose_uri_is_known(
    uri: str, client: Client, jobs: dict[str, JobID]
) -> None:
    plain = jobs["running"]
    with Terminal(uri, "top", size=(30, 100), **XTERM) as term:
        term.expect_screen(re.escape(plain.f58))
        term.send(b"\r")
        term.expect_screen(re.escape(f"{plain.f58}: not an instance whose URI is known"))
        term.send(b"q")
        assert term.wait() == 0
    # a job whose instance posted its URI (here: this instance's own) is opened
    nested = JobID.parse(ok(uri, "submit", "--job-name=nest", HOLD, "true"))
    client.wait_event(nested, "start")
    client.memo(nested, {"uri": uri})
    with Terminal(uri, "top", size=(30, 100), **XTERM) as term:
        term.expect_screen(re.escape(nested.f58) + r" .* nest")
        term.send(b"\r")  # the newest job is the first row
        term.expect_screen(re.escape(nested.f58) + r"  ∞")
        term.send(b"q")  # back up to the enclosing instance
        term.expect_screen(r"(?m)^∞$")  # the root: no title
        term.send(b"q")
        assert term.wait() == 0
    with Terminal(uri, "top", "--test-exit", nested.f58, **XTERM) as term:
        assert term.wait() == 0
        assert re.search(re.escape(nested.f58) + r"  ∞", "\n".join(screen(term.text, *term.size)))
    client.cancel(nested)
    client.wait(nested)


def test_bad_options_and_targets_are_refused(uri: str, jobs: dict[str, JobID]) -> None:
    assert "--queue: 'batch' is not a valid queue" in fails(uri, "top", "--queue=batch", rc=2)
    assert "--color: 'sometimes' must be 'auto', 'always' or 'never'" in fails(
        uri, "top", "--color=sometimes", rc=2
    )
    assert "unrecognized arguments: extra" in fails(uri, "top", "a", "extra", rc=2)
    assert "pflux-top: ERROR: stdin is not a terminal" in fails(uri, "top", script=True)
    for target, message in (
        ("nonsense", "TARGET: nonsense is neither a URI nor a valid jobid"),
        (jobs["complete"].f58, f"jobid {jobs['complete'].f58} is not running"),
        (jobs["running"].f58, f"URI not found for job {jobs['running'].f58}"),
        ("ƒ2", "jobid ƒ2 not found"),
    ):
        with Terminal(uri, "top", target, **XTERM) as term:
            assert term.wait() != 0
            assert message in term.text


def test_uri_and_the_flux_name(uri: str, tmp_path: Path) -> None:
    with Terminal(uri, "top", f"--uri=local://{tmp_path}/nowhere", **XTERM) as term:
        assert term.wait() == 1
        assert (
            f"pflux-top: ERROR: cannot connect to the instance at {tmp_path}/nowhere" in term.text
        )
    with Terminal(uri, "top", "--test-exit", f"--uri={uri}", **XTERM) as term:
        assert term.wait() == 0
        assert "nodes [" in "\n".join(screen(term.text, *term.size))
    with Terminal(uri, "top", "nonsense", PFLUX_AS_FLUX="1", **XTERM) as term:
        assert term.wait() == 2
        assert "flux-top: ERROR: TARGET: nonsense is neither a URI nor a valid jobid" in term.text


def test_the_job_list_scrolls_to_the_selected_job(uri: str, client: Client) -> None:
    many = [JobID.parse(ok(uri, "submit", f"--job-name=many{i}", HOLD, "true")) for i in range(3)]
    for jobid in many:
        client.wait_event(jobid, "start")
    with Terminal(uri, "top", size=(11, 100), **XTERM) as term:  # room for 2 of the 4 jobs
        term.expect_screen(re.escape(many[2].f58) + r" .* many2\n.* many1")
        term.send(b"jj")  # the third job: the list scrolls by one
        term.expect_screen(re.escape(many[1].f58) + r" .* many1\n.* many0")
        assert "many2" not in "\n".join(screen(term.text, *term.size))
        term.send(b"q")
        assert term.wait() == 0
    for jobid in many:
        client.cancel(jobid)
        client.wait(jobid)


def test_an_instance_that_goes_away_ends_top_with_an_error(tmp_path: Path) -> None:
    with LiveInstance(tmp_path / "state") as live, Terminal(live.uri, "top", **XTERM) as term:
        term.expect_screen(r"RUNTIME")
        assert live.stop() == 0
        assert term.wait() == 1
        assert "pflux-top: ERROR: lost connection to the instance" in term.text
