"""Standard input: job-exec.stdin into the guest input eventlog and on to the tasks named."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest

from pflux.errors import RPCError
from pflux.exec.input import data_context
from pflux.spec.eventlog import parse


def stdin(live: Any, jobid: int, data: bytes = b"", *, rank: str = "all", eof: bool = False) -> Any:
    return live.call("job-exec.stdin", {"id": jobid, **data_context(rank, data, eof)})


def text_of(live: Any, jobid: int) -> dict[str, str]:
    text: dict[str, str] = {}
    for event in parse(live.guest(jobid, "output")):
        context = event.context or {}
        if event.name == "data" and context.get("stream") == "stdout" and "data" in context:
            text[context["rank"]] = text.get(context["rank"], "") + context["data"]
    return text


def test_what_is_sent_reaches_the_task_and_the_input_eventlog(live: Any) -> None:
    stream = live.start(live.job(["cat"]))
    assert stream.next() == ("start", {})
    assert stdin(live, stream.id, b"hello\n") == {}
    assert stdin(live, stream.id, b"world\n", eof=True) == {}
    assert [kind for kind, _ in stream.all()] == ["finish", "release"]
    assert stream.status() == 0
    assert text_of(live, stream.id) == {"0": "hello\nworld\n"}
    events = parse(live.guest(stream.id, "input"))
    assert [e.name for e in events] == ["header", "data", "data"]
    assert events[0].context == {
        "version": 1,
        "encoding": {"stdin": "UTF-8"},
        "count": {"stdin": 1},
        "options": {},
    }
    assert events[2].context == {"stream": "stdin", "rank": "all", "data": "world\n", "eof": True}


def test_input_goes_to_the_ranks_named_and_binary_input_arrives_whole(live: Any) -> None:
    stream = live.start(live.job(["sh", "-c", "od -An -c; echo end"], num_tasks=2))
    stream.next()
    stdin(live, stream.id, b"\xff\n", rank="1")
    stdin(live, stream.id, rank="all", eof=True)
    stream.all()
    text = text_of(live, stream.id)
    assert text["0"] == "end\n"
    assert text["1"].split() == ["377", "\\n", "end"]


def test_input_to_a_closed_stdin_is_refused(live: Any) -> None:
    stream = live.start(live.job(["sh", "-c", "cat; exec sleep 100"], num_tasks=2))
    stream.next()
    stdin(live, stream.id, rank="0", eof=True)
    with pytest.raises(RPCError) as error:
        stdin(live, stream.id, b"x", rank="0-1")
    assert error.value.errnum == 32  # EPIPE
    assert "stdin is closed" in error.value.errstr
    with pytest.raises(RPCError, match="the job has 2 tasks"):
        stdin(live, stream.id, b"x", rank="5")
    live.call("job-exec.kill", {"id": stream.id, "signum": 9})
    stream.all()


def test_input_past_the_limit_is_a_fatal_exception(live: Any) -> None:
    jobspec = live.job(["sh", "-c", "exec sleep 100"])
    jobspec["attributes"]["system"]["shell"] = {"options": {"input": {"limit": "1K"}}}
    stream = live.start(jobspec)
    stream.next()
    with pytest.raises(RPCError, match="stdin exceeds 1K limit"):
        stdin(live, stream.id, b"x" * 2000)
    got = stream.all()
    assert got[0][0] == "exception"
    assert got[0][1]["note"].startswith("stdin exceeds 1K limit. Try file input")


def test_a_task_reading_a_file_takes_no_input(live: Any, tmp_path: Path) -> None:
    data = tmp_path / "in"
    data.write_text("from the file\n")
    stream = live.start(live.job(["sh", "-c", "cat; exec sleep 100"], input=str(data)))
    stream.next()
    live.wait_output(stream.id, "from the file")
    with pytest.raises(RPCError, match="read from a file"):
        stdin(live, stream.id, b"x")
    live.call("job-exec.kill", {"id": stream.id, "signum": 9})
    stream.all()


def test_an_input_file_that_cannot_be_read_fails_the_job(live: Any) -> None:
    stream = live.start(live.job(["cat"], input="/no/such/input"))
    got = stream.all()
    assert got[1][1]["note"] == (
        "error opening input file '/no/such/input': No such file or directory"
    )


@pytest.mark.parametrize(
    ("changes", "errnum", "message"),
    [
        ({"data": "%%", "encoding": "base64"}, errno.EINVAL, "data: not valid base64"),
        ({"encoding": "gzip"}, errno.EINVAL, "encoding: invalid enum value 'gzip'"),
        ({"stream": "stdout"}, errno.EINVAL, "stream: invalid enum value 'stdout'"),
        ({"rank": "x"}, errno.EINVAL, "rank: "),
        ({"eof": "yes"}, errno.EPROTO, "eof: expected bool, got str"),
        ({"data": 7}, errno.EPROTO, "data: expected str, got int"),
    ],
)
def test_a_bad_stdin_request_names_the_field(
    live: Any, changes: dict[str, Any], errnum: int, message: str
) -> None:
    stream = live.start(live.job(["sh", "-c", "cat; exec sleep 100"]))
    stream.next()
    with pytest.raises(RPCError) as error:
        live.call("job-exec.stdin", {"id": stream.id, "data": "x", **changes})
    assert error.value.errnum == errnum
    assert error.value.errstr.startswith(f"job-exec.stdin: {message}")
    live.call("job-exec.kill", {"id": stream.id, "signum": 9})
    stream.all()
