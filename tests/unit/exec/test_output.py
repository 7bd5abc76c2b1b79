"""RFC 24 output events, the KVS output limit, line buffering and output options."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import JobspecError, PfluxError
from pflux.exec.input import InputConfig, input_config
from pflux.exec.output import (
    KVSOutput,
    StreamConfig,
    event_line,
    job_tags,
    output_config,
    output_paths,
    parse_size,
    render_path,
    template_scope,
)
from pflux.shell.lines import LineBuffer, label
from pflux.spec.eventlog import parse
from pflux.spec.fluid import JobID
from pflux.spec.layout import Layout, TaskPlace
from pflux.spec.size import SIZE_RULE


def events(out: KVSOutput) -> list[tuple[str, dict[str, object]]]:
    return [(e.name, e.context or {}) for e in parse(out.take().decode())]


def test_header_data_and_eof_match_flux_cores_shape() -> None:
    out = KVSOutput(100, "100")
    out.header(2)
    out.data("stdout", 1, b"hello\n")
    out.eof("stdout", 1)
    assert events(out) == [
        (
            "header",
            {
                "version": 1,
                "encoding": {"stdout": "UTF-8", "stderr": "UTF-8"},
                "count": {"stdout": 2, "stderr": 2},
                "options": {},
            },
        ),
        ("data", {"stream": "stdout", "rank": "1", "data": "hello\n"}),
        ("data", {"stream": "stdout", "rank": "1", "eof": True}),
    ]
    assert not out


def test_bytes_that_are_not_utf8_are_base64() -> None:
    out = KVSOutput(100, "100")
    out.data("stderr", 0, b"\xff\xfe\n")
    [(name, context)] = events(out)
    assert name == "data"
    assert context["encoding"] == "base64"
    assert base64.b64decode(str(context["data"])) == b"\xff\xfe\n"


def test_the_limit_keeps_bytes_up_to_it_and_warns_once() -> None:
    out = KVSOutput(10, "10")
    out.data("stdout", 0, b"12345\n")
    out.data("stdout", 0, b"678\n90\n")
    out.data("stdout", 0, b"x\n")
    out.data("stderr", 0, b"ok\n")
    out.close()
    got = events(out)
    assert [c.get("data") for n, c in got if n == "data"] == ["12345\n", "678\n", "ok\n"]
    logs = [c["message"] for n, c in got if n == "log"]
    assert logs == [
        "stdout will be truncated, 10 limit exceeded",
        "stdout: 5 of 15 bytes truncated",
    ]
    assert all(c["level"] == 4 for n, c in got if n == "log")


def test_the_truncated_count_is_what_passed_the_limit() -> None:
    out = KVSOutput(5, "5")
    out.data("stdout", 0, b"0123456789\n")  # 11 bytes, one line
    out.data("stdout", 0, b"more\n")
    out.close()
    got = events(out)
    assert [c.get("data") for n, c in got if n == "data"] == ["01234"]
    assert [c["message"] for n, c in got if n == "log"] == [
        "stdout will be truncated, 5 limit exceeded",
        "stdout: 11 of 16 bytes truncated",
    ]
    single = KVSOutput(5, "5")
    single.data("stderr", 0, b"0123456789\n")
    single.close()
    assert "stderr: 6 of 11 bytes truncated" in [c.get("message") for _, c in events(single)]


def test_take_returns_the_events_added_since_the_last_take() -> None:
    out = KVSOutput(1000, "1000")
    out.data("stdout", 0, b"abc\n")
    first = out.take()
    out.eof("stdout", 0)
    assert [e.name for e in parse(first.decode())] == ["data"]
    assert json.loads(out.take())["context"] == {"stream": "stdout", "rank": "0", "eof": True}
    assert out.take() == b""


def test_line_buffer_holds_a_partial_line() -> None:
    buf = LineBuffer(line=True)
    assert buf.feed(b"ab") == b""
    assert buf.feed(b"c\nde") == b"abc\n"
    assert buf.rest() == b"de"
    assert buf.rest() == b""
    assert LineBuffer(line=False).feed(b"ab") == b"ab"


@settings(max_examples=200)
@given(st.integers(1, 50), st.lists(st.binary(max_size=30), max_size=10))
def test_the_limit_is_never_exceeded(limit: int, chunks: list[bytes]) -> None:
    out = KVSOutput(limit, str(limit))
    for chunk in chunks:
        out.data("stdout", 0, chunk)
    kept = b"".join(
        base64.b64decode(str(c["data"])) if c.get("encoding") else str(c["data"]).encode()
        for n, c in events(out)
        if n == "data"
    )
    assert len(kept) <= limit
    assert b"".join(chunks).startswith(kept)


@settings(max_examples=200)
@given(st.lists(st.binary(max_size=40), max_size=20))
def test_line_buffer_passes_every_byte_on_in_order_and_only_whole_lines(
    chunks: list[bytes],
) -> None:
    buf = LineBuffer(line=True)
    passed = []
    for chunk in chunks:
        out = buf.feed(chunk)
        assert not out or out.endswith(b"\n")
        passed.append(out)
    assert b"".join(passed) + buf.rest() == b"".join(chunks)


def test_stderr_follows_stdout_to_a_file_but_is_unbuffered() -> None:
    conf = output_config({"stdout": {"type": "file", "path": "out.txt", "label": True}})
    assert conf.stdout == StreamConfig("file", "out.txt", True, "line", "truncate")
    assert conf.stderr == StreamConfig("file", "out.txt", True, "none", "truncate")
    assert conf.limit == 10 * 1024 * 1024
    assert conf.batch_timeout == 0.5


def test_a_path_alone_means_a_file_and_kvs_drops_the_path() -> None:
    conf = output_config(
        {"stdout": {"path": "o"}, "stderr": {"type": "kvs"}, "mode": "append", "limit": "1K"}
    )
    assert (conf.stdout.type, conf.stdout.path, conf.stdout.mode) == ("file", "o", "append")
    assert (conf.stderr.type, conf.stderr.path) == ("kvs", None)
    assert conf.limit == 1024


def test_no_options_mean_the_defaults_each_limit_its_own() -> None:
    # no options take the configs made once a limit; any option, the long way
    for limit in ("10M", "1G", "10M"):
        conf = output_config({}, limit)
        assert conf == output_config({"stdout": {}}, limit)
        assert conf.stdout == StreamConfig("kvs", None, False, "line", "truncate")
        assert conf.limit_text == limit
    assert output_config({}, "1G").limit == 1 << 30
    assert input_config({}) == input_config({"stdin": {}}) == InputConfig(None)
    with pytest.raises(JobspecError):
        output_config({}, "lots")  # a bad default limit is refused, not kept


@pytest.mark.parametrize(
    ("options", "where"),
    [
        ({"stdout": {"type": "pipe"}}, "output.stdout.type"),
        ({"stdout": {"type": "file"}}, "output.stdout.path"),
        ({"stdout": {"buffer": {"type": "full"}}}, "output.stdout.buffer.type"),
        ({"stdout": {"buffer": 3}}, "output.stdout.buffer"),
        ({"stderr": {"label": "yes"}}, "output.stderr.label"),
        ({"mode": "w"}, "output.mode"),
        ({"limit": "2G"}, "output.limit"),
        ({"limit": "lots"}, "output.limit"),
        ({"batch-timeout": -1}, "output.batch-timeout"),
        ({"stdout": []}, "output.stdout"),
    ],
)
def test_bad_output_options_name_the_option(options: dict[str, object], where: str) -> None:
    with pytest.raises(JobspecError) as info:
        output_config(options)
    assert info.value.problems[0][0] == f"attributes.system.shell.options.{where}"


def test_sizes() -> None:
    assert parse_size(5) == 5
    assert parse_size("10M") == 10 << 20
    assert parse_size("1.5k") == 1536
    with pytest.raises(JobspecError):
        parse_size(True)
    # flux-core's suffixes, case and all: a lowercase m is refused, naming the option
    with pytest.raises(JobspecError) as info:
        output_config({"limit": "10m"})
    assert info.value.problems == [
        ("attributes.system.shell.options.output.limit", f"must be {SIZE_RULE}, not '10m'")
    ]


@settings(max_examples=100)
@given(st.one_of(st.text(max_size=8), st.floats(), st.none(), st.booleans()))
def test_parse_size_raises_only_pflux_errors(value: object) -> None:
    problems: list[tuple[str, str]] = []
    try:
        size: object = parse_size(value)
    except JobspecError as exc:
        problems, size = exc.problems, 0
    assert isinstance(size, int)
    assert all(path.endswith("output.limit") for path, _ in problems)


def test_render_path_fills_job_tags_and_leaves_others() -> None:
    tags = job_tags(JobID(65535), "sleep", 4, 1)
    assert render_path("out-{{id}}.{{name}}", tags) == "out-ƒLUv.sleep"
    assert render_path("{{jobid.dec}}-{{ id.hex }}-{{id.words}}", tags).startswith("65535-0xffff-")
    assert render_path("{{size}}/{{ntasks}}/{{nnodes}}", tags) == "4/4/1"
    assert render_path("{{taskid}}.{{bogus}}", tags) == "{{taskid}}.{{bogus}}"


def test_a_templates_scope_is_its_narrowest_tag() -> None:
    assert template_scope("out.{{id}}") == "job"
    assert template_scope("out.{{node.name}}.{{id}}") == "node"
    assert template_scope("out.{{node.id}}.{{ taskid }}") == "task"
    assert template_scope("out.{{task.localid}}") == "task"


def places(ntasks: int, nnodes: int = 1) -> Layout:
    per_node = [ntasks // nnodes] * nnodes
    tasks = tuple(
        TaskPlace(rank, rank % per_node[0], rank // per_node[0], rank // per_node[0], (rank,), ())
        for rank in range(ntasks)
    )
    return Layout(tasks, tuple(per_node), ((0, nnodes, per_node[0], 1),))


def test_output_paths_for_a_job_of_one_file() -> None:
    jobid = JobID(65535)
    one = places(1)
    path = "{{id}}.{{name}}.{{taskid}}.{{task.localid}}.{{node.name}}.{{node.cores}}"
    assert output_paths(path, "stdout", jobid=jobid, name="app", places=one, hostname="h") == (
        "ƒLUv.app.0.0.h.0",
    )
    four = places(4)
    node = "{{node.id}}:{{node.ncores}}:{{node.cores}}:{{node.gpus}}:{{node.broker_rank}}"
    assert output_paths(node, "stderr", jobid=jobid, name="a", places=four, hostname="h") == (
        ("0:4:0-3::0",) * 4
    )
    job = "{{id.dec}}-{{size}}-{{nnodes}}"
    assert output_paths(job, "stdout", jobid=jobid, name="a", places=four, hostname="h") == (
        ("65535-4-1",) * 4
    )


def paths_of(template: str, layout: Layout) -> tuple[str, ...]:
    return output_paths(template, "stdout", jobid=JobID(1), name="a", places=layout, hostname="h")


def test_a_task_tag_means_a_file_per_task_and_a_node_tag_one_per_node() -> None:
    two_nodes = places(4, 2)  # tasks 0, 1 on node 0; 2, 3 on node 1
    paths = paths_of("{{taskid}}.{{task.localid}}.{{node.id}}", two_nodes)
    assert paths == ("0.0.0", "1.1.0", "2.0.1", "3.1.1")
    per_node = paths_of("n{{node.id}}-{{node.cores}}-{{node.broker_rank}}", two_nodes)
    assert per_node == ("n0-0-1-0", "n0-0-1-0", "n1-2-3-1", "n1-2-3-1")


def test_an_unknown_tag_is_left_in_the_path_as_flux_leaves_it() -> None:
    assert paths_of("{{nosuch}}.{{taskid}}", places(2)) == ("{{nosuch}}.0", "{{nosuch}}.1")


def test_the_job_tmpdir_is_refused_by_name() -> None:
    with pytest.raises(PfluxError) as info:
        paths_of("{{tmpdir}}/out", places(1))
    assert str(info.value) == "output.stdout.path '{{tmpdir}}/out': {{tmpdir}} is not supported"


def test_event_lines_are_compact_json_lines() -> None:
    out = KVSOutput(100, "100")
    out.redirect("stdout", "[0-3]", "/tmp/o")
    text = out.take().decode()
    assert text.endswith("\n")
    assert text.count("\n") == 1
    assert json.loads(text)["context"] == {"stream": "stdout", "rank": "[0-3]", "path": "/tmp/o"}


def test_label_prefixes_every_line_and_a_partial_last_one() -> None:
    assert label(b"0: ", b"a\nb\n") == b"0: a\n0: b\n"
    assert label(b"1: ", b"a\npartial") == b"1: a\n1: partial"
    assert label(b"1: ", b"") == b""


def test_an_event_line_takes_a_given_time() -> None:
    line = event_line("shell.start", {"taskmap": {}}, 12.5)
    assert json.loads(line) == {
        "timestamp": 12.5,
        "name": "shell.start",
        "context": {"taskmap": {}},
    }
