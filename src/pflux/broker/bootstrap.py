"""Where a broker stands in a multi-node instance, learned from what its machine offers.

Each ``from_*`` function returns the broker's :class:`~pflux.broker.boot.Boot`;
:func:`detect` says which applies, in flux-core's order of preference:

1. ``config``: a ``[bootstrap]`` table with ``hosts`` (flux-config-bootstrap(5)),
   for brokers started on fixed hosts (a system instance): :func:`from_config`.
2. ``pmi``: a launcher speaking the PMI-1 simple wire protocol (``PMI_FD``,
   ``PMI_RANK``, ``PMI_SIZE`` with a size over 1: MPICH's mpiexec, flux-core, a pflux
   job): :func:`from_pmi`, each broker with a key pair of its own.
3. ``slurm``: a step of ``srun -N N --ntasks-per-node=1`` (``SLURM_STEP_NODELIST``
   and ``SLURM_PROCID``, over one node): :func:`from_slurm`.
4. ``single``: one broker alone.

Everything here is pure but :func:`from_pmi` (it talks to the PMI server through
its client) and :func:`interface_address` (it asks the system for an address).
The instance certificate these read is loaded by the caller
(``pflux.broker.cert.load_cert``) from ``--curve-cert`` or ``[bootstrap]
curve_cert`` (:func:`config_cert_path`).
"""

from __future__ import annotations

import string
import zlib
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pflux.broker.boot import Boot, BootstrapError, Cert
from pflux.errors import ConfigError, HostlistError
from pflux.spec import hostlist

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pflux.broker.pmiclient import PMIClient

__all__ = [
    "CONFIG_KEYS",
    "DEFAULT_FANOUT",
    "Source",
    "config_cert_path",
    "detect",
    "from_config",
    "from_pmi",
    "from_slurm",
    "interface_address",
    "slurm_port",
]

Source = Literal["config", "pmi", "slurm", "single"]
DEFAULT_FANOUT = 2  # flux-core's tbon.fanout
CONFIG_KEYS = ("curve_cert", "default_port", "default_bind", "default_connect", "hosts",
               "enable_ipv6")  # fmt: skip
"""The keys of ``[bootstrap]``, flux-config-bootstrap(5)'s."""
_HOST_KEYS = ("host", "bind", "connect", "parent")
_LABEL = frozenset(string.ascii_letters + string.digits + "-")
_PORTS = range(0, 65536)
_DERIVED_PORTS = (49152, 16384)  # first port and count: the IANA dynamic range
PMI_KEY = "pflux.bizcard.{rank}"
"""The PMI key under which rank ``rank`` puts ``ENDPOINT,PUBLIC-KEY,HOSTNAME``."""


def detect(env: Mapping[str, str], config: Mapping[str, Any]) -> Source:
    """Which source tells this broker its place: see the module's docstring.

    ``env`` is the broker's environment, ``config`` the instance's configuration.
    BootstrapError if ``PMI_SIZE`` or ``SLURM_STEP_NUM_NODES`` is set but no number.
    """
    table = config.get("bootstrap")
    if isinstance(table, Mapping) and table.get("hosts"):
        return "config"
    pmi = all(k in env for k in ("PMI_FD", "PMI_RANK", "PMI_SIZE"))
    if pmi and _env_int(env, "PMI_SIZE", "PMI") > 1:
        return "pmi"
    if "SLURM_STEP_NODELIST" in env and "SLURM_PROCID" in env:
        nodes = env.get("SLURM_STEP_NUM_NODES")
        if nodes is not None and _env_int(env, "SLURM_STEP_NUM_NODES", "Slurm") > 1:
            return "slurm"
    return "single"


def _env_int(env: Mapping[str, str], name: str, source: str, low: int = 0) -> int:
    text = env.get(name, "")
    if not (text.isascii() and text.isdigit()) or int(text) < low:
        raise BootstrapError(f"{source}: {name}={text!r}: not an integer >= {low}")
    return int(text)


def _fanout(fanout: int) -> int:
    if fanout < 1:
        raise BootstrapError(f"tbon.fanout: must be 1 or more, got {fanout}")
    return fanout


def _tree(rank: int, size: int, fanout: int) -> Boot:
    """A Boot with only the tree's shape, to ask it for ``parent_rank``/``children``."""
    return Boot(rank, size, (), fanout, None, None, Cert(""), "", frozenset())


# -- [bootstrap] -------------------------------------------------------------------


def config_cert_path(table: Mapping[str, Any]) -> str | None:
    """``[bootstrap] curve_cert``, checked to be a string; None if absent."""
    path = table.get("curve_cert")
    if path is not None and (not isinstance(path, str) or not path):
        raise ConfigError("bootstrap", "curve_cert", f"must be a file name, got {path!r}")
    return path


def from_config(
    table: Mapping[str, Any], hostname: str, cert: Cert | None, fanout: int | None = None
) -> Boot:
    """This broker's place from a ``[bootstrap]`` table (flux-config-bootstrap(5)).

    ``hosts`` lists the instance's hosts in rank order, each entry's ``host`` an
    RFC 29 hostlist; a host named again by a later entry takes from it the keys
    it lacks (a key given twice with two values is refused). Its ``bind`` and
    ``connect`` default to ``default_bind``/``default_connect``, with ``%h`` the
    host, ``%p`` ``default_port``, ``%%`` a ``%``. This broker is the rank of
    ``hostname``. ``cert`` is the certificate ``curve_cert`` names, loaded by the
    caller; an instance of more than one host needs one. ``fanout`` is the
    tree's (``-S tbon.fanout``); None gives flux-core's default for a config,
    every rank a child of rank 0. ConfigError names the key and the rule.
    """
    port = _check_keys(table)
    defaults = {k: _template(table, k) for k in ("default_bind", "default_connect")}
    entries = _host_entries(table.get("hosts"), hostname)
    hosts = list(entries)
    if hostname not in entries:
        raise ConfigError("bootstrap", "hosts", f"{hostname} not found in hosts")
    rank, size = hosts.index(hostname), len(hosts)
    if size > 1 and cert is None:
        raise ConfigError("bootstrap", "curve_cert", "must be defined for size > 1")
    tree = _tree(rank, size, max(1, size - 1) if fanout is None else _fanout(fanout))
    uri = {
        which: [_uri(entries[h], which, defaults[f"default_{which}"], port, h) for h in hosts]
        for which in ("bind", "connect")
    }
    bind = None
    if len(tree.children()):
        bind = uri["bind"][rank]
        if bind is None:
            raise ConfigError(
                "bootstrap", "hosts", f"{hostname} (rank {rank}) has children but no bind URI"
            )
    parent = None
    up = tree.parent_rank()
    if up is not None:
        parent = uri["connect"][up]
        if parent is None:
            raise ConfigError(
                "bootstrap", "hosts", f"connect URI is undefined for {hosts[up]} (rank {up})"
            )
    key = cert.public if cert else ""
    return Boot(
        rank=rank,
        size=size,
        hostnames=tuple(hosts),
        fanout=tree.fanout,
        bind=bind,
        parent=parent,
        cert=cert or Cert(""),
        parent_key=key,
        allowed=frozenset([key] if key else []),
    )


def _check_keys(table: Mapping[str, Any]) -> int | None:
    """Refuse an unknown key and a bad scalar value; ``default_port``."""
    if not isinstance(table, Mapping):
        raise ConfigError("bootstrap", None, f"must be a table, got {table!r}")
    for key in table:
        if key not in CONFIG_KEYS:
            raise ConfigError("bootstrap", key, f"unknown key (known: {', '.join(CONFIG_KEYS)})")
    config_cert_path(table)
    if table.get("enable_ipv6", False) is not False:
        if table["enable_ipv6"] is not True:
            raise ConfigError("bootstrap", "enable_ipv6", "must be true or false")
        raise ConfigError("bootstrap", "enable_ipv6", "IPv6 is not supported: pflux binds IPv4")
    port = table.get("default_port")
    if port is not None and (type(port) is not int or port not in _PORTS):
        raise ConfigError("bootstrap", "default_port", f"must be a port 0-65535, got {port!r}")
    return port


def _template(table: Mapping[str, Any], key: str) -> str | None:
    value = table.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError("bootstrap", key, f"must be a string, got {value!r}")
    return value


def _host_entries(hosts: Any, hostname: str) -> dict[str, dict[str, str]]:
    """Each host's entry, in rank order, hostlists expanded and repeats merged."""
    if hosts is None or hosts == []:
        return {hostname: {}}  # flux-core's: no hosts, a single broker
    if not isinstance(hosts, list):
        raise ConfigError("bootstrap", "hosts", "must be an array of tables")
    entries: dict[str, dict[str, str]] = {}
    for index, entry in enumerate(hosts):
        where = f"hosts[{index}]"
        if not isinstance(entry, dict):
            raise ConfigError("bootstrap", where, f"must be a table, got {entry!r}")
        for key, value in entry.items():
            if key not in _HOST_KEYS:
                raise ConfigError("bootstrap", f"{where}.{key}", "unknown key (known: host, bind,"
                                  " connect)")  # fmt: skip
            if not isinstance(value, str):
                raise ConfigError("bootstrap", f"{where}.{key}", f"must be a string, got {value!r}")
        if "parent" in entry:
            raise ConfigError(
                "bootstrap", f"{where}.parent", "not supported: pflux's tree is set by tbon.fanout"
            )
        if "host" not in entry:
            raise ConfigError("bootstrap", where, "has no host")
        for host in _expand(entry["host"], where):
            _merge(entries.setdefault(host, {}), entry, host, where)
    return entries


def _expand(text: str, where: str) -> list[str]:
    try:
        names = hostlist.decode(text)
    except HostlistError as exc:
        raise ConfigError("bootstrap", f"{where}.host", str(exc)) from None
    for name in names:
        problem = _domain_problem(name)
        if problem:
            raise ConfigError("bootstrap", f"{where}.host", f"{name!r}: {problem}")
    return names


def _domain_problem(name: str) -> str | None:
    """Why ``name`` is no RFC 1035 domain name (as flux-core checks a host); None if it is."""
    if not 1 <= len(name) <= 253:
        return "a host name must be 1-253 characters"
    for label in name.split("."):
        if not 1 <= len(label) <= 63:
            return "each dot-separated label must be 1-63 characters"
        if label[0] == "-" or label[-1] == "-":
            return "a label must not start or end with '-'"
        if not set(label) <= _LABEL:
            return "a label may hold only letters, digits and '-'"
    return None


def _merge(into: dict[str, str], entry: Mapping[str, str], host: str, where: str) -> None:
    for key in ("bind", "connect"):
        if key in entry:
            if key in into and into[key] != entry[key]:
                raise ConfigError(
                    "bootstrap",
                    f"{where}.{key}",
                    f"{host} has {key} {into[key]!r} from an earlier entry",
                )
            into[key] = entry[key]


def _uri(entry: Mapping[str, str], which: str, default: str | None, port: int | None,
         host: str) -> str | None:  # fmt: skip
    template = entry.get(which, default)
    if template is None:
        return None
    key = f"{which} of {host}"
    uri = _substitute(template, host, port, key)
    problem = _zmq_uri_problem(uri)
    if problem:
        raise ConfigError("bootstrap", key, f"{uri}: {problem}")
    return uri


def _substitute(template: str, host: str, port: int | None, key: str) -> str:
    """``template`` with ``%h`` the host, ``%p`` the port and ``%%`` a ``%``."""
    out: list[str] = []
    chars = iter(template)
    for char in chars:
        if char != "%":
            out.append(char)
            continue
        token = next(chars, "")
        if token == "h":
            out.append(host)
        elif token == "p":
            if port is None:
                raise ConfigError("bootstrap", key, f"{template}: %p but no default_port")
            out.append(str(port))
        elif token == "%":
            out.append("%")
        else:
            out.append("%" + token)
    return "".join(out)


def _zmq_uri_problem(uri: str) -> str | None:
    """Why ``uri`` is no endpoint a broker can bind or connect to at a known port."""
    scheme, sep, address = uri.partition("://")
    if not sep:
        return "has no URI scheme"
    if scheme not in ("tcp", "ipc"):
        return "URI scheme must be tcp or ipc"
    if not address:
        return "address is empty"
    if ":*" in address:
        return "a port wildcard is not allowed: peers must know the port"
    if scheme == "ipc" and len(address.encode()) > 107:
        return "socket path must not exceed 107 bytes"
    return None


# -- Slurm -------------------------------------------------------------------------


def slurm_port(env: Mapping[str, str], port: int | None) -> int:
    """The step's TCP port: the first of ``SLURM_STEP_RESV_PORTS`` (``srun
    --resv-ports``), else ``port``, else one derived from the job and step ids
    (49152 + CRC-32 of ``JOBID.STEPID`` mod 16384: every broker of the step
    computes the same, and two steps on a node rarely do)."""
    reserved = env.get("SLURM_STEP_RESV_PORTS")
    if reserved:
        first = reserved.replace("-", ",").split(",")[0]
        if not (first.isascii() and first.isdigit()) or int(first) not in _PORTS:
            raise BootstrapError(f"Slurm: SLURM_STEP_RESV_PORTS={reserved!r}: not a port range")
        return int(first)
    if port is not None:
        if port not in _PORTS:
            raise BootstrapError(f"Slurm: port {port}: must be 0-65535")
        return port
    job = _env_int(env, "SLURM_JOB_ID", "Slurm")
    step = env.get("SLURM_STEP_ID", "0")
    base, count = _DERIVED_PORTS
    return base + zlib.crc32(f"{job}.{step}".encode()) % count


def from_slurm(
    env: Mapping[str, str], cert: Cert | None, port: int | None = None,
    fanout: int = DEFAULT_FANOUT,
) -> Boot:  # fmt: skip
    """This broker's place in a Slurm step of one task per node.

    Rank: ``SLURM_PROCID`` (else ``SLURM_NODEID``); size: ``SLURM_STEP_NUM_NODES``
    (else ``SLURM_NNODES``); hosts: ``SLURM_STEP_NODELIST`` (else
    ``SLURM_JOB_NODELIST``), which must name as many; ``SLURM_STEP_NUM_TASKS``
    (else ``SLURM_NTASKS``), when set, must equal the nodes, and
    ``SLURMD_NODENAME``, when set, this rank's host. A broker with children binds
    ``tcp://*:PORT``; a child connects to ``tcp://PARENT-HOST:PORT``, the port
    from :func:`slurm_port`. ``cert`` is the instance certificate every node
    reads (a file on a shared file system); the tree is k-ary of ``fanout``.
    """
    size = _env_int(env, _first_set(env, "SLURM_STEP_NUM_NODES", "SLURM_NNODES"), "Slurm", 1)
    var = _first_set(env, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST")
    try:
        hosts = hostlist.decode(env.get(var, ""))
    except HostlistError as exc:
        raise BootstrapError(f"Slurm: {var}: {exc}") from None
    if len(hosts) != size:
        raise BootstrapError(f"Slurm: {var}={env[var]!r} names {len(hosts)} hosts, not {size}")
    tasks_var = _first_set(env, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")
    if tasks_var in env and _env_int(env, tasks_var, "Slurm") != size:
        raise BootstrapError(
            f"Slurm: {env[tasks_var]} tasks on {size} nodes: pflux start needs one task"
            " per node (srun --ntasks-per-node=1)"
        )
    rank_var = _first_set(env, "SLURM_PROCID", "SLURM_NODEID")
    rank = _env_int(env, rank_var, "Slurm")
    if rank >= size:
        raise BootstrapError(f"Slurm: {rank_var}={rank} is not below the {size} nodes")
    node = env.get("SLURMD_NODENAME")
    if node is not None and node != hosts[rank]:
        raise BootstrapError(
            f"Slurm: task {rank} runs on {node}, not on {hosts[rank]} ({var}'s host {rank}):"
            " pflux start needs one task per node, in node order"
        )
    if size > 1 and cert is None:
        raise BootstrapError(
            f"Slurm: an instance of {size} nodes needs the instance certificate"
            " (--curve-cert=FILE or [bootstrap] curve_cert; make one with pflux keygen)"
        )
    tree = _tree(rank, size, _fanout(fanout))
    tcp = slurm_port(env, port)
    up = tree.parent_rank()
    key = cert.public if cert else ""
    return Boot(
        rank=rank,
        size=size,
        hostnames=tuple(hosts),
        fanout=fanout,
        bind=f"tcp://*:{tcp}" if len(tree.children()) else None,
        parent=None if up is None else f"tcp://{hosts[up]}:{tcp}",
        cert=cert or Cert(""),
        parent_key=key,
        allowed=frozenset([key] if key else []),
    )


def _first_set(env: Mapping[str, str], name: str, fallback: str) -> str:
    return name if name in env else fallback


# -- PMI-1 -------------------------------------------------------------------------


def interface_address(hostname: str) -> str:
    """The IPv4 address a broker binds to under PMI, for its peers to connect to.

    ``hostname``'s address if it resolves to one that is not loopback; else the
    address this host sends from on its default route (flux-core's default,
    ``tbon.interface-hint=default-route``); else loopback (all on this host).
    """
    import socket

    try:
        address = socket.gethostbyname(hostname)
    except OSError:
        address = "127.0.0.1"
    if not address.startswith("127."):
        return address
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: no packet is sent by a UDP connect
            routed: str = probe.getsockname()[0]
        except OSError:
            return address
    return routed


def from_pmi(
    client: PMIClient,
    bind: Callable[[str], str],
    hostname: str,
    fanout: int = DEFAULT_FANOUT,
    address: str | None = None,
) -> Boot:
    """This broker's place among the PMI-1 job's tasks, one broker per task.

    Each broker makes its own key pair. One with children calls ``bind`` with
    ``tcp://ADDRESS:*`` (``address`` defaults to :func:`interface_address`); the
    overlay binds there and returns the endpoint it got, and must refuse every
    CURVE key until it is given the Boot's ``allowed``. Each puts
    ``ENDPOINT,PUBLIC-KEY,HOSTNAME`` under :data:`PMI_KEY`, enters the barrier,
    reads every rank's (for the hostnames), keeps its parent's endpoint and key
    and its children's keys, and enters a second barrier, so that no child
    connects before its parent knows its key. ``client`` is initialized and not
    finalized here.
    """
    rank, size = client.rank, client.size
    tree = _tree(rank, size, _fanout(fanout))
    cert = _keypair()
    endpoint = ""
    if len(tree.children()):
        endpoint = bind(f"tcp://{address or interface_address(hostname)}:*")
    client.put(PMI_KEY.format(rank=rank), f"{endpoint},{cert.public},{hostname}")
    client.barrier()
    cards = [_card(client, r) for r in range(size)]
    client.barrier()
    up = tree.parent_rank()
    if up is not None and not cards[up][0]:
        raise BootstrapError(f"PMI: rank {up}, this broker's parent, put no endpoint")
    return Boot(
        rank=rank,
        size=size,
        hostnames=tuple(card[2] for card in cards),
        fanout=fanout,
        bind=endpoint or None,
        parent=None if up is None else cards[up][0],
        cert=cert,
        parent_key="" if up is None else cards[up][1],
        allowed=frozenset(cards[r][1] for r in tree.children()),
    )


def _keypair() -> Cert:
    from pflux.broker.cert import new_cert

    return new_cert()


def _card(client: PMIClient, rank: int) -> tuple[str, str, str]:
    key = PMI_KEY.format(rank=rank)
    value = client.get(key)
    parts = value.split(",")
    if len(parts) != 3 or not parts[1] or not parts[2]:
        raise BootstrapError(f"PMI: {key}={value!r}: not ENDPOINT,PUBLIC-KEY,HOSTNAME")
    return parts[0], parts[1], parts[2]
