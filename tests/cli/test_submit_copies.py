"""The jobs of ``submit --cc``/``--bcc`` and of ``bulksubmit``: what each copy sends is
what building it in full gives (``jobtemplate`` builds one template and fills in the
copies), a bad copy stops the submission there, and the jobspec is built a fixed
number of times however many copies there are.

The commands run in-process with ``submit_all`` replaced by one that records each
copy's request as it is taken, so no instance is needed.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.cli import jobopts, jobtemplate, main, submit

Sent = list[tuple[jobopts.JobRequest, str | None, str | None]]


def sent_by(argv: list[str], *, templates: bool = True, stdin: str = "") -> tuple[int, Sent, str]:
    """``pflux ARGV``'s exit code, each request it sent (with its ``--log`` files), and
    its stderr; ``templates`` False builds every copy in full."""
    sent: Sent = []

    def record(prog: str, args: Any, copies: Any, total: int) -> int:
        for copy in copies:
            sent.append((copy.request, copy.log, copy.log_stderr))
        return 0

    err = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(submit, "submit_all", record)
        patch.setattr(sys, "stdin", io.StringIO(stdin))
        if not templates:
            patch.setattr(jobtemplate, "Templates", lambda build: build)
        with contextlib.redirect_stderr(err):
            rc = main(argv)
    return rc, sent, err.getvalue()


def same_either_way(argv: list[str], stdin: str = "") -> tuple[int, Sent, str]:
    """``sent_by(argv)``, checked to be what building each copy in full sends."""
    fast = sent_by(argv, stdin=stdin)
    full = sent_by(argv, templates=False, stdin=stdin)
    assert fast == full
    # in the same key order too: --dry-run prints the jobspec as built
    assert [json.dumps(r.jobspec) for r, *_ in fast[1]] == [
        json.dumps(r.jobspec) for r, *_ in full[1]
    ]
    return fast


# options of every kind: whole texts ({cc} in the name, paths, command), texts the
# builder reads ({cc} as a count, JSON, an env rule, an urgency), and overrides
OPTIONS = (
    "--job-name=j{cc}", "--job-name={cc}", "--job-name=fixed", "--job-name=ü{cc}",
    "--output=o{cc}.out", "--output=none", "--output=kvs", "--output={{id}}-{cc}",
    "--error=e{cc}", "--label-io", "--unbuffered", "--input=in{cc}", "--input={cc}",
    "--cwd=/tmp/{cc}", "--cwd=/tmp", "--setattr=user.x={cc}", "--setattr=user.y=a{cc}",
    "--setattr=system.job.name=over", "--setattr=system.cwd=/over", "--env=X={cc}",
    "--env=-*", "--env=-X{cc}", "--env=PATH", "-n{cc}", "-N1", "--urgency={cc}",
    "--urgency=hold", "--flags=waitable", "--time-limit={cc}m", "--log=l{cc}",
    "--log-stderr=e{cc}", "--setopt=verbose={cc}", "--dependency=afterok:{cc}",
    "--rlimit=-*", "--rlimit=nofile={cc}00",
)  # fmt: skip
COMMANDS = (
    ["true"], ["echo", "{cc}"], ["--", "sh", "-c", "echo {cc}"], ["{cc}"], ["x{cc}y", ""],
    ["--", "{cc}"], ["a\udcffb{cc}"], ["echo", "{cc}", "{cc}{cc}"],
)  # fmt: skip
# inputs a template could misread: the separator, output paths kept in the KVS, text
# that is not valid Unicode (a lone surrogate), an empty one, one with braces
INPUTS = ("a", "--", "none", "kvs", "1", "", "ü", "\udcff", "{}", "x y")
COPIES = ("--cc=0-3", "--cc=1-4", "--bcc=1-3", "--cc=30-33")


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(OPTIONS), max_size=5),
    st.sampled_from(COMMANDS),
    st.sampled_from(COPIES),
)
def test_each_copy_sends_what_building_it_in_full_sends(
    options: list[str], command: list[str], copies: str
) -> None:
    rc, _, err = same_either_way(["submit", copies, *options, *command])
    assert (rc == 0) == (err == ""), err  # a refusal (1, usage 2) says why


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(OPTIONS), max_size=4),
    st.lists(st.sampled_from(INPUTS), min_size=1),
    st.sampled_from(([], ["--cc=1-2"], ["--bcc=0-1"])),
)
def test_each_bulksubmit_job_sends_what_building_it_in_full_sends(
    options: list[str], inputs: list[str], copies: list[str]
) -> None:
    templated = [option.replace("{cc}", "{}") for option in options]
    argv = ["bulksubmit", *copies, *templated, "echo", "{}", "{cc}", ":::", *inputs]
    rc, _, err = same_either_way(argv)
    assert (rc == 0) == (err == ""), err


def test_copies_differ_in_their_whole_texts_and_cc() -> None:
    rc, sent, err = same_either_way(
        ["submit", "--cc=1-3", "--job-name=j{cc}", "--output=o{cc}", "--log=l{cc}", "true", "{cc}"]
    )
    assert (rc, err) == (0, "")
    for cc, (request, log, log_stderr) in enumerate(sent, 1):
        system = request.jobspec["attributes"]["system"]
        assert request.jobspec["tasks"][0]["command"] == ["true", str(cc)]
        assert system["job"]["name"] == f"j{cc}"
        assert system["shell"]["options"]["output"]["stdout"]["path"] == f"o{cc}"
        assert system["environment"]["FLUX_JOB_CC"] == str(cc)
        assert (log, log_stderr) == (f"l{cc}", None)


def test_a_bad_copy_stops_the_submission_there_the_ones_before_it_sent() -> None:
    # copies 30 and 31 are good, 32's urgency is refused when it is built, 33 never is
    rc, sent, err = same_either_way(
        ["submit", "--cc=30-33", "--urgency={cc}", "--job-name=j{cc}", "true"]
    )
    assert rc == 1
    assert err == "pflux-submit: ERROR: --urgency=32: must be 0-31, hold, default or expedite\n"
    assert [request.urgency for request, _, _ in sent] == [30, 31]
    # as the first copy, the same job refuses before anything is sent
    rc, sent, err = same_either_way(["submit", "--cc=32-33", "--urgency={cc}", "true"])
    assert (rc, sent) == (1, [])


def test_a_copy_whose_whole_text_is_read_otherwise_is_built_in_full() -> None:
    # "none" keeps the output in the KVS: that copy has no output path at all
    rc, sent, err = same_either_way(
        ["bulksubmit", "--output={}", "true", ":::", "a", "b", "none", "c"]
    )
    assert (rc, err) == (0, "")
    paths = [r.jobspec["attributes"]["system"]["shell"]["options"].get("output") for r, *_ in sent]
    assert [p and p["stdout"]["path"] for p in paths] == ["a", "b", None, "c"]


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ("--job-name=j{}", ["ja", "jb"]),
        ("--job-name=fixed", ["fixed", "fixed"]),
        ("--job-name=a}b", None),  # a lone brace: not a template
        ("--job-name=a::list::b", None),  # a list's marker fits only the command
    ],
)
def test_bulksubmit_expands_the_options_that_hold_templates(
    option: str, expected: list[str] | None
) -> None:
    rc, sent, err = sent_by(["bulksubmit", option, "true", ":::", "a", "b"])
    if expected is None:
        assert (rc, sent) == (1, [])
        assert err.startswith("pflux-bulksubmit: ERROR: Invalid replacement string in")
        return
    assert (rc, err) == (0, "")
    assert [r.jobspec["attributes"]["system"]["job"]["name"] for r, *_ in sent] == expected


def test_what_one_copy_adds_to_its_rules_results_stays_in_that_copy() -> None:
    # each copy's env-expand and rlimit come from rules applied once, each copy a copy
    rc, sent, err = same_either_way(
        ["submit", "--cc=1-3", "--env=A={{tmpdir}}", "--setopt=env-expand.B{cc}=x",
         "--setopt=rlimit.core={cc}", "true"]
    )  # fmt: skip
    assert (rc, err) == (0, "")
    for cc, (request, *_) in enumerate(sent, 1):
        options = request.jobspec["attributes"]["system"]["shell"]["options"]
        assert options["env-expand"] == {"A": "{{tmpdir}}", f"B{cc}": "x"}
        assert options["rlimit"]["core"] == cc


class Counted:
    """``jobopts.job_request``, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.real = jobopts.job_request

    def __call__(self, *args: Any, **kwargs: Any) -> jobopts.JobRequest:
        self.calls += 1
        return self.real(*args, **kwargs)


@pytest.mark.parametrize(
    ("argv", "builds"),
    [
        (["submit", "--cc=1-200", "true"], 1),
        (["submit", "--bcc=1-200", "true"], 1),
        # the first copy, then the template with each of its two sets of markers
        (["submit", "--cc=1-200", "--job-name=j{cc}", "--output=o{cc}", "true", "{cc}"], 3),
        (["bulksubmit", "--job-name={}", "echo", "{}", ":::", *map(str, range(200))], 3),
        (["bulksubmit", "--cc=1-2", "echo", "{}", "{cc}", ":::", *map(str, range(100))], 3),
    ],
)
def test_the_jobspec_is_built_a_fixed_number_of_times_not_once_a_copy(
    argv: list[str], builds: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = Counted()
    monkeypatch.setattr(jobopts, "job_request", counted)
    rc, sent, err = sent_by(argv)
    assert (rc, err, len(sent)) == (0, "", 200)
    assert counted.calls == builds


def test_a_copy_with_a_count_from_cc_is_built_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = Counted()
    monkeypatch.setattr(jobopts, "job_request", counted)
    rc, sent, _ = sent_by(["submit", "--cc=1-20", "-n{cc}", "true"])
    assert rc == 0
    assert len({json.dumps(r.jobspec["resources"]) for r, *_ in sent}) == 20
    assert 20 <= counted.calls <= 22  # each copy, and a template that does not hold
