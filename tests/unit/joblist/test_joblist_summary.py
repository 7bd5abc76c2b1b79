"""One job's summary from RFC 21 event sequences: every attribute, as flux-core reports it."""

from __future__ import annotations

from typing import Any

import pytest
from joblist_entries import R_2NODES, Story, jobspec

from pflux.joblist.attributes import ATTRS, AttrError, select, to_json
from pflux.joblist.index import JobIndex
from pflux.spec.builder import set_attr, set_shell_option
from pflux.spec.states import State

ALL = select(["all"])


def summarize(*entries: dict[str, Any]) -> dict[str, Any]:
    index = JobIndex()
    index.feed(entries)
    index.settle()
    summary = index.get(entries[0]["id"])
    assert summary is not None
    return to_json(summary, ALL)


def test_completed_job_has_every_attribute() -> None:
    job = summarize(*Story(1).completed().entries)
    assert job == {
        "id": 1,
        "userid": 1000,
        "urgency": 16,
        "priority": 16,
        "t_submit": 1000.1,
        "t_depend": 1000.2,
        "t_priority": 1000.3,
        "t_sched": 1000.4,
        "t_run": 1000.5,
        "t_cleanup": 1000.7,
        "t_inactive": 1001.0,
        "state": int(State.INACTIVE),
        "name": "true",
        "cwd": "/home/user",
        "ntasks": 1,
        "ncores": 8,
        "duration": 0.0,
        "nnodes": 2,
        "ranks": "[0-1]",
        "nodelist": "node[0-1]",
        "success": True,
        "exception_occurred": False,
        "result": 1,
        "expiration": 4600.0,
        "waitstatus": 0,
    }


def test_attribute_names_are_flux_cores() -> None:
    assert ATTRS == (
        "userid", "urgency", "priority", "t_submit", "t_depend", "t_priority", "t_sched",
        "t_run", "t_cleanup", "t_inactive", "state", "name", "cwd", "queue", "project",
        "bank", "ntasks", "ncores", "duration", "nnodes", "ranks", "nodelist", "success",
        "exception_occurred", "exception_type", "exception_severity", "exception_note",
        "result", "expiration", "annotations", "waitstatus", "dependencies",
    )  # fmt: skip


def test_pending_job_reports_only_what_is_known() -> None:
    job = summarize(*Story(2).pending(priority=7).entries)
    assert job == {
        "id": 2,
        "userid": 1000,
        "urgency": 16,
        "priority": 7,
        "t_submit": 1000.1,
        "t_depend": 1000.2,
        "t_priority": 1000.3,
        "t_sched": 1000.4,
        "state": int(State.SCHED),
        "name": "true",
        "cwd": "/home/user",
        "ntasks": 1,
        "ncores": 1,
        "duration": 0.0,
    }


def test_priority_is_not_reported_before_sched() -> None:
    job = summarize(*Story(3).submit().event("validate").entries)
    assert job["state"] == int(State.DEPEND)
    assert "priority" not in job
    assert "t_priority" not in job


def test_new_job_before_validate() -> None:
    job = summarize(*Story(3).submit(userid=5, urgency=3).entries)
    assert job["state"] == int(State.NEW)
    assert (job["userid"], job["urgency"], job["t_submit"]) == (5, 3, 1000.1)
    assert "t_depend" not in job


def test_failed_job() -> None:
    job = summarize(*Story(4).completed(status=256).entries)
    assert (job["result"], job["success"], job["waitstatus"]) == (2, False, 256)
    assert job["exception_occurred"] is False


def test_canceled_while_pending() -> None:
    story = Story(5).pending().exception("cancel", note="by you").event("clean")
    job = summarize(*story.entries)
    assert job["result"] == 4
    assert job["success"] is False
    assert job["exception_occurred"] is True
    assert (job["exception_type"], job["exception_severity"]) == ("cancel", 0)
    assert job["exception_note"] == "by you"
    assert job["t_cleanup"] == 1000.5
    assert "t_run" not in job
    assert "waitstatus" not in job
    assert "nodelist" not in job


def test_timelimit_is_timeout() -> None:
    story = Story(6).running().exception("timelimit", note="job ran too long").finish(9)
    job = summarize(*story.entries)
    assert (job["result"], job["exception_type"], job["waitstatus"]) == (8, "timelimit", 9)
    assert job["t_cleanup"] == 1000.7  # the exception, not the finish


def test_fatal_exception_while_running_fails_the_job() -> None:
    job = summarize(*Story(7).running().exception("exec", note="boom").finish(0).entries)
    assert (job["result"], job["success"]) == (2, False)


def test_nonfatal_exception_is_reported_but_the_job_completes() -> None:
    job = summarize(*Story(8).running().exception("lost", 3, "rank 1").finish(0).entries)
    assert (job["result"], job["success"]) == (1, True)
    assert job["exception_occurred"] is True
    assert (job["exception_type"], job["exception_severity"]) == ("lost", 3)


def test_the_most_severe_exception_is_reported() -> None:
    story = Story(9).running().exception("a", 4).exception("b", 1).exception("c", 1)
    job = summarize(*story.exception("cancel").finish(15).entries)
    assert (job["exception_type"], job["exception_severity"], job["result"]) == ("cancel", 0, 4)


def test_exception_fields_wait_for_inactive() -> None:
    job = summarize(*Story(10).running().exception("lost", 3).entries)
    assert job["state"] == int(State.RUN)
    assert "exception_occurred" not in job
    assert "exception_type" not in job


def test_dependencies_outstanding_then_satisfied() -> None:
    story = Story(11).submit().event("validate")
    story.event("dependency-add", {"description": "after-success=42"})
    story.event("dependency-add", {"description": "begin-time=2000.000"})
    assert summarize(*story.entries)["dependencies"] == ["after-success=42", "begin-time=2000.000"]
    story.event("dependency-remove", {"description": "after-success=42"})
    assert summarize(*story.entries)["dependencies"] == ["begin-time=2000.000"]
    story.event("dependency-remove", {"description": "begin-time=2000.000"})
    story.event("depend").event("priority", {"priority": 16})
    assert summarize(*story.entries)["dependencies"] == []
    story.event("exception", {"type": "cancel", "severity": 0, "note": ""}).event("clean")
    assert summarize(*story.entries)["dependencies"] == []


def test_no_dependencies_attribute_without_dependencies() -> None:
    assert "dependencies" not in summarize(*Story(12).completed().entries)


def test_urgency_in_sched_goes_back_to_priority() -> None:
    story = Story(13).pending(priority=16).event("urgency", {"urgency": 0, "userid": 1000})
    job = summarize(*story.entries)
    assert (job["state"], job["urgency"]) == (int(State.PRIORITY), 0)
    assert "priority" not in job  # unknown until posted again
    story.event("priority", {"priority": 0})
    job = summarize(*story.entries)
    assert (job["state"], job["priority"]) == (int(State.SCHED), 0)
    assert (job["t_priority"], job["t_sched"]) == (1000.3, 1000.4)  # first entries kept


def test_memo_is_user_annotations() -> None:
    story = Story(14).pending().event("memo", {"uri": "local:///x", "note": "a"})
    assert summarize(*story.entries)["annotations"] == {"user": {"uri": "local:///x", "note": "a"}}
    story.event("memo", {"uri": None})
    assert summarize(*story.entries)["annotations"] == {"user": {"note": "a"}}
    story.event("memo", {"note": None})
    assert "annotations" not in summarize(*story.entries)


def test_scheduler_annotations_merge_and_null_deletes() -> None:
    story = Story(15).pending()
    first = story.annotate({"sched": {"reason_pending": "no cores", "t_estimate": 5000.0}})
    second = story.annotate({"sched": {"reason_pending": None}})
    job = summarize(*story.entries, first, second)
    assert job["annotations"] == {"sched": {"t_estimate": 5000.0}}
    job = summarize(*story.entries, first, story.annotate({"sched": None}))
    assert "annotations" not in job


def test_inactive_jobs_keep_the_annotations_their_events_make() -> None:
    """Entries' annotations show while the job is active; once inactive it lists what a
    replay of its eventlog gives (alloc's annotations, memos), as after a restart."""
    story = Story(16).pending()
    pending = story.annotate({"sched": {"reason_pending": "no cores"}})
    memo = {"user": {"note": "x"}}
    story.event("memo", {"note": "x"})
    story.event("alloc", R=R_2NODES).event("start")
    running = summarize(*story.entries[:4], pending, *story.entries[4:])
    assert running["annotations"] == {"sched": {"reason_pending": "no cores"}, **memo}
    story.finish(0)
    job = summarize(*story.entries[:4], pending, *story.entries[4:])
    assert job["result"] == 1
    assert job["annotations"] == memo == summarize(*story.entries)["annotations"]
    late = Story(16).annotate({"sched": {"reason_pending": "late"}})
    assert summarize(*story.entries, late)["annotations"] == memo


def test_canceled_pending_job_lists_no_scheduler_annotations() -> None:
    story = Story(17).pending()
    pending = story.annotate({"sched": {"reason_pending": "no cores"}})
    story.exception("cancel").event("clean")
    job = summarize(*story.entries[:4], pending, *story.entries[4:])
    assert job["result"] == 4
    assert "annotations" not in job


def test_annotations_recorded_by_alloc() -> None:
    story = Story(16).pending()
    annotations = {"sched": {"resource_summary": "rank0/core0"}}
    story.event("alloc", {"annotations": annotations}, R=R_2NODES)
    assert summarize(*story.entries)["annotations"] == annotations


def test_annotations_of_an_inactive_job_stay_compact_and_readable() -> None:
    story = Story(17).pending().event("memo", {"k": 1}).exception("cancel").event("clean")
    index = JobIndex()
    index.feed(story.entries)
    summary = index.get(17)
    assert summary is not None
    assert isinstance(summary.annotations, str)
    assert to_json(summary, ALL)["annotations"] == {"user": {"k": 1}}


def test_jobspec_update_changes_the_summary_not_the_jobspec() -> None:
    spec = jobspec()
    story = Story(18).pending(spec=spec)
    updates = {"attributes.system.duration": 60.0, "attributes.system.job": {"name": "renamed"}}
    story.event("jobspec-update", updates)
    job = summarize(*story.entries)
    assert (job["duration"], job["name"]) == (60.0, "renamed")
    assert spec["attributes"]["system"]["duration"] == 0


def test_resource_update_sets_expiration() -> None:
    story = Story(19).running().event("resource-update", {"expiration": 9999.0})
    assert summarize(*story.entries)["expiration"] == 9999.0


def test_name_queue_project_bank_from_the_jobspec() -> None:
    spec = jobspec("/usr/bin/hostname", queue="batch", bank="physics")
    set_attr(spec, "system.project", "fusion")
    set_attr(spec, "system.job.name", "myjob")
    job = summarize(*Story(20).pending(spec=spec).entries)
    assert (job["name"], job["queue"], job["bank"], job["project"]) == (
        "myjob",
        "batch",
        "physics",
        "fusion",
    )


def test_name_is_the_command_basename() -> None:
    job = summarize(*Story(21).submit(spec=jobspec("/usr/bin/hostname")).entries)
    assert job["name"] == "hostname"


def test_counts_with_nodes() -> None:
    spec = jobspec(num_tasks=4, num_nodes=2, cores_per_task=2)
    job = summarize(*Story(22).pending(spec=spec).entries)
    assert (job["ntasks"], job["nnodes"], job["ncores"]) == (4, 2, 8)


def test_exclusive_nodes_have_no_core_count_until_r() -> None:
    spec = jobspec(num_tasks=2, num_nodes=2, exclusive=True)
    story = Story(23).pending(spec=spec)
    job = summarize(*story.entries)
    assert "ncores" not in job
    assert job["nnodes"] == 2
    story.event("alloc", R=R_2NODES)
    assert summarize(*story.entries)["ncores"] == 8


@pytest.mark.parametrize(
    ("kind", "nodes", "before", "after"),
    [("node", 2, 6, 6), ("node", None, None, 6), ("core", None, 3, 3), ("core", 2, None, 24)],
)
def test_per_resource_task_counts(
    kind: str, nodes: int | None, before: int | None, after: int
) -> None:
    spec = jobspec(num_tasks=1 if nodes is None else 2, num_nodes=nodes)
    set_shell_option(spec, "per-resource", {"type": kind, "count": 3})
    story = Story(24).pending(spec=spec)
    assert summarize(*story.entries).get("ntasks") == before
    story.event("alloc", R=R_2NODES)
    assert summarize(*story.entries)["ntasks"] == after


def test_unreadable_jobspec_and_r_are_survived(caplog: pytest.LogCaptureFixture) -> None:
    story = Story(25).pending(spec={"version": 1, "resources": "nonsense"})
    story.event("alloc", R={"version": 9}).event("start").finish(0)
    job = summarize(*story.entries)
    assert job["result"] == 1
    assert "name" not in job
    assert "nodelist" not in job
    assert "cannot read the jobspec" in caplog.text
    assert "invalid R" in caplog.text


def test_jobs_on_one_layout_keep_their_own_expiration(caplog: pytest.LogCaptureFixture) -> None:
    index = JobIndex()
    for jobid, expiration in ((30, 100.0), (31, 200.0), (32, "soon")):
        r = {**R_2NODES, "execution": {**R_2NODES["execution"], "expiration": expiration}}
        index.feed(Story(jobid).pending().event("alloc", R=r).entries)
    index.settle()
    got = {job["id"]: job.get("expiration") for job in index.list(select(["expiration"]))}
    assert got == {30: 100.0, 31: 200.0, 32: None}
    assert "execution.expiration: must be a time >= 0, got 'soon'" in caplog.text


def test_an_illegal_event_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    story = Story(26).pending().event("start").event("alloc", R=R_2NODES)
    job = summarize(*story.entries)
    assert job["state"] == int(State.RUN)
    assert "skipping an event" in caplog.text


def test_attrs_choose_what_is_reported() -> None:
    index = JobIndex()
    index.feed(Story(27).completed().entries)
    summary = index.get(27)
    assert summary is not None
    assert to_json(summary, select(["name", "id", "result"])) == {
        "id": 27,
        "name": "true",
        "result": 1,
    }
    assert to_json(summary, select([])) == {"id": 27}


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        (["nonsense"], "nonsense is not a valid attribute"),
        ("all", "attrs must be an array"),
        ([3], "attrs: 3 is not an attribute name"),
    ],
)
def test_bad_attrs(attrs: Any, message: str) -> None:
    with pytest.raises(AttrError, match=message):
        select(attrs)
