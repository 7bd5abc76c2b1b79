"""RFC 26 end to end: every scheme, its events, and flux-core's failure behaviour.

Test-mode jobs (no processes) keep this fast; ``wait_status`` makes a job fail.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from pflux.api import Client
from pflux.errors import RPCError
from pflux.spec.eventlog import Event
from pflux.spec.fluid import JobID
from support.instance import fails, jobspec, ok, pflux

FAIL = 256  # wait status of exit code 1


def job(run: str = "0.01s", *deps: dict[str, Any], **test: Any) -> dict[str, Any]:
    spec = jobspec(run, **test)
    if deps:
        spec["attributes"]["system"]["dependencies"] = list(deps)
    return spec


def dep(scheme: str, value: object, **options: str) -> dict[str, Any]:
    return {"scheme": scheme, "value": str(value), **options}


def log(client: Client, jobid: int) -> list[Event]:
    return list(client.events(jobid))


def story(client: Client, jobid: int) -> list[tuple[str, dict[str, Any] | None]]:
    """The dependency part of a job's eventlog: names and contexts up to clean."""
    keep = {"dependency-add", "dependency-remove", "depend", "exception"}
    return [(e.name, e.context) for e in log(client, jobid) if e.name in keep]


def test_afterok_on_success(client: Client) -> None:
    a = client.submit(job("0.2s"))
    b = client.submit(job("0.01s", dep("afterok", a)))
    assert client.wait(b).success
    desc = {"description": f"after-success={a}"}
    assert story(client, b) == [
        ("dependency-add", desc),
        ("dependency-remove", desc),
        ("depend", None),
    ]
    a_clean = next(e for e in log(client, a) if e.name == "clean")
    b_depend = next(e for e in log(client, b) if e.name == "depend")
    assert b_depend.timestamp >= a_clean.timestamp


@pytest.mark.parametrize(
    ("scheme", "status", "satisfied", "description"),
    [
        ("afterok", FAIL, False, "after-success"),
        ("afternotok", 0, False, "after-failure"),
        ("afternotok", FAIL, True, "after-failure"),
        ("afterany", FAIL, True, "after-finish"),
        ("afterany", 0, True, "after-finish"),
    ],
)
def test_results_decide_after_schemes(
    client: Client, scheme: str, status: int, satisfied: bool, description: str
) -> None:
    a = client.submit(job("0.2s", wait_status=status))
    b = client.submit(job("0.01s", dep(scheme, a)))
    result = client.wait(b)
    desc = {"description": f"{description}={a}"}
    if satisfied:
        assert result.success
        assert story(client, b)[-2:] == [("dependency-remove", desc), ("depend", None)]
    else:
        assert story(client, b) == [
            ("dependency-add", desc),
            (
                "exception",
                {
                    "type": "depend",
                    "severity": 0,
                    "note": f"dependency {description}={a} can never be satisfied",
                },
            ),
        ]
        assert (
            result.errstr
            == f"Fatal exception type=depend dependency {description}={a} can never be satisfied"
        )


def test_after_is_satisfied_by_the_start_event(client: Client) -> None:
    a = client.submit(job("0"))  # runs until canceled
    b = client.submit(job("0.01s", dep("after", a)))
    start = client.wait_event(a, "start")
    remove = client.wait_event(b, "dependency-remove")
    assert remove.context == {"description": f"after-start={a}"}
    assert remove.timestamp >= start.timestamp
    client.cancel(a)
    assert client.wait(b).success


def test_an_antecedent_that_never_started(client: Client) -> None:
    a = client.submit(job(), urgency="hold")
    ok_dep = client.submit(job("0.01s", dep("afterok", a)))
    any_dep = client.submit(job("0.01s", dep("afterany", a)))
    client.cancel(a)
    assert client.wait(any_dep).success
    assert client.wait(ok_dep).errstr == (
        f"Fatal exception type=depend dependency after-success={a} job never started"
    )


def test_failures_cascade_down_a_chain(client: Client) -> None:
    # held until the chain is submitted: an antecedent that has already failed is
    # refused at submission, so a loaded machine must not let it end first
    a = client.submit(job("0.01s", wait_status=FAIL), urgency="hold")
    b = client.submit(job("0.01s", dep("afterok", a)))
    c = client.submit(job("0.01s", dep("afterok", b)))
    client.urgency(a, "default")
    assert not client.wait(c).success
    assert "after-success" in client.wait(c).errstr


def test_antecedent_already_inactive(client: Client) -> None:
    good = client.submit(job())
    bad = client.submit(job(wait_status=FAIL))
    client.wait(good), client.wait(bad)
    b = client.submit(job("0.01s", dep("afterok", good)))
    assert client.wait(b).success
    desc = {"description": f"after-success={good}"}
    assert story(client, b) == [
        ("dependency-add", desc),
        ("dependency-remove", desc),
        ("depend", None),
    ]
    with pytest.raises(RPCError, match=f"dependency: afterok: job {bad} failed or was canceled"):
        client.submit(job("0.01s", dep("afterok", bad)))
    with pytest.raises(RPCError, match=f"dependency: afternotok: job {good} succeeded"):
        client.submit(job("0.01s", dep("afternotok", good)))


def test_submit_time_errors(uri: str) -> None:
    assert fails(uri, "submit", "--dependency=afterok:bar", "true").strip() == (
        'pflux-submit: ERROR: dependency: afterok: "bar" is not a valid jobid'
    )
    assert fails(uri, "submit", "--dependency=afterok:1234", "true").strip() == (
        "pflux-submit: ERROR: dependency: afterok: id 1234: job not found"
    )
    assert fails(uri, "submit", "--dependency=foo:1234", "true").strip() == (
        'pflux-submit: ERROR: dependency scheme "foo" not supported'
    )
    assert "missing value" in fails(uri, "submit", "--dependency=afterok:", "true")
    assert "missing scheme" in fails(uri, "submit", "--dependency=:3", "true")
    assert "Invalid begin-time=soon" in fails(
        uri,
        "submit",
        '--setattr=system.dependencies=[{"scheme":"begin-time","value":"soon"}]',
        "true",
    )


def test_duplicate_dependencies_are_added_once(client: Client) -> None:
    a = client.submit(job("0.2s"))
    b = client.submit(job("0.01s", dep("afterok", a), dep("afterok", a)))
    assert client.wait(b).success
    names = [name for name, _ in story(client, b)]
    assert names == ["dependency-add", "dependency-remove", "depend"]


def test_begin_time_in_the_future_and_the_past(client: Client) -> None:
    begin = time.time() + 0.5
    later = client.submit(job("0.01s", dep("begin-time", begin)))
    past = client.submit(job("0.01s", dep("begin-time", time.time() - 60)))
    assert client.wait(past).success
    assert client.wait(later).success
    remove = next(e for e in log(client, later) if e.name == "dependency-remove")
    assert remove.context == {"description": f"begin-time={begin:.3f}"}
    assert remove.timestamp >= begin


def test_command_line_begin_time_and_jobs_info(uri: str, client: Client) -> None:
    a = client.submit(job("0"))
    jobid = ok(uri, "submit", f"--dependency=afterany:{a}", "--begin-time=+1h", "true").strip()
    client.wait_event(JobID.parse(jobid), "dependency-add")
    info = ok(uri, "jobs", "-n", "-o", "{id} {state_single} {contextual_info}", jobid)
    assert info.split()[1] == "D"
    assert "depends:" in info
    client.cancel(a)
    client.cancel(JobID.parse(jobid))


def test_string_inout_chain_runs_in_order(client: Client) -> None:
    chain = [
        client.submit(job("0.05s", dep("string", "foo", type="inout", scope="user")))
        for _ in range(3)
    ]
    results = [client.wait(j) for j in chain]
    assert all(r.success for r in results)
    starts = [next(e for e in log(client, j) if e.name == "start").timestamp for j in chain]
    cleans = [next(e for e in log(client, j) if e.name == "clean").timestamp for j in chain]
    assert starts[1] >= cleans[0]
    assert starts[2] >= cleans[1]


def test_string_fan_out_and_in(client: Client) -> None:
    a = client.submit(job("0.1s", dep("string", "A", type="out", scope="user")))
    bs = [
        client.submit(
            job(
                "0.1s",
                dep("string", "A", type="in", scope="user"),
                dep("string", "B", type="out", scope="user"),
            )
        )
        for _ in range(3)
    ]
    c = client.submit(job("0.01s", dep("string", "B", type="in", scope="user")))
    assert client.wait(c).success
    a_clean = next(e for e in log(client, a) if e.name == "clean").timestamp
    b_starts = [next(e for e in log(client, b) if e.name == "start").timestamp for b in bs]
    b_cleans = [next(e for e in log(client, b) if e.name == "clean").timestamp for b in bs]
    c_start = next(e for e in log(client, c) if e.name == "start").timestamp
    assert min(b_starts) >= a_clean
    assert c_start >= max(b_cleans)
    # the Bs ran side by side, not one after another
    assert max(b_starts) < min(b_cleans)
    assert len([n for n, _ in story(client, c) if n == "dependency-add"]) == 3


def test_fluid_in_waits_for_a_global_job(client: Client) -> None:
    system = client.submit(job("0.2s"))
    user = client.submit(job("0.01s", dep("fluid", system.words, type="in", scope="global")))
    assert client.wait(user).success
    assert story(client, user)[0] == ("dependency-add", {"description": f"fluid-in={system.words}"})


def test_openmp_options_are_checked(client: Client) -> None:
    with pytest.raises(RPCError, match="type must be in, out or inout"):
        client.submit(job("0.01s", dep("string", "x", type="sideways", scope="user")))
    with pytest.raises(RPCError, match="scope must be user or global"):
        client.submit(job("0.01s", dep("string", "x", type="in")))


def test_a_whole_dag_in_one_call(client: Client) -> None:
    nodes = {name: jobspec("0.01s") for name in "abcd"}
    nodes["c"] = jobspec("0.01s", wait_status=FAIL)
    edges = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]
    outcome = client.run_dag(nodes, edges)
    assert set(outcome) == set("abcd")
    assert outcome["a"][1].success
    assert outcome["b"][1].success
    assert not outcome["c"][1].success
    assert "can never be satisfied" in outcome["d"][1].errstr


def test_a_dag_with_a_cycle_is_refused(client: Client) -> None:
    from pflux.api.dag import DagError

    with pytest.raises(DagError, match="cycle"):
        client.submit_dag({"a": jobspec(), "b": jobspec()}, [("a", "b"), ("b", "a")])


def test_a_satisfied_dependency_does_not_release_the_others(client: Client) -> None:
    done = client.submit(job())
    client.wait(done)
    running = client.submit(job("0"))
    c = client.submit(job("0.01s", dep("afterok", done), dep("afterok", running)))
    client.wait_event(c, "dependency-remove")
    assert client.job_info(c).state == 2  # still DEPEND: the other is outstanding
    client.cancel(running)
    assert "can never be satisfied" in client.wait(c).errstr
    names = [name for name, _ in story(client, c)]
    assert names == ["dependency-add", "dependency-remove", "dependency-add", "exception"]


def named(name: str, run: str = "0.05s", *deps: dict[str, Any], **test: Any) -> dict[str, Any]:
    spec = job(run, *deps, **test)
    spec["attributes"]["system"]["job"] = {"name": name}
    return spec


def test_afterexcept_waits_for_a_fatal_exception(client: Client) -> None:
    a = client.submit(job("0"))  # runs until canceled
    b = client.submit(job("0.01s", dep("afterexcept", a)))
    client.wait_event(a, "start")
    client.cancel(a)
    assert client.wait(b).success
    desc = {"description": f"after-except={a}"}
    assert story(client, b) == [
        ("dependency-add", desc),
        ("dependency-remove", desc),
        ("depend", None),
    ]


def test_afterexcept_is_not_satisfied_by_a_failure(client: Client) -> None:
    a = client.submit(job("0.05s", wait_status=FAIL))
    b = client.submit(job("0.01s", dep("afterexcept", a)))
    assert client.wait(b).errstr == (
        f"Fatal exception type=depend dependency after-except={a} can never be satisfied"
    )
    with pytest.raises(RPCError, match=f"dependency: afterexcept: job {a}: no exception"):
        client.submit(job("0.01s", dep("afterexcept", a)))


def test_after_is_deprecated_for_afterstart(uri: str, client: Client) -> None:
    a = client.submit(job("0"))
    proc = pflux(uri, "submit", f"--dependency=after:{a}", "true")
    assert proc.stderr == "dependency scheme 'after' is deprecated, use 'afterstart'\n"
    b = JobID.parse(proc.stdout)
    warning = client.wait_event(b, "exception")
    assert warning.context == {
        "type": "depend",
        "severity": 3,
        "note": "dependency scheme 'after' is deprecated, use 'afterstart'",
    }
    c = client.submit(job("0.01s", dep("afterstart", a)))
    remove = client.wait_event(c, "dependency-remove")
    assert remove.context == {"description": f"after-start={a}"}
    assert "exception" not in [e.name for e in log(client, c)]
    client.cancel(a)
    client.wait(b)


def test_singleton_needs_a_job_name(uri: str) -> None:
    assert fails(uri, "submit", "--dependency=singleton", "true").strip() == (
        "pflux-submit: ERROR: singleton jobs require a job name"
    )


def test_singletons_of_a_name_run_one_at_a_time(client: Client) -> None:
    other = client.submit(named("solo", "0"))  # no singleton dependency, but the same name
    first = client.submit(named("solo", "0.05s", dep("singleton", "")))
    client.wait_event(first, "dependency-add")
    rest = [client.submit(named("solo", "0.05s", dep("singleton", ""))) for _ in range(2)]
    elsewhere = client.submit(named("else", "0.01s", dep("singleton", "")))
    assert client.wait(elsewhere).success  # another name: not held
    client.cancel(other)
    chain = [first, *rest]
    for jobid in chain:
        assert client.wait(jobid).success
    spans = []
    for jobid in chain:
        events = {e.name: e.timestamp for e in log(client, jobid)}
        spans.append((events["alloc"], events["clean"]))
        assert ("dependency-remove", {"description": "singleton"}) in story(client, jobid)
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))
