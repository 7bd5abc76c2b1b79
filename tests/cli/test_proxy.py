"""``proxy TARGET [COMMAND]``: the command (or ``$SHELL``) reaches TARGET through
FLUX_URI and PFLUX_URI, its exit code is proxy's, and a URI pflux cannot reach is
refused naming it."""

from __future__ import annotations

from support.instance import console


def test_the_command_talks_to_the_target_and_its_exit_code_is_kept(uri: str) -> None:
    script = 'echo "$FLUX_URI $PFLUX_URI"; pflux getattr size; exit 3'
    proc = console("proxy", uri, "sh", "-c", script, PFLUX_URI="", FLUX_URI="")
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == f"{uri} {uri}\n1\n"
    proc = console("proxy", uri, "sh", "-c", "kill -TERM $$")
    assert proc.returncode == 128 + 15


def test_without_a_command_it_runs_the_shell(uri: str) -> None:
    proc = console("proxy", uri, stdin='echo "in $FLUX_URI"\n', SHELL="/bin/sh")
    assert (proc.returncode, proc.stdout) == (0, f"in {uri}\n")


def test_what_pflux_cannot_reach_is_refused() -> None:
    proc = console("proxy", "ssh://host/tmp/socket", "true")
    assert (proc.returncode, proc.stderr) == (
        1,
        "pflux-proxy: ERROR: unsupported instance URI 'ssh://host/tmp/socket':"
        " only local:// is supported\n",
    )
    proc = console("proxy", "local:///nonexistent/socket", "true")
    assert (proc.returncode, proc.stderr) == (
        1,
        "pflux-proxy: ERROR: cannot connect to the instance at /nonexistent/socket:"
        " No such file or directory\n",
    )
