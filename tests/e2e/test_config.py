"""``pflux start --config FILE``: a table, key or value no service can use is refused.

The instance must not start with part of its configuration ignored: the error
names the file, the table, the key and the rule, before anything starts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.instance import start_with_config


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[exce]\nkill-timeout = 5\n", "[exce]: unknown table (did you mean [exec]?)"),
        ('[kvs]\nsynk = "full"\n', "[kvs] synk: unknown key (did you mean sync?)"),
        (
            "[sched]\nqueue_depth = 4\n",
            "[sched] queue_depth: unknown key (did you mean queue-depth?)",
        ),
        ("[queue.batch]\n", "[queue]: unknown table (did you mean [queues]?)"),
        ("[queues.batch]\nrequire = []\n", "[queues.batch] require: unknown key (did you mean"),
        ('[job-manager.prolg]\ncommand = ["true"]\n', "[job-manager] prolg: unknown key"),
        ('[kvs]\nsync = "always"\n', "[kvs] sync: must be one of off, normal, full, got"),
        ("[kvs]\njournal_mode = 1\n", "[kvs] journal_mode: must be one of wal, memory, got 1"),
        ('[exec]\nkill-timeout = "soon"\n', "[exec] kill-timeout: "),
        ('[exec]\nterm-signal = "SIGNOPE"\n', "[exec] term-signal: not a signal: 'SIGNOPE'"),
        ("[sched]\nqueue-depth = -1\n", "[sched] queue-depth: must be an integer >= 0, got -1"),
        ('[resource]\ncores = "4"\n', "[resource] cores: must be an integer >= 0, got '4'"),
        ("[[resource.config]]\nhosts = 3\n", "[resource.config[0]] hosts: must be a hostlist"),
        ("kvs = 1\n", "[kvs]: must be a table, got 1"),
        ("[access]\nallow-root-owner = 1\n", "[access] allow-root-owner: must be true or false"),
        ('[access]\nallow-guest-user = "yes"\n', "[access] allow-guest-user: must be true or"),
        ("[access]\nallow-guest = false\n", "[access] allow-guest: unknown key (did you mean"),
    ],
)
def test_the_error_names_the_file_table_key_and_rule(
    tmp_path: Path, toml: str, message: str
) -> None:
    proc = start_with_config(tmp_path, toml)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"pflux-start: ERROR: {tmp_path}/instance.toml: {message}"), (
        proc.stderr
    )


def test_a_known_configuration_starts(tmp_path: Path) -> None:
    proc = start_with_config(
        tmp_path,
        '[kvs]\nsync = "full"\n[exec]\nkill-timeout = "2s"\n[access]\nallow-root-owner = false\n',
    )
    assert (proc.returncode, proc.stderr) == (0, "")
