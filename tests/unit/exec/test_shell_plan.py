"""job-exec's plan of a job shell: what the shell is told, and what job-exec keeps."""

from __future__ import annotations

import copy
import marshal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import PfluxError
from pflux.exec import plan as plan_module
from pflux.exec.plan import Plan, PlanMemo, plan
from pflux.fluxshim import ShimEnv
from pflux.protocol.shellwire import Description
from pflux.spec.builder import from_command, set_shell_option
from pflux.spec.fluid import JobID
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet

JOB = 65535


def resources(cores: str = "0-3", gpus: str = "") -> dict[str, Any]:
    return ResourceSet.build({0: (IdSet.decode(cores), IdSet.decode(gpus))}, "h").to_json()


def described(jobspec: dict[str, Any], R: dict[str, Any] | None = None, **kw: Any) -> Any:  # noqa: N803
    options = {
        "uri": "local:///s",
        "namespace": "job-65535",
        "tmp_parents": ("/run/jobs", "/tmp"),
        "hostname": "node1",
        "cpus": (0, 1, 2, 3),
    }
    options.update(kw)
    planned = plan(JOB, jobspec, R or resources(), **options)
    return planned, Description(*marshal.loads(planned.shells[0][1]))


def test_the_flux_shim_goes_first_on_the_tasks_paths_once() -> None:
    shim = ShimEnv(("/shim/bin", "/venv/bin"), ("/shim/python",), "/venv/bin/python")
    environment = {"PATH": "/usr/bin:/venv/bin:/bin", "PYTHONPATH": "/mine"}
    _, job = described(from_command(["true"], environment=environment), shim=shim)
    env = job.env
    assert env["PATH"] == "/shim/bin:/venv/bin:/usr/bin:/bin"
    assert env["PYTHONPATH"] == "/shim/python:/mine"
    assert env["PFLUX_PYTHON"] == "/venv/bin/python"
    again = {"PATH": env["PATH"], "PYTHONPATH": env["PYTHONPATH"]}  # submitted from a job
    _, job = described(from_command(["true"], environment=again), shim=shim)
    assert (job.env["PATH"], job.env["PYTHONPATH"]) == (env["PATH"], env["PYTHONPATH"])
    _, job = described(from_command(["true"], environment={}), shim=shim)
    assert job.env["PATH"] == "/shim/bin:/venv/bin:/bin:/usr/bin"  # flux's default PATH
    assert job.env["PYTHONPATH"] == "/shim/python"


def test_a_nested_instances_jobs_have_their_id_path_from_the_root() -> None:
    _, job = described(from_command(["true"]), jobid_path="/ƒ2oLkTLb")
    assert job.env["FLUX_JOB_ID_PATH"] == f"/ƒ2oLkTLb/{JobID(JOB).f58}"


def test_the_description_carries_the_command_and_flux_environment() -> None:
    jobspec = from_command(["sh", "-c", "x"], num_tasks=2, environment={"A": "1", "HOSTNAME": "a"})
    planned, job = described(jobspec)
    argv, env, tasks, cwd, tmpdirs, host, stdin, out, err, pmi = job[:10]
    assert argv == ["sh", "-c", "x"]
    assert env == {
        "A": "1",
        "HOSTNAME": "node1",
        "FLUX_JOB_ID": JobID(JOB).f58,
        "FLUX_JOB_SIZE": "2",
        "FLUX_JOB_NNODES": "1",
        "PFLUX_URI": "local:///s",
        "FLUX_URI": "local:///s",
        "PFLUX_KVS_NAMESPACE": "job-65535",
        "FLUX_KVS_NAMESPACE": "job-65535",
        "FLUX_JOB_ID_PATH": f"/{JobID(JOB).f58}",
    }
    assert tasks == [(0, 0, (0, 1), "-1"), (1, 1, (0, 1), "-1")]  # flux's cpu-affinity=on
    assert job[10:] == ([], 30.0, False, None, [], (), False, [], False)  # rlimit ...: defaults
    assert cwd is None
    assert tmpdirs[0] == f"/run/jobs/jobtmp-0-{JobID(JOB).f58}"
    assert host == "node1"
    assert stdin is None  # a pipe the shell feeds from the input eventlog
    assert (out, err) == (True, False)  # in the KVS: stdout line-buffered, stderr not
    assert planned.ptys == ()  # no task on a pty
    assert planned.ntasks == 2
    assert planned.redirects == ()
    assert planned.layout.taskmap() == {"version": 1, "map": [[0, 1, 2, 1]]}
    assert pmi == (2, ((0, 1, 2, 1),))  # PMI-1 is on unless the job turns it off


def test_a_task_on_every_cpu_is_not_bound_and_gpus_are_listed() -> None:
    jobspec = from_command(["true"], cores_per_task=4, gpus_per_task=2)
    _, (_, _, tasks, *_) = described(jobspec, resources("0-3", "0-1"))
    assert tasks == [(0, 0, None, "0,1")]


def test_cores_beyond_the_instances_cpus_wrap_around() -> None:
    _, (_, _, tasks, *_) = described(from_command(["true"]), resources("3"), cpus=(4, 5))
    assert tasks == [(0, 0, (5,), "-1")]


def test_files_are_rendered_and_named_in_redirects() -> None:
    jobspec = from_command(["true"], output="/o/{{id}}.out", label_io=True)
    planned, job = described(jobspec)
    out, err = job.stdout, job.stderr
    path = f"/o/{JobID(JOB).f58}.out"
    assert out == ((path,), False, True)
    assert err == ((path,), False, True)  # stderr follows stdout
    assert planned.redirects == (("stdout", path), ("stderr", path))


def test_a_file_per_task_is_sent_to_the_shell_and_not_announced() -> None:
    jobspec = from_command(["true"], num_tasks=2, output="/o/{{taskid}}.out", error="/o/err")
    planned, job = described(jobspec)
    out, err = job.stdout, job.stderr
    assert out == (("/o/0.out", "/o/1.out"), False, False)
    assert err == (("/o/err",), False, False)
    assert planned.redirects == (("stderr", "/o/err"),)  # as flux-core: none per task


def test_input_from_a_file_and_the_input_options() -> None:
    jobspec = from_command(["cat"], input="/in/data")
    planned, job = described(jobspec)
    assert job.stdin == "/in/data"
    assert planned.input.path == "/in/data"
    assert planned.input.limit == 10 << 20


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"stdin": {"type": "pty"}}, r"input\.stdin\.type"),
        ({"stdin": {"type": "file"}}, r"input\.stdin\.path"),
        ({"limit": "64M"}, r"input\.limit: must be more than 0 and at most 32M"),
        ({"stdin": []}, r"input\.stdin: must be a mapping"),
    ],
)
def test_bad_input_options_are_an_invalid_job(options: dict[str, Any], message: str) -> None:
    jobspec = from_command(["true"])
    jobspec["attributes"]["system"]["shell"] = {"options": {"input": options}}
    with pytest.raises(PfluxError, match=f"^invalid job: .*{message}"):
        described(jobspec)


def test_the_output_limit_is_the_callers_unless_the_job_sets_one() -> None:
    planned, _ = described(from_command(["true"]), output_limit="1G")
    assert (planned.output.limit, planned.output.limit_text) == (1 << 30, "1G")
    jobspec = from_command(["true"])
    jobspec["attributes"]["system"]["shell"] = {"options": {"output": {"limit": "2K"}}}
    planned, _ = described(jobspec, output_limit="1G")
    assert planned.output.limit == 2048


def test_cwd_and_the_tmpdirs_to_try() -> None:
    jobspec = from_command(["true"], cwd="/w")
    _, (_, _, _, cwd, tmpdirs, *_) = described(jobspec, tmp_parents=("/a", "/b"))
    assert cwd == "/w"
    name = f"jobtmp-0-{JobID(JOB).f58}"
    assert tmpdirs == (f"/a/{name}", f"/b/{name}")


@pytest.mark.parametrize(
    ("R", "message"),
    [
        ({"version": 1, "execution": {"R_lite": []}}, "names no execution target"),
        ({"version": 1}, "R_lite cannot be read"),
        ({"version": 1, "execution": {"R_lite": [{"rank": "x", "children": {}}]}}, "R_lite"),
    ],
)
def test_an_unusable_r_is_an_invalid_job(R: dict[str, Any], message: str) -> None:  # noqa: N803
    with pytest.raises(PfluxError, match=f"^invalid job: .*{message}"):
        described(from_command(["true"]), R)


def test_bad_output_options_are_an_invalid_job() -> None:
    jobspec = from_command(["true"])
    jobspec["attributes"]["system"]["shell"] = {"options": {"output": {"limit": "lots"}}}
    with pytest.raises(PfluxError, match=r"^invalid job: .*output\.limit"):
        described(jobspec)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@settings(max_examples=200)
@given(st.dictionaries(st.sampled_from(["resources", "tasks", "attributes", "version"]), JSON))
def test_only_pflux_errors_come_out_of_a_broken_jobspec(jobspec: dict[str, Any]) -> None:
    message = "planned"
    try:
        described(jobspec)
    except PfluxError as exc:
        message = str(exc)
    assert message == "planned" or message.startswith("invalid job: ")


def test_affinity_options_bind_per_task_or_not_at_all() -> None:
    jobspec = from_command(["true"], num_tasks=2, gpus_per_task=1)
    R = resources("0-1", "2-3")  # noqa: N806
    _, (_, _, tasks, *_) = described(jobspec, R)
    assert tasks == [(0, 0, (0, 1), "2,3"), (1, 1, (0, 1), "2,3")]  # flux's defaults: on
    set_shell_option(jobspec, "cpu-affinity", "per-task")
    set_shell_option(jobspec, "gpu-affinity", "per-task")
    _, (_, _, tasks, *_) = described(jobspec, R)
    assert tasks == [(0, 0, (0,), "2"), (1, 1, (1,), "3")]
    set_shell_option(jobspec, "cpu-affinity", "off")
    set_shell_option(jobspec, "gpu-affinity", "off")
    _, (_, _, tasks, *_) = described(jobspec, R)
    assert tasks == [(0, 0, None, None), (1, 1, None, None)]
    set_shell_option(jobspec, "cpu-affinity", "map:3;0x5")
    _, (_, _, tasks, *_) = described(jobspec, R)
    assert [task[2] for task in tasks] == [(3,), (0, 2)]


@pytest.mark.parametrize(
    ("value", "enabled"),
    [("simple", True), ("pmi1", True), ("pmi2,simple", True), ("off", False)],
)
def test_the_pmi_option_turns_pmi_1_on_or_off(value: str, enabled: bool) -> None:
    jobspec = from_command(["true"], num_tasks=3)
    jobspec["attributes"]["system"]["shell"] = {"options": {"pmi": value}}
    _, description = described(jobspec)
    assert description.pmi == ((3, ((0, 1, 3, 1),)) if enabled else None)


def test_each_rank_of_r_gets_a_description_of_its_own_tasks() -> None:
    """A shell per rank (flux-core's): its tasks, their per-task files and variables, its
    own FLUX_JOB_TMPDIR; the job's task map and PMI size whole in each."""
    two = IdSet.decode("0-1")
    R = ResourceSet.build({3: (two, IdSet()), 5: (two, IdSet())}, ["a", "b"]).to_json()  # noqa: N806
    jobspec = from_command(["true"], num_tasks=4, num_nodes=2, output="/o/{{taskid}}.out")
    set_shell_option(jobspec, "env-expand", {"MINE": "{{taskid}}"})
    planned = plan(
        JOB,
        jobspec,
        R,
        uri="local:///s",
        namespace="job-65535",
        tmp_parents=("/run/jobs",),
        hostname="h",
        cpus=(0, 1),
    )
    assert [rank for rank, _ in planned.shells] == [3, 5]
    first, second = (Description(*marshal.loads(d)) for _, d in planned.shells)
    assert [task[0] for task in first.tasks] == [0, 1]
    assert [task[0] for task in second.tasks] == [2, 3]
    assert second.stdout[0] == ("/o/2.out", "/o/3.out")
    assert second.task_env == [{"MINE": "2"}, {"MINE": "3"}]
    f58 = JobID(JOB).f58
    assert (first.tmpdirs, second.tmpdirs) == (
        (f"/run/jobs/jobtmp-3-{f58}",),
        (f"/run/jobs/jobtmp-5-{f58}",),
    )
    assert first.pmi == second.pmi == (4, ((0, 2, 2, 1),))


def test_a_rank_with_no_task_gets_no_shell() -> None:
    """A batch job's whole nodes run one broker on the first: the other ranks hold no
    task, so no shell; they are released with the job's end."""
    two = IdSet.decode("0-1")
    R = ResourceSet.build({0: (two, IdSet()), 1: (two, IdSet())}, ["a", "b"]).to_json()  # noqa: N806
    jobspec = from_command(["true"], num_tasks=2, num_nodes=2, exclusive=True)
    jobspec["tasks"][0]["count"] = {"total": 1}  # as pflux batch asks
    planned = plan(
        JOB, jobspec, R, uri="local:///s", namespace="job-65535",
        tmp_parents=("/run/jobs",), hostname="h", cpus=(0, 1),
    )  # fmt: skip
    assert [rank for rank, _ in planned.shells] == [0]


def _jobs_like(jobspec: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """``n`` equal jobspecs, each its own (as submitted with ``--cc``)."""
    return [copy.deepcopy(jobspec) for _ in range(n)]


def _described(planned: Plan) -> list[Description]:
    return [Description(*marshal.loads(shell)) for _, shell in planned.shells]


SETTING: dict[str, Any] = {"uri": "u", "tmp_parents": ("/t",), "hostname": "h", "cpus": (0, 1)}


@pytest.mark.parametrize("nodes", [1, 2])
def test_a_job_like_an_earlier_one_is_planned_from_its_plan(
    nodes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobspec = from_command(["sh", "-c", "x"], num_tasks=2, num_nodes=nodes, environment={"A": "1"})
    cores = {rank: (IdSet.decode("0-1"), IdSet()) for rank in range(nodes)}
    R = ResourceSet.build(cores, [f"h{rank}" for rank in range(nodes)]).to_json()  # noqa: N806
    first, second, third = _jobs_like(jobspec, 3)
    afresh = [
        plan(jobid, spec, R, namespace=f"job-{jobid}", **SETTING)
        for jobid, spec in ((JOB, first), (JOB + 1, second))
    ]
    laid_out = []
    real_layout = plan_module.layout
    monkeypatch.setattr(plan_module, "layout", lambda *a: laid_out.append(1) or real_layout(*a))
    memo = PlanMemo()
    kept = plan(JOB, first, R, namespace=f"job-{JOB}", memo=memo, **SETTING)
    again = plan(JOB + 1, second, R, namespace=f"job-{JOB + 1}", memo=memo, **SETTING)
    assert len(laid_out) == 1  # the second job was planned from the first's plan
    for planned, alone in zip((kept, again), afresh, strict=True):
        # the same descriptions (marshal's bytes may differ as the objects' sharing does)
        assert _described(planned) == _described(alone)
        assert [rank for rank, _ in planned.shells] == [rank for rank, _ in alone.shells]
        assert planned._replace(shells=()) == alone._replace(shells=())
    f58 = JobID(JOB + 1).f58
    for rank, shell in enumerate(_described(again)):
        assert shell.env["FLUX_JOB_ID"] == f58
        assert shell.env["FLUX_KVS_NAMESPACE"] == f"job-{JOB + 1}"
        assert shell.tmpdirs == (f"/t/jobtmp-{rank}-{f58}",)
    third["attributes"]["system"]["environment"]["A"] = "2"  # another job: planned afresh
    other = plan(JOB + 2, third, R, namespace=f"job-{JOB + 2}", memo=memo, **SETTING)
    assert len(laid_out) == 2
    assert _described(other)[0].env["A"] == "2"
    elsewhere = {**SETTING, "hostname": "elsewhere"}
    moved = plan(JOB + 3, second, R, namespace=f"job-{JOB + 3}", memo=memo, **elsewhere)
    assert len(laid_out) == 3  # planned for another host: afresh
    assert _described(moved)[0].host == "elsewhere"


def test_jobs_submitted_with_cc_are_planned_from_the_first_ones_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As a real instance gives them: each its own ``--cc`` index, and R with its own
    start time; a value of ``FLUX_JOB_CC`` not an index is the jobspec's like any other,
    even the mark that stands for an index in the memo's keys."""
    jobspec = from_command(["true"], environment={"A": "1", "FLUX_JOB_CC": "1"})
    specs = _jobs_like(jobspec, 5)
    for index, spec in enumerate(specs[1:3], start=2):
        spec["attributes"]["system"]["environment"]["FLUX_JOB_CC"] = str(index)
    specs[3]["attributes"]["system"]["environment"]["FLUX_JOB_CC"] = "x"
    specs[4]["attributes"]["system"]["environment"]["FLUX_JOB_CC"] = plan_module._CC_MARK
    laid_out = []
    real_layout = plan_module.layout
    monkeypatch.setattr(plan_module, "layout", lambda *a: laid_out.append(1) or real_layout(*a))
    memo = PlanMemo()
    for n, spec in enumerate(specs):
        R = resources()  # noqa: N806
        R["execution"]["starttime"] = 1000.0 + n
        jobid = JOB + n
        planned = plan(jobid, spec, R, namespace=f"job-{jobid}", memo=memo, **SETTING)
        alone = plan(jobid, spec, R, namespace=f"job-{jobid}", **SETTING)
        assert _described(planned) == _described(alone)
        assert planned._replace(shells=()) == alone._replace(shells=())
        index = spec["attributes"]["system"]["environment"]["FLUX_JOB_CC"]
        assert _described(planned)[0].env["FLUX_JOB_CC"] == index
        assert _described(planned)[0].env["FLUX_JOB_ID"] == JobID(jobid).f58
    # the first job, then each job alone (``alone``), and the two whose value is no index
    assert len(laid_out) == 1 + 5 + 2


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("output", {"stdout": {"type": "file", "path": "/o/{{id}}.out"}}),
        ("env-expand", {"MINE": "{{id}}"}),
    ],
)
def test_a_job_whose_description_names_its_id_elsewhere_is_planned_afresh(
    option: str, value: Any
) -> None:
    jobspec = from_command(["true"])
    set_shell_option(jobspec, option, value)
    memo = PlanMemo()
    for jobid, spec in zip((JOB, JOB + 1, JOB + 2), _jobs_like(jobspec, 3), strict=True):
        planned = plan(jobid, spec, resources(), namespace=f"job-{jobid}", memo=memo, **SETTING)
        alone = plan(jobid, spec, resources(), namespace=f"job-{jobid}", **SETTING)
        assert _described(planned) == _described(alone)
        assert planned._replace(shells=()) == alone._replace(shells=())
        shell = _described(planned)[0]
        f58 = JobID(jobid).f58
        if option == "output":
            assert shell.stdout == ((f"/o/{f58}.out",), False, False)
        else:
            assert shell.env["MINE"] == f58


def test_a_jobspec_changed_in_place_since_its_plan_is_planned_afresh() -> None:
    jobspec = from_command(["true"], num_tasks=2)
    R = resources()  # noqa: N806
    memo = PlanMemo()
    plan(JOB, jobspec, R, namespace=f"job-{JOB}", memo=memo, **SETTING)
    set_shell_option(jobspec, "cpu-affinity", "per-task")
    again = plan(JOB + 1, jobspec, R, namespace=f"job-{JOB + 1}", memo=memo, **SETTING)
    assert [task[2] for task in _described(again)[0].tasks] == [(0,), (1,)]
