"""Crash consistency: random kill -9s of the instance under load lose nothing and run nothing twice.

``test_random_kills`` is the short run of the engine in ``support/crash.py``
(``scripts/crash`` is the long one, with a random seed); the other tests show
that each of its checks catches what it is for, on made-up records.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pflux.api import Client
from pflux.exec.takeover import LOST_NOTE
from pflux.protocol.shellwire import LAUNCHER_DIED
from pflux.spec.eventlog import Event
from pflux.spec.fluid import JobID
from support.crash import (
    BROKER,
    LAUNCHER,
    LAUNCHER_FIRST,
    REAL,
    Checked,
    Load,
    chains_in_order,
    crash_run,
    finish,
    judge,
    lost,
    ran_once,
)
from support.instance import LiveInstance, held

SEEDS = (20261124,)
KILLS = 24

A, B = JobID(1 << 24), JobID(2 << 24)

SUBMIT = ("submit", {"userid": 0, "urgency": 16, "flags": 0})
RELEASE = ("release", {"ranks": "all", "final": True})
RAN = [
    SUBMIT,
    ("validate", None),
    ("depend", None),
    ("priority", {"priority": 16}),
    ("alloc", None),
    ("start", None),
    ("finish", {"status": 0}),
    RELEASE,
    ("free", None),
    ("clean", None),
]


def eventlog(*events: tuple[str, dict[str, object] | None], at: float = 1000.0) -> str:
    """The events one second apart from ``at`` on."""
    return "".join(
        Event(at + n, name, context).to_line() for n, (name, context) in enumerate(events)
    )


@pytest.mark.fault
@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", SEEDS)
def test_random_kills(tmp_path: Path, seed: int) -> None:
    summary = crash_run(tmp_path, seed, KILLS)
    assert summary.kills == KILLS
    assert summary.kinds[BROKER] < KILLS  # the broker alone, and with its helpers
    assert summary.kinds[LAUNCHER] + summary.kinds[LAUNCHER_FIRST] > 0
    assert summary.acknowledged > 0
    assert summary.ran > 0
    assert not summary.violations, str(summary)
    assert summary.lost == 0, str(summary)  # every running job survived every kind of kill


def test_the_end_releases_a_held_job_the_load_never_heard_of(tmp_path: Path) -> None:
    """A held job's submission cut off by the kill may be stored: it must not block the end."""
    with LiveInstance(tmp_path / "state") as instance, Client(instance.uri) as client:
        jobid = held(client)
        assert finish(client) == []
        assert client.wait(jobid).success


def test_a_job_whose_shell_a_kill_cost_is_counted_as_lost() -> None:
    checked, _ = judge(A, eventlog(*RAN))
    assert checked is not None
    assert not lost(checked.job)
    checked.job.exception = ("exec", f"{LAUNCHER_DIED}; no instance took the job over in 1 s")
    assert lost(checked.job)
    checked.job.exception = ("exec", LOST_NOTE)
    assert lost(checked.job)
    checked.job.exception = ("cancel", "crash test")
    assert not lost(checked.job)


def test_a_job_that_ran_to_the_end_is_valid() -> None:
    checked, problems = judge(A, eventlog(*RAN))
    assert problems == []
    assert checked is not None
    assert checked.job.success


@pytest.mark.parametrize(
    ("events", "says"),
    [
        ([*RAN, ("clean", None)], "does not replay"),
        ([*RAN, ("memo", {"x": 1})], "does not replay"),
        (RAN[:-1], "not INACTIVE exactly once"),
        ([*RAN[:3], ("alloc", None)], "does not replay"),
        ([RAN[1], *RAN], "does not replay"),
    ],
)
def test_an_eventlog_out_of_rfc_21_order_is_reported(
    events: list[tuple[str, dict[str, object] | None]], says: str
) -> None:
    _, problems = judge(A, eventlog(*events))
    assert len(problems) == 1
    assert says in problems[0]


def test_an_eventlog_that_does_not_parse_is_reported() -> None:
    _, problems = judge(A, eventlog(*RAN) + "{not json\n")
    assert len(problems) == 1
    assert "does not parse" in problems[0]


def load_of(tmp_path: Path, *chains: tuple[JobID, JobID]) -> Load:
    load = Load(tmp_path / "runs")
    load.kinds = {A: REAL, B: REAL}
    load.chains = list(chains)
    return load


def jobs_of(**logs: list[tuple[str, dict[str, object] | None]]) -> dict[JobID, Checked]:
    """Jobs ``a`` and ``b`` from their events, each job's after the one before."""
    ids = {"a": A, "b": B}
    jobs = {}
    for n, (name, events) in enumerate(logs.items()):
        checked, _ = judge(ids[name], eventlog(*events, at=1000.0 * (n + 1)))
        assert checked is not None
        jobs[ids[name]] = checked
    return jobs


def test_a_job_that_ran_twice_is_reported(tmp_path: Path) -> None:
    runs = [(A, "start"), (A, "end"), (A, "start"), (A, "end")]
    problems = list(ran_once(jobs_of(a=RAN), load_of(tmp_path), runs))
    assert problems
    assert "ran 2 times" in problems[0]


def test_a_success_that_never_ran_is_reported(tmp_path: Path) -> None:
    problems = list(ran_once(jobs_of(a=RAN), load_of(tmp_path), []))
    assert problems == [f"{A}: succeeded, but started 0 and ended 0 times"]


def test_a_dependent_that_started_before_its_antecedent_ended_is_reported(tmp_path: Path) -> None:
    runs = [(A, "start"), (B, "start"), (A, "end"), (B, "end")]
    jobs = jobs_of(a=RAN, b=RAN)
    problems = list(chains_in_order(jobs, load_of(tmp_path, (A, B)), runs))
    assert problems == [f"{B}: started before its antecedent {A} ended"]


def test_a_dependent_of_a_failed_job_that_started_is_reported(tmp_path: Path) -> None:
    failed = [*RAN[:6], ("finish", {"status": 256}), *RAN[7:]]
    runs = [(A, "start"), (A, "end"), (B, "start"), (B, "end")]
    jobs = jobs_of(a=failed, b=RAN)
    problems = list(chains_in_order(jobs, load_of(tmp_path, (A, B)), runs))
    assert problems == [f"{B}: started though its antecedent {A} did not succeed"]


def test_a_chain_in_order_passes(tmp_path: Path) -> None:
    runs = [(A, "start"), (A, "end"), (B, "start"), (B, "end")]
    jobs = jobs_of(a=RAN, b=RAN)
    assert list(chains_in_order(jobs, load_of(tmp_path, (A, B)), runs)) == []
    assert list(ran_once(jobs, load_of(tmp_path), runs)) == []


def test_a_dependent_canceled_before_its_task_wrote_a_record_passes(tmp_path: Path) -> None:
    """Its eventlog has ``start``, its task was killed before it wrote its record."""
    runs = [(A, "start"), (A, "end")]
    canceled = [*RAN[:5], ("exception", {"type": "cancel", "severity": 0}), *RAN[5:]]
    jobs = jobs_of(a=RAN, b=canceled)
    assert list(chains_in_order(jobs, load_of(tmp_path, (A, B)), runs)) == []


def test_a_dependent_that_left_depend_before_its_antecedent_finished_is_reported(
    tmp_path: Path,
) -> None:
    runs = [(A, "start"), (A, "end")]
    jobs = jobs_of(b=RAN, a=RAN)  # b's events are posted first
    problems = list(chains_in_order(jobs, load_of(tmp_path, (A, B)), runs))
    assert problems == [f"{B}: left DEPEND before its antecedent {A} finished"]
