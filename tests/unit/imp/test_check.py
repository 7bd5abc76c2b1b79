"""``pflux.imp.check.mismatch``: a description job-exec plans from a jobspec is that
jobspec's; one changed in anything that decides what runs, as the user, where, is not."""

from __future__ import annotations

import marshal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.exec.plan import plan
from pflux.fluxshim import shim_env
from pflux.imp.check import INSTANCE_VARIABLES, mismatch
from pflux.protocol.impwire import decode_description, encode_description
from pflux.protocol.shellwire import Description
from pflux.spec.builder import from_command
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet

SHIM = shim_env()
R = ResourceSet.build({0: (IdSet.decode("0-1"), IdSet())}, "h").to_json()

names = st.from_regex(r"[A-Z][A-Z0-9_]{0,10}", fullmatch=True).filter(
    lambda n: n not in INSTANCE_VARIABLES and n not in ("PATH", "PYTHONPATH", "PFLUX_PYTHON")
)
values = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=20
)
commands = st.lists(values.filter(bool), min_size=1, max_size=4)
paths = st.from_regex(r"/[a-z]{1,8}(/[a-z]{1,8}){0,2}", fullmatch=True)


def planned(jobspec: dict[str, Any], *, shim: bool = True) -> Description:
    """The shell's description job-exec plans for ``jobspec`` (rank 0's), as the helper
    gets it (through JSON)."""
    shells = plan(
        7, jobspec, R, uri="local:///x", namespace="job-7", tmp_parents=("/t",),
        hostname="h", cpus=(0, 1), shim=SHIM if shim else None,
    ).shells  # fmt: skip
    return decode_description(encode_description(Description(*marshal.loads(shells[0][1]))))


def changed(description: Description, **fields: Any) -> Description:
    return Description(**{**dict(zip(Description._fields, description, strict=True)), **fields})


@settings(max_examples=60, deadline=None)
@given(commands, st.dictionaries(names, values, max_size=5), st.none() | paths, st.booleans())
def test_what_job_exec_plans_is_the_jobspecs(
    command: list[str], env: dict[str, str], cwd: str | None, shim: bool
) -> None:
    jobspec = from_command(command, environment={"PATH": "/usr/bin", **env}, cwd=cwd)
    assert mismatch(planned(jobspec, shim=shim), jobspec, SHIM) == ""


@settings(max_examples=60, deadline=None)
@given(commands, st.dictionaries(names, values, max_size=5), names, values, commands)
def test_another_command_or_environment_is_refused(
    command: list[str], env: dict[str, str], name: str, value: str, other: list[str]
) -> None:
    jobspec = from_command(command, environment=env)
    genuine = planned(jobspec)
    if other != command:
        assert "command" in mismatch(changed(genuine, argv=other), jobspec, SHIM)
    if env.get(name) != value:
        added = changed(genuine, env={**genuine.env, name: value})
        assert f"environment: {name}" in mismatch(added, jobspec, SHIM)
    if env:
        first = next(iter(env))
        dropped = changed(genuine, env={k: v for k, v in genuine.env.items() if k != first})
        assert f"environment: {first} is the jobspec's, and missing" in mismatch(
            dropped, jobspec, SHIM
        )


def test_an_instance_path_of_its_own_choosing_is_refused() -> None:
    jobspec = from_command(["hostname"], environment={"PATH": "/usr/bin"})
    genuine = planned(jobspec)
    for name, value in (
        ("PATH", "/home/pflux/evil:/usr/bin"),
        ("PYTHONPATH", "/home/pflux/evil"),
        ("PFLUX_PYTHON", "/home/pflux/evil"),
        ("LD_PRELOAD", "/home/pflux/evil.so"),
    ):
        why = mismatch(changed(genuine, env={**genuine.env, name: value}), jobspec, SHIM)
        assert why.startswith(f"environment: {name}"), why
    # the variables the instance sets are its own to set
    assert (
        mismatch(changed(genuine, env={**genuine.env, "FLUX_URI": "local:///y"}), jobspec, SHIM)
        == ""
    )


def test_another_cwd_input_output_or_file_is_refused() -> None:
    jobspec = from_command(
        ["cat"], environment={}, cwd="/home/u", input="/home/u/in", output="/home/u/out.{{id}}"
    )
    jobspec["attributes"]["system"]["files"] = {"script": {"data": "echo hi\n"}}
    genuine = planned(jobspec)
    assert mismatch(genuine, jobspec, SHIM) == ""
    assert "cwd '/tmp'" in mismatch(changed(genuine, cwd="/tmp"), jobspec, SHIM)
    assert "input file" in mismatch(changed(genuine, stdin="/etc/shadow"), jobspec, SHIM)
    out = changed(genuine, stdout=(("/home/u/.bashrc",), False, False))
    assert "stdout file '/home/u/.bashrc'" in mismatch(out, jobspec, SHIM)
    beside = changed(genuine, stdout=(("/home/u/out.x/../../.bashrc",), False, False))
    assert "stdout file" in mismatch(beside, jobspec, SHIM)
    files = changed(genuine, files=[("script", b"rm -rf ~\n", 0o100600)])
    assert mismatch(files, jobspec, SHIM) == "files: not the jobspec's"


def test_a_jobspec_of_the_wrong_shape_is_refused_not_a_crash() -> None:
    genuine = planned(from_command(["true"], environment={}))
    for jobspec in ({}, [], {"tasks": [], "attributes": {}}, {"tasks": [{}], "attributes": 1}):
        assert mismatch(genuine, jobspec, SHIM) != ""
