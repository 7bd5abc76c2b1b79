"""The shell's PMI-1 server: the wire parser, and a job's exchange over real socket pairs."""

from __future__ import annotations

import os
import select
import socket
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.shell import pmiwire
from pflux.shell.pmi import PROTOCOL_ERROR, PMIServer
from pflux.shell.pmiwire import PMIRequestError, parse

# --- the wire parser ------------------------------------------------------------------


def test_a_request_is_its_key_value_words() -> None:
    assert parse(b"cmd=init pmi_version=1 pmi_subversion=1") == {
        "cmd": "init",
        "pmi_version": "1",
        "pmi_subversion": "1",
    }


def test_value_and_error_msg_run_to_the_end_of_the_line() -> None:
    assert parse(b"cmd=put kvsname=k key=a value=x y=z  w") == {
        "cmd": "put",
        "kvsname": "k",
        "key": "a",
        "value": "x y=z  w",
    }
    assert parse(b"cmd=abort exitcode=2 error_msg=it broke") == {
        "cmd": "abort",
        "exitcode": "2",
        "error_msg": "it broke",
    }
    assert parse(b"cmd=put key=novalue=1")["key"] == "novalue=1"  # not a word's start


@pytest.mark.parametrize(
    "line",
    [b"", b"garbage", b"cmd", b"=x cmd=init", b"key=a", b"x" * (pmiwire.LINE_MAX + 1)],
)
def test_what_is_not_pmi_is_a_protocol_error(line: bytes) -> None:
    with pytest.raises(PMIRequestError):
        parse(line)


WORD = st.binary(min_size=1, max_size=8).filter(
    lambda w: b"=" not in w and not any(c in b" \t\n\r\x0b\x0c" for c in w)
)


@settings(max_examples=300)
@given(st.dictionaries(WORD, WORD, max_size=6), WORD, st.binary(max_size=40))
def test_a_request_made_of_fields_parses_back_to_them(
    fields: dict[bytes, bytes], cmd: bytes, value: bytes
) -> None:
    fields = {k: v for k, v in fields.items() if k not in (b"cmd", b"value", b"error_msg")}
    line = b" ".join([b"cmd=" + cmd, *(k + b"=" + v for k, v in fields.items()), b"value=" + value])
    expected = {b"cmd": cmd, **fields, b"value": value}
    assert parse(line) == {k.decode("latin-1"): v.decode("latin-1") for k, v in expected.items()}


@settings(max_examples=500)
@given(st.binary(max_size=200))
def test_any_bytes_parse_or_are_a_protocol_error(line: bytes) -> None:
    try:
        fields = parse(line)
    except PMIRequestError:
        return
    assert "cmd" in fields or "mcmd" in fields


# --- the server -----------------------------------------------------------------------


class Job:
    """A server for ``n`` tasks on one node, and the tasks' ends of their connections."""

    def __init__(self, n: int) -> None:
        self.poller = select.poll()
        self.tasks: list[socket.socket] = []
        clients = {}
        for rank in range(n):
            ours, theirs = socket.socketpair()
            theirs.settimeout(5)
            self.tasks.append(theirs)
            clients[ours.detach()] = rank
        for fd in clients:
            self.poller.register(fd, select.POLLIN)
        self.fds = list(clients)
        self.server = PMIServer(clients, self.poller, (n, ((0, 1, n, 1),), "ƒjob", n))

    def ask(self, rank: int, request: bytes) -> str | None:
        """Send ``request`` as task ``rank`` and serve it; the exception note, if any."""
        self.tasks[rank].sendall(request)
        return self.server.feed(self.fds[rank], os.read(self.fds[rank], 65536))

    def answer(self, rank: int) -> bytes:
        return self.tasks[rank].recv(65536)

    def close(self) -> None:
        for fd in list(self.server.clients):
            self.server.close(fd)
        for task in self.tasks:
            task.close()


@pytest.fixture
def job() -> Iterator[Job]:
    job = Job(2)
    yield job
    job.close()


def test_init_and_the_jobs_facts(job: Job) -> None:
    job.ask(0, b"cmd=init pmi_version=1 pmi_subversion=1\n")
    assert job.answer(0) == b"cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1\n"
    job.ask(0, b"cmd=get_maxes\ncmd=get_universe_size\ncmd=get_appnum\ncmd=get_my_kvsname\n")
    answers = b""
    while answers.count(b"\n") < 4:
        answers += job.answer(0)
    assert answers.decode().splitlines() == [
        "cmd=maxes rc=0 kvsname_max=64 keylen_max=64 vallen_max=1024",
        "cmd=universe_size rc=0 size=2",
        "cmd=appnum rc=0 appnum=0",
        "cmd=my_kvsname rc=0 kvsname=ƒjob",
    ]


def test_init_of_an_unsupported_version_fails(job: Job) -> None:
    job.ask(1, b"cmd=init pmi_version=1 pmi_subversion=0\n")
    assert job.answer(1) == b"cmd=response_to_init rc=-1\n"


def test_puts_are_seen_by_others_after_the_barrier(job: Job) -> None:
    job.ask(0, b"cmd=put kvsname=k key=card0 value=addr 0\n")
    assert job.answer(0) == b"cmd=put_result rc=0\n"
    job.ask(0, b"cmd=barrier_in\n")
    job.ask(1, b"cmd=get kvsname=k key=nokey\n")
    assert job.answer(1) == b"cmd=get_result rc=4\n"
    job.ask(1, b"cmd=barrier_in\n")  # the last one in: everybody out
    assert job.answer(0) == job.answer(1) == b"cmd=barrier_out rc=0\n"
    job.ask(1, b"cmd=get kvsname=k key=card0\n")
    assert job.answer(1) == b"cmd=get_result rc=0 value=addr 0\n"


def test_the_process_mapping_and_taskmap_are_there_from_the_start(job: Job) -> None:
    job.ask(1, b"cmd=get kvsname=k key=PMI_process_mapping\n")
    assert job.answer(1) == b"cmd=get_result rc=0 value=(vector,(0,1,2))\n"
    job.ask(1, b"cmd=get kvsname=k key=flux.taskmap\n")
    assert job.answer(1) == b'cmd=get_result rc=0 value={"version":1,"map":[[0,1,2,1]]}\n'


def test_a_request_may_come_in_pieces(job: Job) -> None:
    assert job.ask(0, b"cmd=get_app") is None
    job.ask(0, b"num\n")
    assert job.answer(0) == b"cmd=appnum rc=0 appnum=0\n"


def test_lengths_over_flux_limits_get_their_error_codes(job: Job) -> None:
    job.ask(0, b"cmd=put kvsname=k key=" + b"k" * 64 + b" value=v\n")
    assert job.answer(0) == b"cmd=put_result rc=5\n"
    job.ask(0, b"cmd=put kvsname=k key=k value=" + b"v" * 1024 + b"\n")
    assert job.answer(0) == b"cmd=put_result rc=7\n"


def test_unimplemented_commands_and_spawn_fail_politely(job: Job) -> None:
    job.ask(0, b"cmd=lookup_name service=x\n")
    assert job.answer(0) == b"cmd=lookup_result rc=-1 msg=command not implemented\n"
    assert job.ask(0, b"mcmd=spawn\nnprocs=1\n") is None
    job.ask(0, b"endcmd\n")
    assert job.answer(0) == b"cmd=spawn_result rc=-1\n"


def test_abort_is_the_jobs_exception(job: Job) -> None:
    assert job.ask(1, b"cmd=abort exitcode=3\n") == "PMI_Abort: aborted"
    assert job.ask(0, b"garbage\n") is None  # the job is ending: one exception is enough


def test_garbage_closes_that_connection_and_fails_the_job(job: Job) -> None:
    assert job.ask(0, b"cmd=init pmi_version=1 pmi_subversion=1\ngarbage\n") == PROTOCOL_ERROR
    assert job.fds[0] not in job.server.clients
    assert job.answer(0).startswith(b"cmd=response_to_init rc=0")
    assert job.answer(0) == b""  # closed
    job.ask(1, b"cmd=get_appnum\n")  # the others are still served
    assert job.answer(1) == b"cmd=appnum rc=0 appnum=0\n"


def test_a_line_too_long_without_its_end_is_a_protocol_error(job: Job) -> None:
    assert job.ask(0, b"cmd=put value=" + b"x" * pmiwire.LINE_MAX) == PROTOCOL_ERROR


def test_a_task_that_closes_its_end_is_forgotten(job: Job) -> None:
    job.tasks[0].close()
    fd = job.fds[0]
    assert job.server.feed(fd, os.read(fd, 10)) is None
    assert fd not in job.server.clients
