"""Bootstrap: a broker's place from [bootstrap], Slurm's environment, and which source applies."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.broker import bootstrap
from pflux.broker.boot import Boot, BootstrapError, Cert
from pflux.broker.bootstrap import detect, from_config, from_slurm, slurm_port
from pflux.broker.cert import new_cert
from pflux.errors import ConfigError

CERT = new_cert()


# -- [bootstrap] -------------------------------------------------------------------


def test_flux_two_node_example() -> None:
    table = {
        "curve_cert": "/etc/flux/system/curve.cert",
        "hosts": [
            {"host": "foo", "bind": "tcp://eth0:9001", "connect": "tcp://10.0.1.1:9001"},
            {"host": "bar"},
        ],
    }
    foo = from_config(table, "foo", CERT)
    bar = from_config(table, "bar", CERT)
    assert (foo.rank, foo.size, foo.hostnames) == (0, 2, ("foo", "bar"))
    assert (foo.bind, foo.parent) == ("tcp://eth0:9001", None)
    assert (bar.rank, bar.bind, bar.parent) == (1, None, "tcp://10.0.1.1:9001")
    assert bar.cert == CERT
    assert bar.parent_key == CERT.public
    assert foo.allowed == {CERT.public}


def test_defaults_with_host_and_port_tokens_and_a_flat_tree() -> None:
    table = {
        "default_port": 8050,
        "default_bind": "tcp://en0:%p",
        "default_connect": "tcp://e%h:%p",
        "hosts": [
            {"host": "test0", "bind": "tcp://en4:9001", "connect": "tcp://test-mgmt:9001"},
            {"host": "test[1-255]"},
        ],
    }
    last = from_config(table, "test255", CERT)
    assert (last.rank, last.size, last.parent) == (255, 256, "tcp://test-mgmt:9001")
    assert last.parent_rank() == 0  # flux-core's custom topology: all under rank 0
    root = from_config(table, "test0", CERT)
    assert list(root.children()) == list(range(1, 256))
    assert root.bind == "tcp://en4:9001"


def test_a_fanout_gives_a_k_ary_tree_with_each_parents_connect_uri() -> None:
    table = {
        "default_port": 9,
        "default_bind": "tcp://*:%p",
        "default_connect": "tcp://%h:%p",
        "hosts": [{"host": "n[0-6]"}],
    }
    boots = [from_config(table, f"n{r}", CERT, fanout=2) for r in range(7)]
    assert [b.parent for b in boots] == [None] + [f"tcp://n{(r - 1) // 2}:9" for r in range(1, 7)]
    assert [b.bind for b in boots] == ["tcp://*:9"] * 3 + [None] * 4


@given(st.integers(1, 40), st.integers(0, 39), st.integers(1, 5) | st.none())
def test_each_host_of_a_hostlist_is_its_rank_and_finds_its_parent(
    size: int, index: int, fanout: int | None
) -> None:
    index %= size
    table = {
        "default_port": 8050,
        "default_bind": "tcp://*:%p",
        "default_connect": "tcp://%h.mgmt:%p",
        "hosts": [{"host": f"node[00-{size - 1:02}]"}],
    }
    boot = from_config(table, f"node{index:02}", CERT, fanout)
    assert (boot.rank, boot.size) == (index, size)
    assert boot.hostnames[index] == f"node{index:02}"
    up = boot.parent_rank()
    assert boot.parent == (None if up is None else f"tcp://node{up:02}.mgmt:8050")
    assert (boot.bind is not None) == bool(len(boot.children()))


def test_a_host_named_again_takes_the_keys_it_lacks() -> None:
    table = {
        "default_connect": "tcp://%h:1",
        "hosts": [{"host": "a[0-3]"}, {"host": "a0", "bind": "tcp://*:1"}],
    }
    assert from_config(table, "a0", CERT).bind == "tcp://*:1"
    assert from_config(table, "a3", CERT).size == 4


def test_no_hosts_is_a_single_broker() -> None:
    boot = from_config({"curve_cert": "/x"}, "me", None)
    assert (boot.rank, boot.size, boot.hostnames, boot.bind, boot.parent) == (
        0,
        1,
        ("me",),
        None,
        None,
    )


def test_percent_tokens() -> None:
    table = {"default_port": 5, "default_connect": "tcp://%h:%p%%%x", "hosts": [{"host": "a,b"}]}
    assert from_config(table, "b", CERT).parent == "tcp://a:5%%x"


@given(st.text(string.ascii_letters + "/:.%*hp", max_size=30))
def test_substitution_replaces_tokens_only(template: str) -> None:
    out = bootstrap._substitute(template, "HOST", 77, "k")
    plain = template.replace("%%", "\0").replace("%h", "HOST").replace("%p", "77")
    assert out == plain.replace("\0", "%")


BAD_CONFIGS: list[tuple[dict[str, Any], str]] = [
    ({"hosts": [{"host": "x"}], "bogus": 1}, "[bootstrap] bogus: unknown key"),
    ({"hosts": [{"host": "x"}], "enable_ipv6": True}, "[bootstrap] enable_ipv6: IPv6 is not"),
    ({"hosts": [{"host": "x"}], "enable_ipv6": "yes"}, "enable_ipv6: must be true or false"),
    ({"hosts": [{"host": "x"}], "default_port": 70000}, "default_port: must be a port 0-65535"),
    ({"hosts": [{"host": "x"}], "default_port": True}, "default_port: must be a port"),
    ({"hosts": [{"host": "x"}], "curve_cert": 3}, "[bootstrap] curve_cert: must be a file name"),
    ({"hosts": [{"host": "x"}], "default_bind": 3}, "[bootstrap] default_bind: must be a string"),
    ({"hosts": {"host": "x"}}, "[bootstrap] hosts: must be an array of tables"),
    ({"hosts": ["x"]}, "[bootstrap] hosts[0]: must be a table"),
    ({"hosts": [{"bind": "tcp://*:1"}]}, "[bootstrap] hosts[0]: has no host"),
    ({"hosts": [{"host": "x", "port": "1"}]}, "[bootstrap] hosts[0].port: unknown key"),
    ({"hosts": [{"host": 3}]}, "[bootstrap] hosts[0].host: must be a string"),
    ({"hosts": [{"host": "x[1-"}]}, "[bootstrap] hosts[0].host: hostlist"),
    ({"hosts": [{"host": "x_y"}]}, "'x_y': a label may hold only letters, digits and '-'"),
    ({"hosts": [{"host": "x", "parent": "y"}]}, "hosts[0].parent: not supported"),
    ({"hosts": [{"host": "y"}]}, "[bootstrap] hosts: x not found in hosts"),
    (
        {"hosts": [{"host": "x", "bind": "tcp://*:1"}, {"host": "x", "bind": "tcp://*:2"}]},
        "[bootstrap] hosts[1].bind: x has bind 'tcp://*:1' from an earlier entry",
    ),
    ({"hosts": [{"host": "x,y"}]}, "[bootstrap] hosts: x (rank 0) has children but no bind URI"),
    (
        {"hosts": [{"host": "y", "bind": "tcp://*:1"}, {"host": "x"}]},
        "connect URI is undefined for y (rank 0)",
    ),
    ({"hosts": [{"host": "x", "bind": "eth0:1"}]}, "bind of x: eth0:1: has no URI scheme"),
    ({"hosts": [{"host": "x", "bind": "udp://a:1"}]}, "URI scheme must be tcp or ipc"),
    ({"hosts": [{"host": "x", "bind": "tcp://*:*"}]}, "a port wildcard is not allowed"),
    ({"hosts": [{"host": "x", "bind": "tcp://"}]}, "address is empty"),
    ({"hosts": [{"host": "x", "bind": "tcp://*:%p"}]}, "bind of x: tcp://*:%p: %p but no default"),
]


@pytest.mark.parametrize(("table", "message"), BAD_CONFIGS)
def test_a_bad_bootstrap_table_is_refused_naming_the_key(
    table: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        from_config(table, "x", CERT)
    assert message in str(info.value)


def test_more_than_one_host_needs_a_certificate() -> None:
    table = {
        "default_bind": "tcp://*:1",
        "default_connect": "tcp://%h:1",
        "hosts": [{"host": "x,y"}],
    }
    with pytest.raises(
        ConfigError, match=r"\[bootstrap\] curve_cert: must be defined for size > 1"
    ):
        from_config(table, "y", None)


def test_a_fanout_below_one_is_refused() -> None:
    table = {"hosts": [{"host": "x"}]}
    with pytest.raises(BootstrapError, match=r"tbon\.fanout: must be 1 or more, got 0"):
        from_config(table, "x", CERT, fanout=0)
    with pytest.raises(BootstrapError, match=r"tbon\.fanout: must be 1 or more, got 0"):
        from_slurm(srun_env(0), CERT, fanout=0)


def test_the_instance_knows_the_bootstrap_keys(tmp_path: Path) -> None:
    from pflux.broker.instance import Instance

    known = {"bootstrap": {key: None for key in bootstrap.CONFIG_KEYS}}
    Instance(tmp_path / "s", config=known)._services()
    with pytest.raises(ConfigError, match=r"\[bootstrap\] host: unknown key \(did you mean hosts"):
        Instance(tmp_path / "s", config={"bootstrap": {"host": []}})._services()


# -- Slurm -------------------------------------------------------------------------


def srun_env(procid: int, nodes: int = 4, **extra: str) -> dict[str, str]:
    """What ``srun -N4 --ntasks-per-node=1`` sets for task ``procid`` of step 0 of job 4242."""
    env = {
        "SLURM_JOB_ID": "4242",
        "SLURM_JOBID": "4242",
        "SLURM_STEP_ID": "0",
        "SLURM_STEPID": "0",
        "SLURM_PROCID": str(procid),
        "SLURM_LOCALID": "0",
        "SLURM_NODEID": str(procid),
        "SLURM_NNODES": str(nodes),
        "SLURM_JOB_NUM_NODES": str(nodes),
        "SLURM_STEP_NUM_NODES": str(nodes),
        "SLURM_NTASKS": str(nodes),
        "SLURM_NPROCS": str(nodes),
        "SLURM_STEP_NUM_TASKS": str(nodes),
        "SLURM_JOB_NODELIST": f"node[0-{nodes - 1}]",
        "SLURM_NODELIST": f"node[0-{nodes - 1}]",
        "SLURM_STEP_NODELIST": f"node[0-{nodes - 1}]",
        "SLURM_TASKS_PER_NODE": f"1(x{nodes})",
        "SLURM_STEP_TASKS_PER_NODE": f"1(x{nodes})",
        "SLURMD_NODENAME": f"node{procid}",
        "SLURM_CLUSTER_NAME": "cluster",
    }
    env.update(extra)
    return env


def test_srun_four_nodes_one_task_each() -> None:
    boots = [from_slurm(srun_env(r), CERT) for r in range(4)]
    port = boots[0].bind.rpartition(":")[2] if boots[0].bind else ""
    assert all(slurm_port(srun_env(r), None) == int(port) for r in range(4))
    assert [b.rank for b in boots] == [0, 1, 2, 3]
    assert {b.size for b in boots} == {4}
    assert {b.hostnames for b in boots} == {("node0", "node1", "node2", "node3")}
    assert [b.parent_rank() for b in boots] == [None, 0, 0, 1]
    assert [list(b.children()) for b in boots] == [[1, 2], [3], [], []]
    assert [b.bind for b in boots] == [f"tcp://*:{port}"] * 2 + [None] * 2
    assert [b.parent for b in boots] == [
        None,
        f"tcp://node0:{port}",
        f"tcp://node0:{port}",
        f"tcp://node1:{port}",
    ]
    assert all(b.cert == CERT and b.parent_key == CERT.public for b in boots)
    assert all(b.allowed == {CERT.public} for b in boots)
    assert 49152 <= int(port) < 65536


def test_the_port_a_reserved_one_else_the_given_else_the_job_and_step() -> None:
    assert slurm_port(srun_env(0, SLURM_STEP_RESV_PORTS="12000-12003"), 99) == 12000
    assert slurm_port(srun_env(0, SLURM_STEP_RESV_PORTS="12005,12001"), None) == 12005
    assert slurm_port(srun_env(0), 7777) == 7777
    step1 = srun_env(0, SLURM_STEP_ID="1")
    assert slurm_port(step1, None) != slurm_port(srun_env(0), None)
    assert from_slurm(srun_env(1, SLURM_STEP_RESV_PORTS="12000-12003"), CERT).parent == (
        "tcp://node0:12000"
    )


def test_the_fallback_variables_and_a_fanout() -> None:
    env = srun_env(3)
    for name in (
        "SLURM_PROCID",
        "SLURM_STEP_NUM_NODES",
        "SLURM_STEP_NODELIST",
        "SLURM_STEP_NUM_TASKS",
    ):
        del env[name]
    boot = from_slurm(env, CERT, fanout=3)
    assert (boot.rank, boot.size, boot.parent_rank()) == (3, 4, 0)


@given(st.integers(1, 64), st.integers(0, 63), st.integers(1, 8))
def test_every_slurm_rank_connects_to_its_parents_host(
    nodes: int, procid: int, fanout: int
) -> None:
    procid %= nodes
    boot = from_slurm(srun_env(procid, nodes=nodes), CERT, fanout=fanout)
    assert (boot.rank, boot.size, boot.fanout) == (procid, nodes, fanout)
    assert boot.hostnames == tuple(f"node{r}" for r in range(nodes))
    port = slurm_port(srun_env(procid, nodes=nodes), None)
    up = boot.parent_rank()
    assert boot.parent == (None if up is None else f"tcp://node{up}:{port}")
    assert boot.bind == (f"tcp://*:{port}" if len(boot.children()) else None)


SLURM_ERRORS: list[tuple[dict[str, str], str]] = [
    (
        {"SLURM_STEP_NUM_TASKS": "8", "SLURM_STEP_TASKS_PER_NODE": "2(x4)"},
        "Slurm: 8 tasks on 4 nodes: pflux start needs one task per node (srun --ntasks-per-node=1)",
    ),
    ({"SLURMD_NODENAME": "node3"}, "Slurm: task 1 runs on node3, not on node1"),
    ({"SLURM_STEP_NODELIST": "node[0-2]"}, "SLURM_STEP_NODELIST='node[0-2]' names 3 hosts, not 4"),
    ({"SLURM_STEP_NODELIST": "node[0-"}, "Slurm: SLURM_STEP_NODELIST: hostlist"),
    ({"SLURM_PROCID": "9"}, "Slurm: SLURM_PROCID=9 is not below the 4 nodes"),
    ({"SLURM_PROCID": "x"}, "Slurm: SLURM_PROCID='x': not an integer >= 0"),
    ({"SLURM_STEP_NUM_NODES": "0"}, "Slurm: SLURM_STEP_NUM_NODES='0': not an integer >= 1"),
    ({"SLURM_STEP_RESV_PORTS": "a-b"}, "SLURM_STEP_RESV_PORTS='a-b': not a port range"),
]


@pytest.mark.parametrize(("change", "message"), SLURM_ERRORS)
def test_a_slurm_step_pflux_cannot_use_is_refused(change: dict[str, str], message: str) -> None:
    with pytest.raises(BootstrapError) as info:
        from_slurm(srun_env(1, **change), CERT)
    assert message in str(info.value)


def test_slurm_needs_the_instance_certificate() -> None:
    with pytest.raises(BootstrapError, match=r"needs the instance certificate \(--curve-cert=FILE"):
        from_slurm(srun_env(1), None)
    assert from_slurm(srun_env(0, nodes=1), None).size == 1


# -- which source ------------------------------------------------------------------

WORDS = st.sampled_from(["0", "1", "2", "4", "node[0-3]", "x", ""])
NAMES = st.sampled_from(
    ["PMI_FD", "PMI_RANK", "PMI_SIZE", "SLURM_STEP_NODELIST", "SLURM_PROCID",
     "SLURM_STEP_NUM_NODES", "HOME"]
)  # fmt: skip


def _expected(env: dict[str, str], config: dict[str, Any]) -> str | None:
    """The rule, stated independently: the source, or None where a number is malformed."""
    if config.get("bootstrap", {}).get("hosts"):
        return "config"
    if {"PMI_FD", "PMI_RANK", "PMI_SIZE"} <= env.keys():
        if not env["PMI_SIZE"].isdigit():
            return None
        if int(env["PMI_SIZE"]) > 1:
            return "pmi"
    if {"SLURM_STEP_NODELIST", "SLURM_PROCID"} <= env.keys() and "SLURM_STEP_NUM_NODES" in env:
        if not env["SLURM_STEP_NUM_NODES"].isdigit():
            return None
        if int(env["SLURM_STEP_NUM_NODES"]) > 1:
            return "slurm"
    return "single"


CONFIGS = st.sampled_from(
    [{}, {"bootstrap": {"curve_cert": "c"}}, {"bootstrap": {"hosts": [{"host": "a"}]}}]
)


@given(st.dictionaries(NAMES, WORDS), CONFIGS)
def test_detect_follows_the_order_config_pmi_slurm_single(
    env: dict[str, str], config: dict[str, Any]
) -> None:
    want = _expected(env, config)
    if want is None:
        with pytest.raises(BootstrapError, match="not an integer"):
            detect(env, config)
    else:
        assert detect(env, config) == want


def test_detect_examples() -> None:
    assert detect(srun_env(0), {}) == "slurm"
    assert detect(srun_env(0, nodes=1), {}) == "single"
    assert detect({"PMI_FD": "3", "PMI_RANK": "0", "PMI_SIZE": "2", **srun_env(0)}, {}) == "pmi"
    assert detect({"PMI_FD": "3", "PMI_RANK": "0", "PMI_SIZE": "1"}, {}) == "single"
    assert detect(srun_env(0), {"bootstrap": {"hosts": [{"host": "a"}]}}) == "config"
    assert detect(srun_env(0), {"bootstrap": {"curve_cert": "/c"}}) == "slurm"
    assert detect({}, {}) == "single"


def test_a_tree_shape_alone() -> None:
    assert bootstrap._tree(5, 9, 2) == Boot(5, 9, (), 2, None, None, Cert(""), "", frozenset())
