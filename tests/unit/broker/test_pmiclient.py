"""The PMI-1 client against a scripted server: every failure names the command and rc."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator

import pytest

from pflux.broker.pmiclient import PMIClient, PMIError

HELLO = [
    b"cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1\n",
    b"cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024\n",
    b"cmd=my_kvsname rc=0 kvsname=kvs_1\n",
]


class Server:
    """Answers each request line with the next scripted answer, recording the requests."""

    def __init__(self, answers: list[bytes]) -> None:
        self.mine, theirs = socket.socketpair()
        self.fd = theirs.detach()
        self.requests: list[str] = []
        self.thread = threading.Thread(target=self._serve, args=(answers,), daemon=True)
        self.thread.start()

    def _serve(self, answers: list[bytes]) -> None:
        reader = self.mine.makefile("rb")
        for answer in answers:
            line = reader.readline()
            if not line:
                break
            self.requests.append(line.decode().strip())
            self.mine.sendall(answer)
        reader.close()
        self.mine.close()


@pytest.fixture
def serve() -> Iterator[type[Server]]:
    """Scripted servers, each thread joined after the test."""
    made: list[Server] = []

    class Made(Server):
        def __init__(self, answers: list[bytes]) -> None:
            super().__init__(answers)
            made.append(self)

    yield Made
    for server in made:
        server.thread.join(10)


def test_a_session(serve: type[Server]) -> None:
    server = serve(
        [
            *HELLO,
            b"cmd=put_result rc=0\n",
            b"cmd=barrier_out rc=0\n",
            b"cmd=get_result rc=0 msg=success value=a b,c\n",
            b"cmd=finalize_ack rc=0\n",
        ]
    )
    env = {"PMI_FD": str(server.fd), "PMI_RANK": "1", "PMI_SIZE": "2"}
    with PMIClient.from_env(env) as client:
        assert (client.rank, client.size, client.kvsname) == (1, 2, "kvs_1")
        client.put("k", "v w")
        client.barrier()
        assert client.get("k") == "a b,c"
    server.thread.join(10)
    assert server.requests == [
        "cmd=init pmi_version=1 pmi_subversion=1",
        "cmd=get_maxes",
        "cmd=get_my_kvsname",
        "cmd=put kvsname=kvs_1 key=k value=v w",
        "cmd=barrier_in",
        "cmd=get kvsname=kvs_1 key=k",
        "cmd=finalize",
    ]


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ([b"cmd=response_to_init rc=-1\n"], "PMI init: rc=-1"),
        ([b"cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n"], "version 2.0"),
        ([b"cmd=oops rc=0\n"], "PMI init: expected cmd=response_to_init, got 'cmd=oops rc=0'"),
        ([b""], "PMI init: the server closed the connection"),
        ([HELLO[0], b"cmd=maxes rc=0 keylen_max=x\n"], "PMI get_maxes: keylen_max='x'"),
        ([*HELLO, b"cmd=get_result rc=-1 msg=key_not_found\n"], "PMI get: rc=-1: key_not_found"),
    ],
)
def test_failures_name_the_command(serve: type[Server], answers: list[bytes], message: str) -> None:
    server = serve(answers)

    def session() -> None:
        PMIClient(server.fd, 0, 2).get("k")

    with pytest.raises(PMIError, match=message.replace("(", r"\(")):
        session()
    os.close(server.fd)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PMI_RANK": "0", "PMI_SIZE": "2"}, "PMI: PMI_FD=None: not an integer"),
        ({"PMI_FD": "9", "PMI_RANK": "2", "PMI_SIZE": "2"}, "PMI_RANK=2 is not below PMI_SIZE=2"),
    ],
)
def test_a_bad_environment_is_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(PMIError, match=message):
        PMIClient.from_env(env)
