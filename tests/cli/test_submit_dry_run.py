"""``pflux submit --dry-run``: flux submit's options, printed as flux prints them.

Most tests run the command in-process through the ``pflux`` dispatcher; a few
run the real console script.  Every jobspec printed is checked with
``pflux.spec.jobspec.validate``.  Expected JSON texts are what flux-core's own
code (v0.88) prints for the same command line.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from _pfluxcore import rlimits

from pflux.cli import jobopts, main
from pflux.cli.options import Args, OptionParser
from pflux.errors import SpecError, UsageError
from pflux.spec.jobspec import validate
from support.instance import console

# no environment, no rlimits, a fixed directory: what is left is flux's jobspec
PLAIN = ("--env=-*", "--rlimit=-*", "--cwd=/home/flux")


def dry_run(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    rc = main(["submit", "--dry-run", *args])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert out.err == ""
    jobspec: dict[str, Any] = json.loads(out.out)
    validate(jobspec)
    return jobspec


def system(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    attributes: dict[str, Any] = dry_run(capsys, *args)["attributes"]["system"]
    return attributes


def fails(capsys: pytest.CaptureFixture[str], *args: str, rc: int = 1) -> str:
    assert main(["submit", "--dry-run", *args]) == rc
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith("pflux-submit: ERROR: ")
    assert out.err.endswith("\n")
    return out.err.removeprefix("pflux-submit: ERROR: ").rstrip("\n")


def usage_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as info:
        main(["submit", *args])
    assert info.value.code == 2
    return capsys.readouterr().err


# ------------------------------------------------------------ RFC 25 use cases

SYSTEM = '"attributes": {"system": {"duration": 0, "environment": {}, "cwd": "/home/flux"}}'
USE_CASES = {
    # 1.1: -N without -n gives one task per node on whole nodes
    "-N4 flux start": '{"resources": [{"type": "node", "count": 4, "exclusive": true, "with": '
    '[{"type": "slot", "count": 1, "with": [{"type": "core", "count": 1}], "label": "task"}]}], '
    '"tasks": [{"command": ["flux", "start"], "slot": "task", "count": {"per_slot": 1}}], '
    f'{SYSTEM}, "version": 1}}',
    # 2.1: ceil(5/4) = 2 slots per node and a total of 5 (RFC 25's YAML says 1 slot)
    "-n5 -N4 hostname": '{"resources": [{"type": "node", "count": 4, "with": [{"type": "slot", '
    '"count": 2, "with": [{"type": "core", "count": 1}], "label": "task"}]}], "tasks": '
    '[{"command": ["hostname"], "slot": "task", "count": {"total": 5}}], '
    f'{SYSTEM}, "version": 1}}',
    "-n10 -c2 myapp": '{"resources": [{"type": "slot", "count": 10, "with": [{"type": "core", '
    '"count": 2}], "label": "task"}], "tasks": [{"command": ["myapp"], "slot": "task", '
    f'"count": {{"per_slot": 1}}}}], {SYSTEM}, "version": 1}}',
    "-n10 -c2 -g1 myapp": '{"resources": [{"type": "slot", "count": 10, "with": [{"type": '
    '"core", "count": 2}, {"type": "gpu", "count": 1}], "label": "task"}], "tasks": '
    '[{"command": ["myapp"], "slot": "task", "count": {"per_slot": 1}}], '
    f'{SYSTEM}, "version": 1}}',
    "-n16 -N4 -g1 myapp": '{"resources": [{"type": "node", "count": 4, "with": [{"type": "slot", '
    '"count": 4, "with": [{"type": "core", "count": 1}, {"type": "gpu", "count": 1}], "label": '
    '"task"}]}], "tasks": [{"command": ["myapp"], "slot": "task", "count": {"per_slot": 1}}], '
    f'{SYSTEM}, "version": 1}}',
}


@pytest.mark.parametrize("options", sorted(USE_CASES))
def test_rfc25_use_cases_print_as_flux(options: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "--dry-run", *PLAIN, *options.split()]) == 0
    out = capsys.readouterr().out
    assert out == USE_CASES[options] + "\n"
    validate(json.loads(out))


def test_use_case_through_the_console_script() -> None:
    result = console("submit", "--dry-run", *PLAIN, "-n5", "-N4", "hostname")
    assert result.returncode == 0, result.stderr
    assert result.stdout == USE_CASES["-n5 -N4 hostname"] + "\n"


def test_yaml_through_the_console_script() -> None:
    result = console("submit", "--dry-run", "--format=yaml", *PLAIN, "-n16", "-N4", "-g1", "myapp")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("resources:\n- type: node\n")
    assert yaml.safe_load(result.stdout) == json.loads(USE_CASES["-n16 -N4 -g1 myapp"])


def test_yaml_keeps_unicode_and_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "--dry-run", "--format=yaml", *PLAIN, "--job-name=ƒ", "a"]) == 0
    out = capsys.readouterr().out
    assert "name: ƒ" in out
    assert list(yaml.safe_load(out)) == ["resources", "tasks", "attributes", "version"]
    validate(yaml.safe_load(out))


# ---------------------------------------------------------------- the command


def test_options_after_the_command_belong_to_it(capsys: pytest.CaptureFixture[str]) -> None:
    jobspec = dry_run(capsys, *PLAIN, "-n2", "hostname", "--job-name=foo", "-n", "3")
    assert jobspec["tasks"][0]["command"] == ["hostname", "--job-name=foo", "-n", "3"]
    assert "job" not in jobspec["attributes"]["system"]


def test_a_leading_double_dash_is_dropped(capsys: pytest.CaptureFixture[str]) -> None:
    jobspec = dry_run(capsys, *PLAIN, "-n2", "--", "hostname", "--n=2", "--", "x")
    assert jobspec["tasks"][0]["command"] == ["hostname", "--n=2", "--", "x"]


def test_missing_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert fails(capsys, "-n2", rc=2) == "job command and arguments are missing"
    assert fails(capsys, "--", rc=2) == "job command and arguments are missing"


def test_without_an_instance_submit_says_how_to_get_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PFLUX_URI", raising=False)
    assert main(["submit", "hostname"]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == (
        "pflux-submit: ERROR: no pflux instance: PFLUX_URI is not set and there is no"
        " system instance at local:///dev/null/pflux-system: set PFLUX_URI or pass --uri"
        " (run commands under `pflux start`)\n"
    )


def test_a_missing_instance_through_the_console_script(tmp_path: Path) -> None:
    result = console("submit", "--uri", f"local://{tmp_path}/nothing", "hostname")
    assert result.returncode == 1
    assert result.stderr.startswith("pflux-submit: ERROR: cannot connect to the instance at")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--no-such-option", "a"], "unrecognized arguments: --no-such-option"),
        (["--time-lim", "5", "a"], "unrecognized arguments: --time-lim"),  # no abbreviations
        (["--dry-r", "a"], "unrecognized arguments: --dry-r"),
        (["-n"], "argument -n/--ntasks: expected one argument"),
        (["--format=xml", "a"], "argument --format: invalid choice: 'xml'"),
    ],
)
def test_usage_errors_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = usage_error(capsys, *args)
    assert err.startswith("usage: pflux submit [OPTIONS...] COMMAND [ARGS...]")
    assert message in err


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["submit", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for option in ("--ntasks", "--env-remove", "--begin-time", "--setattr", "--dry-run"):
        assert option in out


# -------------------------------------------------------------------- resources


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-n", "foo"], "--ntasks=foo: must be an integer >= 1"),
        (["-n", "0"], "--ntasks=0: must be an integer >= 1"),
        (["--ntasks=1.5"], "--ntasks=1.5: must be an integer >= 1"),
        (["-c", "0"], "--cores-per-task=0: must be an integer >= 1"),
        (["-g", "-1"], "--gpus-per-task=-1: must be an integer >= 0"),
        (["-N", "0"], "--nodes=0: must be an integer >= 1"),
        (["-N", "٣"], "--nodes=٣: must be an integer >= 1"),
        (["-N5", "-n4"], "node count must not be greater than task count"),
        (["-x"], "exclusive can only be set with a node count"),
    ],
)
def test_bad_counts(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert fails(capsys, *args, "hostname") == message


def test_nodes_without_tasks_is_one_task_per_node_exclusively(
    capsys: pytest.CaptureFixture[str],
) -> None:
    jobspec = dry_run(capsys, *PLAIN, "-N2", "a")
    assert jobspec["resources"][0]["exclusive"] is True
    assert jobspec["resources"][0]["with"][0]["count"] == 1
    assert jobspec["tasks"][0]["count"] == {"per_slot": 1}


def test_exclusive_with_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    top = dry_run(capsys, *PLAIN, "-N2", "-n4", "-x", "a")["resources"][0]
    assert top["exclusive"] is True
    assert "exclusive" not in dry_run(capsys, *PLAIN, "-N2", "-n4", "a")["resources"][0]


def test_gpus_zero_adds_none(capsys: pytest.CaptureFixture[str]) -> None:
    assert dry_run(capsys, *PLAIN, "-g0", "a")["resources"][0]["with"] == [
        {"type": "core", "count": 1}
    ]


# ------------------------------------------------------------------ time limit


@pytest.mark.parametrize(
    ("limit", "seconds"),
    [
        ("5", 300.0),  # minutes when no unit is given (flux-core t2710)
        ("1.5", 90.0),
        ("0", 0.0),
        ("5s", 5.0),
        ("5m", 300.0),
        ("4h", 14400.0),
        ("5d", 432000.0),
        ("250ms", 0.25),
    ],
)
def test_time_limit(limit: str, seconds: float, capsys: pytest.CaptureFixture[str]) -> None:
    assert system(capsys, *PLAIN, f"-t{limit}", "a")["duration"] == seconds
    assert system(capsys, *PLAIN, f"--time-limit={limit}", "a")["duration"] == seconds


def test_old_flux_spellings_time_and_dry(capsys: pytest.CaptureFixture[str]) -> None:
    """``--time`` and ``--dry``, which flux took as abbreviations (and ``--dry`` as an
    alias now), mean ``--time-limit`` and ``--dry-run``."""
    rc = main(["submit", "--dry", *PLAIN, "--time=2", "a"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert json.loads(out.out)["attributes"]["system"]["duration"] == 120
    assert main(["run", "--dry", *PLAIN, "--time", "1h", "a"]) == 0
    assert json.loads(capsys.readouterr().out)["attributes"]["system"]["duration"] == 3600


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        ("00:30", '--time-limit: invalid Flux standard duration "00:30"'),
        ("4-00:30:00", '--time-limit: invalid Flux standard duration "4-00:30:00"'),
        ("-5", '--time-limit: invalid Flux standard duration "-5": must not be negative'),
        ("inf", "--time-limit=inf: must be finite (0 means no limit)"),
    ],
)
def test_bad_time_limits(limit: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert fails(capsys, f"--time-limit={limit}", "a").startswith(message)


# ------------------------------------------------------------- plain attributes


def test_name_queue_bank_cwd(capsys: pytest.CaptureFixture[str]) -> None:
    attrs = system(
        capsys, *PLAIN, "--job-name=foobar", "-q", "batch", "-B", "mybank", "--cwd=/a/b", "a"
    )
    assert attrs["job"] == {"name": "foobar"}
    assert attrs["queue"] == "batch"
    assert attrs["bank"] == "mybank"
    assert attrs["cwd"] == "/a/b"


def test_cwd_defaults_to_the_current_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert system(capsys, "--env=-*", "a")["cwd"] == os.getcwd()


# ----------------------------------------------------------------------- stdio


def test_stdio(capsys: pytest.CaptureFixture[str]) -> None:
    options = system(
        capsys, *PLAIN, "--output=out.{{id}}", "--error=/my/error", "--input=in", "-l", "a"
    )["shell"]["options"]
    assert options == {
        "input": {"stdin": {"type": "file", "path": "in"}},
        "output": {
            "stdout": {"type": "file", "path": "out.{{id}}", "label": True},
            "stderr": {"type": "file", "path": "/my/error", "label": True},
        },
    }


def test_unbuffered(capsys: pytest.CaptureFixture[str]) -> None:
    options = system(capsys, *PLAIN, "-u", "a")["shell"]["options"]
    assert options["output"]["stdout"]["buffer"] == {"type": "none"}
    assert options["output"]["batch-timeout"] == 0.05


@pytest.mark.parametrize("ranks", ["0", "0-1", "[0,2-3]"])
def test_input_ranks_are_refused_by_submit(ranks: str, capsys: pytest.CaptureFixture[str]) -> None:
    message = fails(capsys, f"--input={ranks}", "a", rc=2)
    assert message == f"--input={ranks}: per-task input is not supported by submit"


# ------------------------------------------------------------------ environment


def test_default_environment_is_all_of_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PFLUX_TEST_VAR", "ƒ value")
    assert system(capsys, "a")["environment"] == dict(os.environ)


@pytest.fixture
def foo_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOO", "bar")
    monkeypatch.setenv("FOO_ONE", "1")
    monkeypatch.setenv("FOO_TWO", "2")
    monkeypatch.delenv("NOPE", raising=False)


@pytest.mark.usefixtures("foo_env")
@pytest.mark.parametrize(
    ("rules", "environment"),
    [
        (["--env=-*"], {}),
        (["--env-remove=*"], {}),
        (["--env=-/.*/"], {}),
        (["--env=-*", "--env=FOO"], {"FOO": "bar"}),
        (["--env=-*", "--env=FOO_*"], {"FOO_ONE": "1", "FOO_TWO": "2"}),
        (["--env=-*", "--env=/^FOO_.*/"], {"FOO_ONE": "1", "FOO_TWO": "2"}),
        (["--env=-*", "--env=PATH=/bin"], {"PATH": "/bin"}),
        (["--env=-*", "--env=FOO=$FOO:baz"], {"FOO": "bar:baz"}),
        (["--env=-*", "--env=X=${FOO}x$$"], {"X": "barx$"}),
        # expansion looks at the environment built so far first
        (["--env=-*", "--env=P=/bin", "--env=P=$P:/usr/bin"], {"P": "/bin:/usr/bin"}),
        # a copy does not replace what is set already
        (
            ["--env=-*", "--env=FOO=mine", "--env=FOO*"],
            {"FOO": "mine", "FOO_ONE": "1", "FOO_TWO": "2"},
        ),
        # rules apply in order, whichever option gives them
        (["--env=-*", "--env=A=1", "--env-remove=A", "--env=B=2"], {"B": "2"}),
        (["--env=-*", "--env=FOO*", "--env-remove=/FOO_/"], {"FOO": "bar"}),
        (["--env=-*", "--env=NOPE*"], {}),  # a copy that matches nothing is no error
    ],
)
def test_env_rules(
    rules: list[str], environment: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert system(capsys, *rules, "a")["environment"] == environment


@pytest.mark.usefixtures("foo_env")
def test_env_remove_leaves_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    environment = system(capsys, "--env-remove=FOO*", "a")["environment"]
    assert environment == {k: v for k, v in os.environ.items() if not k.startswith("FOO")}


@pytest.mark.usefixtures("foo_env")
def test_env_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "envfile"
    rules.write_text("-*\n\n# a comment\n  FOO=bar  \nBAR=${FOO}/baz\nFOO_*\n", encoding="utf-8")
    expected = {"FOO": "bar", "BAR": "bar/baz", "FOO_ONE": "1", "FOO_TWO": "2"}
    assert system(capsys, f"--env-file={rules}", "a")["environment"] == expected
    assert system(capsys, f"--env=^{rules}", "a")["environment"] == expected


def test_env_file_in_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "envfile").write_text("-*\nA=1\n", encoding="utf-8")
    assert system(capsys, "--env=^~/envfile", "a")["environment"] == {"A": "1"}


def test_env_mustache_goes_to_env_expand(capsys: pytest.CaptureFixture[str]) -> None:
    attrs = system(capsys, "--env=-*", "--env=A=1", "--env=R={{rank}}-$X", "a")
    assert attrs["environment"] == {"A": "1"}
    assert attrs["shell"]["options"]["env-expand"] == {"R": "{{rank}}-$X"}


@pytest.mark.usefixtures("foo_env")
@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("FOO=$NOPE", '--env=FOO=$NOPE: variable "NOPE" is not set'),
        ("FOO=${NOPE}x", '--env=FOO=${NOPE}x: variable "NOPE" is not set'),
        ("FOO=$", "--env=FOO=$: a $ must start $NAME or ${NAME}, or be written $$"),
        ("FOO=${A:-b}", "--env=FOO=${A:-b}: a $ must start $NAME or ${NAME}"),
        ("=x", "--env==x: the variable name is empty"),
        ("-/(/", "--env=-/(/: bad regular expression"),
        ("^/no/such/file", "--env: cannot read rules from /no/such/file: No such file"),
    ],
)
def test_env_errors(rule: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert fails(capsys, f"--env={rule}", "a").startswith(message)


def test_env_file_including_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = tmp_path / "loop"
    loop.write_text(f"^{loop}\n", encoding="utf-8")
    assert "env files nest more than 16 deep" in fails(capsys, f"--env-file={loop}", "a")


# ---------------------------------------------------------------------- rlimits

CURRENT = {
    "cpu": -1,
    "fsize": -1,
    "data": -1,
    "stack": 8388608,
    "core": 0,
    "nofile": 1024,
    "ofile": 1024,
    "as": -1,
    "rss": -1,
    "nproc": 4096,
    "memlock": 65536,
    "msgqueue": 819200,
    "nice": 0,
    "rtprio": 0,
    "rttime": -1,
    "sigpending": 4096,
}
PROPAGATED = ["cpu", "fsize", "data", "stack", "core", "nofile", "as", "rss", "nproc"]


def test_rlimits_propagate_by_default_as_flux(capsys: pytest.CaptureFixture[str]) -> None:
    limits = system(capsys, "--env=-*", "a")["shell"]["options"]["rlimit"]
    assert limits == rlimits.filter_rlimits([], rlimits.current_rlimits())
    assert "memlock" not in limits
    assert "nofile" in limits
    assert "shell" not in system(capsys, *PLAIN, "a")


def test_current_rlimits_reads_this_process() -> None:
    import resource

    limits = rlimits.current_rlimits()
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert limits["nofile"] == (-1 if soft == resource.RLIM_INFINITY else soft)
    assert set(PROPAGATED) <= set(limits)


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ([], {name: CURRENT[name] for name in PROPAGATED}),
        (["-*"], {}),
        (["-*", "core"], {"core": 0}),
        (["-*", "nofile=4096", "CORE=unlimited"], {"nofile": 4096, "core": -1}),
        (["-*", "core=inf", "stack=infinity"], {"core": -1, "stack": -1}),
        (["-*", "memlock"], {"memlock": 65536}),
        (["-*", "rt*"], {"rtprio": 0, "rttime": -1}),
        (["-*", "/^n/"], {"nofile": 1024, "nproc": 4096, "nice": 0}),
        (["-/^[a-m]/"], {"stack": 8388608, "nofile": 1024, "rss": -1, "nproc": 4096}),
        (["*"], CURRENT),
    ],
)
def test_filter_rlimits(rules: list[str], expected: dict[str, int]) -> None:
    assert rlimits.filter_rlimits(rules, CURRENT) == expected


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("bogus=1", "--rlimit=bogus=1: unknown resource limit (known: cpu, fsize"),
        ("nofile=abc", "--rlimit=nofile=abc: the value must be an integer or unlimited"),
        ("nofile=-5", "--rlimit=nofile=-5: the value must be an integer or unlimited"),
        ("xyz", "--rlimit=xyz: no resource limit matches"),
    ],
)
def test_bad_rlimits(rule: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        rlimits.filter_rlimits([rule], CURRENT)
    assert fails(capsys, *PLAIN, f"--rlimit={rule}", "a").startswith(message)


def test_rlimit_option_takes_comma_lists(capsys: pytest.CaptureFixture[str]) -> None:
    options = system(capsys, "--env=-*", "--rlimit=-*,core=5", "--rlimit=nofile=9", "a")
    assert options["shell"]["options"]["rlimit"] == {"core": 5, "nofile": 9}


# ----------------------------------------------------------------- dependencies


def test_dependencies_in_command_line_order(capsys: pytest.CaptureFixture[str]) -> None:
    before = time.time()
    deps = system(
        capsys,
        *PLAIN,
        "--dependency=afterok:ƒ2oLkTLb",
        "--begin-time=+1h",
        "--dependency=foo:f1?val=a&val=b;n=3",
        "a",
    )["dependencies"]
    after = time.time()
    assert deps[0] == {"scheme": "afterok", "value": "ƒ2oLkTLb"}
    assert deps[1]["scheme"] == "begin-time"
    assert before + 3600 <= float(deps[1]["value"]) <= after + 3600
    assert deps[2] == {"scheme": "foo", "value": "f1", "val": ["a", "b"], "n": 3}


def test_begin_time_now(capsys: pytest.CaptureFixture[str]) -> None:
    before = time.time()
    (dep,) = system(capsys, *PLAIN, "--begin-time=now", "a")["dependencies"]
    assert before <= float(dep["value"]) <= time.time()


def test_no_dependencies_no_key(capsys: pytest.CaptureFixture[str]) -> None:
    # RFC 26: without dependencies, attributes.system.dependencies is absent
    assert "dependencies" not in system(capsys, *PLAIN, "a")


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--dependency=after ok", '--dependency: invalid dependency URI "after ok": expected'),
        ("--dependency=afterok:", '--dependency: invalid dependency URI "afterok:": missing'),
        ("--begin-time=blursday", '--begin-time: invalid datetime "blursday"'),
        ("--begin-time=+a", '--begin-time: invalid datetime "+a": invalid Flux standard'),
    ],
)
def test_bad_dependencies(option: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert fails(capsys, option, "a").startswith(message)


# ---------------------------------------------------------- setattr and setopt


def test_setattr_as_flux_t2710(capsys: pytest.CaptureFixture[str]) -> None:
    attributes = dry_run(
        capsys,
        *PLAIN,
        "--setattr",
        "user.meep=false",
        "--setattr",
        'user.foo="xxx"',
        "--setattr",
        "user.foo2=yyy",
        "--setattr",
        "foo",
        "--setattr",
        "test2=b",
        "--setattr",
        "system.bar=42",
        "-S",
        "baz",
        "-Sbiz=4",
        "-S",
        "system.test={}",
        "-S",
        "list=[1, 2.5]",
        "-S",
        "nan=NaN",
        "-S",
        "empty=",
        "a",
    )["attributes"]
    assert attributes["user"] == {"meep": False, "foo": "xxx", "foo2": "yyy"}
    system_ = attributes["system"]
    assert system_["foo"] == 1
    assert system_["test2"] == "b"
    assert system_["bar"] == 42
    assert system_["baz"] == 1
    assert system_["biz"] == 4
    assert system_["test"] == {}
    assert system_["list"] == [1, 2.5]
    assert system_["nan"] == "NaN"  # not JSON data, so text
    assert system_["empty"] == ""


def test_setattr_overrides_earlier_options(capsys: pytest.CaptureFixture[str]) -> None:
    attrs = system(capsys, *PLAIN, "-t", "5", "-S", "duration=7", "-S", ".system.cwd=/x", "a")
    assert attrs["duration"] == 7
    assert attrs["cwd"] == "/x"


def test_setattr_from_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    value = [{"foo": "value", "bar": 42}, {"foo": "value2", "bar": None}]
    path = tmp_path / "attr.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    attributes = dry_run(capsys, *PLAIN, f"--setattr=^user.foo={path}", "a")["attributes"]
    assert attributes["user"]["foo"] == value


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[{ foo":"value2"}]', "Expecting property name enclosed in double quotes"),
        ("[NaN]", "NaN is not JSON data"),
        (None, "No such file or directory"),
    ],
)
def test_setattr_from_bad_file(
    content: str | None, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    err = fails(capsys, f"--setattr=^user.foo={path}", "a")
    assert err.startswith(f"--setattr: {path}: ")
    assert message in err


def test_setattr_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert fails(capsys, "-S", "foo=1", "-S", "foo.bar=2", "a") == (
        "--setattr=foo.bar=2: cannot set attributes.system.foo.bar:"
        " attributes.system.foo is already set and is not a mapping"
    )
    assert fails(capsys, "-S", "^user.x", "a") == "--setattr=^user.x: ^KEY needs =FILE"
    assert fails(capsys, "-S", "a..b=1", "a").startswith("--setattr=a..b=1: attribute key")


def test_setattr_outside_system_and_user_is_caught_by_validation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert fails(capsys, "-S", ".foo=1", "a").startswith("attributes.foo: unknown key")
    # --flags=novalidate skips the check, as it skips job-ingest's in flux
    assert main(["submit", "--dry-run", *PLAIN, "--flags=novalidate", "-S", ".foo=1", "a"]) == 0
    jobspec = json.loads(capsys.readouterr().out)
    assert jobspec["attributes"]["foo"] == 1


def test_setopt_as_flux_t2710(capsys: pytest.CaptureFixture[str]) -> None:
    # flux's test, with option names pflux's shell knows in place of made-up ones
    options = system(
        capsys,
        *PLAIN,
        "--setopt",
        "exit-on-error=true",
        "--setopt",
        "verbose",
        "--setopt",
        "signal.signum=42",
        "-o",
        "taskmap.scheme=cyclic",
        "--output=o",
        "-o",
        "output.stdout.label=true",
        "a",
    )["shell"]["options"]
    assert options == {
        "output": {"stdout": {"type": "file", "path": "o", "label": True}},
        "exit-on-error": True,
        "verbose": 1,
        "signal": {"signum": 42},
        "taskmap": {"scheme": "cyclic"},
    }


# --------------------------------------------------------------- urgency, flags


def request(*args: str) -> jobopts.JobRequest:
    parser = OptionParser("pflux submit")
    jobopts.add_options(parser)
    options = parser.parse_args([*args, "--env=-*", "--rlimit=-*", "a"])
    return jobopts.job_request(options, environ={}, cwd="/", now=0.0, rlimits={})


@pytest.mark.parametrize(
    ("value", "urgency"),
    [("0", 0), ("6", 6), ("31", 31), ("hold", 0), ("default", 16), ("expedite", 31)],
)
def test_urgency(value: str, urgency: int) -> None:
    assert request(f"--urgency={value}").urgency == urgency
    assert request().urgency == 16


@pytest.mark.parametrize("value", ["32", "-1", "foo", "", " 5", "HOLD"])
def test_bad_urgency(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SpecError, match="must be 0-31, hold, default or expedite"):
        request(f"--urgency={value}")
    assert fails(capsys, f"--urgency={value}", "a") == (
        f"--urgency={value}: must be 0-31, hold, default or expedite"
    )


def test_flags() -> None:
    assert request().flags == frozenset()
    assert request("--flags=debug,waitable").flags == {"debug", "waitable"}
    assert request("--flags", "debug", "--flags=novalidate").flags == {"debug", "novalidate"}


def test_bad_flags(capsys: pytest.CaptureFixture[str]) -> None:
    expected = '--flags: unknown flag "notaflag" (expected debug, waitable, novalidate)'
    assert fails(capsys, "--flags=debug,notaflag", "a") == expected


def test_request_fields() -> None:
    req = request("--input=0-3", "-n4")
    assert req.input_ranks == "0-3"
    assert "shell" not in req.jobspec["attributes"]["system"]
    assert request("--input=file").input_ranks is None
    with pytest.raises(UsageError, match="job command and arguments are missing"):
        jobopts.job_request(
            Args(**{**vars(_namespace()), "command": []}),
            environ={},
            cwd="/",
            now=0.0,
            rlimits={},
        )


def _namespace() -> Args:
    parser = OptionParser("pflux submit")
    jobopts.add_options(parser)
    return parser.parse_args(["a"])


# ----------------------------------------------- per-resource options, --taskmap


def _per_resource_case(resources: str, shell: str = "") -> str:
    system = '"duration": 0, ' + (f'"shell": {{"options": {shell}}}, ' if shell else "")
    return (
        f'{{"resources": [{resources}], "tasks": [{{"command": ["app"], "slot": "task", '
        f'"count": {{"per_slot": 1}}}}], "attributes": {{"system": {{{system}"environment": {{}}, '
        '"cwd": "/home/flux"}}, "version": 1}'
    )


PER_RESOURCE = {
    "-N2 --tasks-per-node=2": _per_resource_case(
        '{"type": "node", "count": 2, "exclusive": true, "with": [{"type": "slot", "count": 1, '
        '"with": [{"type": "core", "count": 1}], "label": "task"}]}',
        '{"per-resource": {"type": "node", "count": 2}}',
    ),
    "--cores=4 --tasks-per-core=2": _per_resource_case(
        '{"type": "slot", "count": 4, "with": [{"type": "core", "count": 1}], "label": "task"}',
        '{"per-resource": {"type": "core", "count": 2}}',
    ),
    "-N2 --cores=8 --gpus-per-node=1": _per_resource_case(
        '{"type": "node", "count": 2, "with": [{"type": "slot", "count": 1, "with": [{"type": '
        '"core", "count": 4}, {"type": "gpu", "count": 1}], "label": "task"}]}'
    ),
    "--cores=3": _per_resource_case(
        '{"type": "slot", "count": 3, "with": [{"type": "core", "count": 1}], "label": "task"}'
    ),
}


@pytest.mark.parametrize("options", sorted(PER_RESOURCE))
def test_per_resource_options_print_as_flux(
    options: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["submit", "--dry-run", *PLAIN, *options.split(), "app"]) == 0
    out = capsys.readouterr().out
    assert out == PER_RESOURCE[options] + "\n"
    validate(json.loads(out))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cores=2", "-n2"], "Per-resource options can't be used with per-task options."
         " (See --help for details)"),
        (["--tasks-per-node=1", "-c2", "-N1"], "Per-resource options can't be used with"
         " per-task options. (See --help for details)"),
        (["-N1", "--tasks-per-node=1", "--tasks-per-core=1"],
         "Do not specify both the number of tasks per node and per core"),
        (["--gpus-per-node=1"], "--gpus-per-node requires --nodes"),
        (["--tasks-per-node=2"], "must specify node or core count with per_resource"),
        (["-N2", "--cores=3"], "number of cores must be evenly divisible by node count"),
        (["-N4", "--cores=2"], "number of cores cannot be less than nnodes"),
        (["-N1", "--tasks-per-node=0"], "--tasks-per-node=0: must be an integer >= 1"),
        (["--cores=x"], "--cores=x: must be an integer >= 1"),
        (["--taskmap=block:2"], "--taskmap=block:2: block taskmap does not accept a value (got 2)"),
        (["--taskmap=cyclic:0"], "--taskmap=cyclic:0: invalid cyclic stride: 0"),
        (["--taskmap=manual:[[0,1,1,1]]"], "--taskmap=manual:[[0,1,1,1]]: taskmap scheme"
         " 'manual' is not supported by pflux (block, cyclic[:N])"),
        (["--taskmap=:1"], "--taskmap=:1: not a SCHEME[:VALUE] URI"),
    ],
)  # fmt: skip
def test_bad_per_resource_and_taskmap_options(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert fails(capsys, *args, "app") == message


def test_taskmap_is_a_shell_option_as_flux_writes_it(capsys: pytest.CaptureFixture[str]) -> None:
    options = system(capsys, *PLAIN, "-n4", "--taskmap=cyclic:2", "app")["shell"]["options"]
    assert options == {"taskmap": {"scheme": "cyclic", "value": "2"}}
    options = system(capsys, *PLAIN, "--taskmap=cyclic", "app")["shell"]["options"]
    assert options == {"taskmap": {"scheme": "cyclic", "value": ""}}


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            "pmi=pmix",
            "attributes.system.shell.options.pmi: unknown value 'pmix'"
            " (one of simple, pmi1, pmi2, off)",
        ),
        (
            "taskmap.scheme=hostfile",
            "attributes.system.shell.options.taskmap: taskmap scheme 'hostfile'"
            " is not supported by pflux",
        ),
    ],
)
def test_shell_options_the_shell_would_refuse_are_refused_at_submission(
    option: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert fails(capsys, "-o", option, "app").startswith(message)
    assert system(capsys, *PLAIN, "-o", "pmi=off", "app")["shell"]["options"] == {"pmi": "off"}
