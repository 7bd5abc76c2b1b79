"""flux.resource against a live instance, in a clean interpreter: ``resource_list``'s
sets and filter, and ``resource_status``'s ranks by state with drain reasons."""

from __future__ import annotations

import socket

from support.instance import PFLUX, LiveInstance, ok
from support.shim import flux_output


def test_resource_list_gives_resource_sets_by_state_and_filters_them(
    instance: LiveInstance,
) -> None:
    out = flux_output(
        """
        import flux
        from flux.resource import resource_list
        r = resource_list(flux.Flux()).get()
        for state in ("all", "up", "free", "allocated", "down"):
            s = r[state]
            print(s.state, s.nnodes, s.ncores, s.ngpus, s.ranks, s.nodelist, s.rlist)
        print(type(r.all.ranks).__name__, type(r.all.nodelist).__name__, r.all.encode()[:12])
        r.filter("1")
        print(r.all.nnodes, r.free.nnodes)
        r = resource_list(flux.Flux()).get()
        r.filter(str(r.all.nodelist))
        print(r.all.nnodes)
        """,
        instance.uri,
    )
    host = socket.gethostname()
    assert out.splitlines() == [
        f"all 1 4 0 0 {host} rank0/core[0-3]",
        f"up 1 4 0 0 {host} rank0/core[0-3]",
        f"free 1 4 0 0 {host} rank0/core[0-3]",
        "allocated 0 0 0   ",
        "down 0 0 0   ",
        'IDset Hostlist {"version":1',
        "0 0",
        "1",
    ]


def test_resource_status_shows_drained_ranks_with_their_reason(instance: LiveInstance) -> None:
    code = """
        import flux
        from flux.resource import resource_status
        s = resource_status(flux.Flux()).get()
        print(s.all, s.online, s.offline, s.avail, s.drained, s.draining, s.allocated, sep="|")
        print([(str(d.ranks), d.reason) for d in s.drain_info], s.get_drain_info(0))
        """
    before = flux_output(code, instance.uri).splitlines()
    ok(instance.uri, "resource", "drain", "0", "under", "repair")
    try:
        after = flux_output(code, instance.uri).splitlines()
    finally:
        ok(instance.uri, "resource", "undrain", "0")
    assert before == ["0|0||0|||", "[] None"]
    assert after[0] == "0|0|||0||"
    assert after[1].startswith("[('0', 'under repair')] DrainInfo(ranks=IDset('0'), timestamp=")


def test_resource_journal_gives_the_history_a_sentinel_then_new_events(
    instance: LiveInstance,
) -> None:
    out = flux_output(
        f"""
        import subprocess, flux
        from flux.resource import ResourceJournalConsumer
        consumer = ResourceJournalConsumer(flux.Flux(), include_sentinel=True).start()
        history = []
        while True:
            event = consumer.poll(60)
            if event.is_empty():
                print("sentinel", str(event).endswith("End of historical data stream"))
                break
            history.append((event.name, event.R["version"] if event.R else None))
        print(history[:2], set(name for name, _ in history[2:]) <= set(["drain", "undrain"]))
        subprocess.run(
            [{str(PFLUX)!r}, "resource", "drain", "--uri", {instance.uri!r}, "0", "journal"],
            check=True,
        )
        event = consumer.poll(60)
        print(event.name, event.context["reason"], str(event).split()[1:3])
        consumer.stop()
        print(consumer.poll(60))
        """,
        instance.uri,
    )
    ok(instance.uri, "resource", "undrain", "0")
    lines = out.splitlines()
    assert lines[:2] == ["sentinel True", "[('restart', None), ('resource-define', 1)] True"]
    assert lines[-2].startswith('drain journal [\'drain\', \'{"idset":"0","nodelist":')
    assert lines[-1] == "None"
