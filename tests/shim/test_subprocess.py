"""``flux.subprocess``: background processes of a broker's rexec service started,
listed, signalled and waited for from a script, with flux-core's names, arguments and
errors."""

from __future__ import annotations

from support.instance import LiveInstance
from support.shim import flux_output


def test_rexec_bg_list_kill_and_wait(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import os, signal, flux
        import flux.subprocess as sp
        h = flux.Flux()
        print(sp.command_create(["true"], label="x", cwd="/", env={}, opts={}))
        f = sp.rexec_bg(h, ["sh", "-c", "exit 7"], label="seven", waitable=True)
        print(f.get_rank(), f.get_pid() > 0)
        w = sp.wait(h, label="seven")
        print(os.WEXITSTATUS(w.get_status()), w.get_output(), w.stdout, w.stderr)
        pid = sp.rexec_bg(h, ["sleep", "300"], waitable=True, nodeid=0).get_pid()
        procs = [p for p in sp.list(h).get_processes() if p.pid == pid]
        print(procs)
        sp.kill(h, signal.SIGKILL, pid=pid).get()
        print(os.WTERMSIG(sp.wait(h, pid=pid).get_status()))
        for call in (lambda: sp.wait(h), lambda: sp.kill(h, pid=1, label="x")):
            try:
                call()
            except ValueError as exc:
                print("ValueError", exc)
        for call in (
            lambda: sp.wait(h, label="nosuch").get(),
            lambda: sp.rexec_bg(h, ["no-such-command-here"]).get_pid(),
            lambda: sp.rexec_bg(h, ["true"], sign=True),
        ):
            try:
                call()
            except OSError as exc:
                print("OSError", exc.strerror or exc)
        """,
        instance.uri,
    )
    lines = out.splitlines()
    assert lines[0] == (
        "{'cmdline': ['true'], 'cwd': '/', 'env': {}, 'opts': {}, 'channels': [], 'label': 'x'}"
    )
    assert lines[1:3] == ["0 True", "7 [] b'' b''"]
    assert lines[3].startswith("[Subprocess(pid=")
    assert lines[3].endswith(
        ", rank=0, state='R', label='-', cmd='sleep 300', bg=True, waitable=True, attached=False)]"
    )
    assert lines[4:] == [
        "9",
        "ValueError at least one of pid or label must be specified",
        "ValueError only one of pid or label may be specified",
        "OSError rexec: no process labelled nosuch on this rank",
        "OSError error launching process: No such file or directory",
        "OSError flux-security is not available",
    ]
