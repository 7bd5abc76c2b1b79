"""flux.Flux's events, services, log, config and watchers against a live instance, in a
clean interpreter, with flux-core's names, arguments and errors."""

from __future__ import annotations

import json
from pathlib import Path

from support.instance import LiveInstance, ok
from support.shim import flux_output


def test_events_reach_subscribers_by_topic_prefix_with_sequence_numbers(
    instance: LiveInstance,
) -> None:
    out = flux_output(
        """
        import errno, flux
        from flux.constants import FLUX_O_NONBLOCK
        pub, sub = flux.Flux(), flux.Flux()
        sub.event_subscribe("shim.ev.")
        sub.event_subscribe(b"shim.other")
        pub.event_send("shim.ev.one", {"n": 1})
        pub.event_send("shim.none", {"n": 0})  # no subscriber
        pub.event_send("shim.otherwise", '{"n": 2}')
        first, second = sub.event_recv(), sub.event_recv()
        print(first.topic, first.payload, first.type_str, second.topic, second.payload_str)
        print(second.matchtag - first.matchtag)  # the sequence numbers
        sub.event_unsubscribe("shim.ev.")
        pub.event_send("shim.ev.two")
        pub.event_send("shim.other.three")
        third = sub.event_recv("shim.other.*")
        print(third.topic, third.payload_str)
        try:
            sub.recv(flags=FLUX_O_NONBLOCK)
        except BlockingIOError as exc:
            print("nothing more", exc.errno == errno.EAGAIN)
        for bad in (None, 42):
            try:
                sub.event_subscribe(bad)
            except TypeError as exc:
                print("TypeError", exc)
            except OSError as exc:
                print("OSError", exc.errno == errno.EINVAL)
        try:
            sub.event_unsubscribe("never.subscribed")
        except FileNotFoundError as exc:
            print("ENOENT", exc.strerror)
        """,
        instance.uri,
    )
    assert out.splitlines() == [
        "shim.ev.one {'n': 1} event shim.otherwise {\"n\": 2}",
        "2",
        "shim.other.three None",
        "nothing more True",
        "OSError True",
        "TypeError Topic must be a string, not <class 'int'>",
        "ENOENT event.unsubscribe: not subscribed to 'never.subscribed'",
    ]


def test_a_message_watcher_takes_events_in_the_reactor(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import flux
        from flux.constants import FLUX_MSGTYPE_EVENT
        h = flux.Flux()
        h.event_subscribe("shim.watch")
        seen = []

        def got(handle, watcher, msg, args):
            seen.append((msg.topic, msg.payload["i"], args))
            if len(seen) == 3:
                watcher.stop()

        w = h.msg_watcher_create(got, FLUX_MSGTYPE_EVENT, "shim.watch.*", args="a")
        w.start()
        for i in range(3):
            h.event_send(f"shim.watch.{i}", {"i": i})
        h.event_send("shim.watchless", {"i": 9})  # subscribed, matched by no watcher: dropped
        h.reactor_run()
        print(seen)
        """,
        instance.uri,
    )
    assert out.strip() == (
        "[('shim.watch.0', 0, 'a'), ('shim.watch.1', 1, 'a'), ('shim.watch.2', 2, 'a')]"
    )


def test_a_script_serves_a_service_it_registers(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import errno, flux
        from flux.constants import FLUX_MSGTYPE_REQUEST
        server, client = flux.Flux(), flux.Flux()
        assert server.service_register("shimsvc").get() is None

        def serve(handle, watcher, msg, args):
            handle.respond(msg, {"echo": msg.payload["n"], "topic": msg.topic})
            if msg.payload["n"] == 2:
                handle.reactor_stop()

        with server.msg_watcher_create(serve, FLUX_MSGTYPE_REQUEST, "shimsvc.echo"):
            unknown = client.rpc("shimsvc.nosuch", {})
            answers = [client.rpc("shimsvc.echo", {"n": n}) for n in range(3)]
            server.reactor_run()
        print([f.get()["echo"] for f in answers], answers[0].get()["topic"])
        try:
            unknown.get()
        except OSError as exc:
            print("unmatched", exc.errno == errno.ENOSYS)
        server.service_unregister("shimsvc").get()
        try:
            client.rpc("shimsvc.echo", {"n": 3}).get()
        except OSError as exc:
            print("gone", exc.errno == errno.ENOSYS)
        for name in ("kvs", "job-list", "broker", "shimsvc.x"):
            try:
                server.service_register(name).get()
            except OSError as exc:
                print(name, exc.errno, exc.strerror)
        try:
            server.service_unregister("shimsvc").get()
        except FileNotFoundError as exc:
            print(exc.strerror)
        """,
        instance.uri,
    )
    assert out.splitlines() == [
        "[0, 1, 2] shimsvc.echo",
        "unmatched True",
        "gone True",
        "kvs 17 service-add: kvs is already provided",
        "job-list 17 service-add: job-list is already provided",
        "broker 17 service-add: broker is already provided",
        "shimsvc.x 22 service-add: service must be a name, got 'shimsvc.x'",
        "service-remove: shimsvc is not provided by you",
    ]


def test_a_request_waits_for_recv_while_no_watcher_runs(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import flux
        from flux.constants import FLUX_MSGTYPE_REQUEST
        server, client = flux.Flux(), flux.Flux()
        server.service_register("shimrecv").get()
        answer = client.rpc("shimrecv.get", {"q": 1})
        msg = server.recv(type_mask=FLUX_MSGTYPE_REQUEST)
        server.respond(msg, '{"a": 2}')
        print(msg.topic, msg.payload, answer.get())
        """,
        instance.uri,
    )
    assert out.strip() == "shimrecv.get {'q': 1} {'a': 2}"


def test_log_reaches_the_ring_and_conf_get_reads_the_config(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import syslog, flux
        h = flux.Flux()
        h.log(syslog.LOG_WARNING, "shim says hello")
        h.log(syslog.LOG_INFO, b"shim says bytes")
        print(type(h.conf_get()).__name__, h.conf_get("no.such.key", default="dflt"))
        """,
        instance.uri,
    )
    assert out.strip() == "dict dflt"
    dmesg = ok(instance.uri, "dmesg")
    assert "warning[0]: shim says hello" in dmesg
    assert "info[0]: shim says bytes" in dmesg


def test_fd_and_signal_watchers_wake_the_reactor(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import os, signal, flux
        from flux.constants import FLUX_POLLIN
        h = flux.Flux()
        rfd, wfd = os.pipe()
        seen = []

        def readable(handle, watcher, fd, revents, args):
            seen.append(("fd", os.read(fd, 10), revents == FLUX_POLLIN))
            watcher.stop()
            os.kill(os.getpid(), signal.SIGUSR1)

        def signalled(handle, watcher, signum, args):
            seen.append(("signal", signum == signal.SIGUSR1))
            watcher.stop()

        h.fd_watcher_create(rfd, readable, events=FLUX_POLLIN).start()
        h.signal_watcher_create(signal.SIGUSR1, signalled).start()
        h.timer_watcher_create(0.0, lambda *a: os.write(wfd, b"x")).start()
        h.reactor_run()
        print(seen, signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL)
        """,
        instance.uri,
    )
    assert out.strip() == "[('fd', b'x', True), ('signal', True)] True"


def test_event_pub_refuses_flags_flux_does_not_define(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import flux
        h = flux.Flux()
        h.event_subscribe("shim.priv")
        print(h.rpc("event.pub", {"topic": "shim.priv", "flags": 0x20}).get()["seq"] > 0)
        print(h.event_recv().flags)
        try:
            h.rpc("event.pub", {"topic": "shim.x", "flags": 1}).get()
        except OSError as exc:
            print(exc.errno, exc.strerror)
        """,
        instance.uri,
    )
    assert out.splitlines() == [
        "True",
        "32",
        "22 event.pub: flags: only FLUX_MSGFLAG_PRIVATE (32) is defined, got 1",
    ]


def test_rpc_is_a_context_manager(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import json, flux
        h = flux.Flux()
        with h.rpc("broker.ping", {"seq": 1, "pad": "stuff"}) as f:
            print(json.dumps(f.get()))
        """,
        instance.uri,
    )
    assert json.loads(out).items() >= {"seq": 1, "pad": "stuff"}.items()


def test_attr_set_changes_the_log_s_attributes_and_refuses_the_others(tmp_path: Path) -> None:
    live = LiveInstance(tmp_path / "state")
    try:
        out = flux_output(
            """
            import errno, flux
            h = flux.Flux()
            print(h.attr_get("log-stderr-level"), h.attr_get("log-ring-size"))
            h.attr_set("log-ring-size", "2")
            h.attr_set("log-stderr-level", "6")
            h.log(6, "one")
            h.log(6, "two")
            h.log(6, "three")
            print(h.attr_get("log-ring-size"), flux.Flux().attr_get("log-stderr-level"))
            for name, value in (("version", "9"), ("nosuch", "1"), ("log-ring-size", "0")):
                try:
                    h.attr_set(name, value)
                except OSError as exc:
                    print(errno.errorcode[exc.errno], exc.strerror)
            for args in ((b"log-level", "1"), ("log-level", b"1"), (5,)):
                try:
                    h.attr_remove(*args) if len(args) == 1 else h.attr_set(*args)
                except ValueError as exc:
                    print(exc)
            for name in ("log-level", "nosuch"):
                try:
                    h.attr_remove(name)
                except OSError as exc:
                    print(errno.errorcode[exc.errno], exc.strerror)
            """,
            live.uri,
        )
        dmesg = ok(live.uri, "dmesg")
    finally:
        live.stop()
    assert out.splitlines() == [
        "4 1024",
        "2 6",
        "EPERM attr.set: version cannot be changed while the instance runs",
        "ENOENT attr.set: no attribute 'nosuch'",
        "EINVAL attr.set: log-ring-size: must be an integer 1-65536, got '0'",
        "Attribute name must be a string",
        "Attribute value must be a string",
        "Attribute name must be a string",
        "EPERM attr.rm: log-level cannot be removed",
        "ENOENT No such file or directory",
    ]
    assert [line.rsplit(": ", 1)[1] for line in dmesg.splitlines()] == ["two", "three"]
    assert "shutdown started" in live.log.read_text()  # INFO, on stderr since level 6


def test_a_future_ext_is_fulfilled_by_what_its_init_callback_starts(
    instance: LiveInstance,
) -> None:
    out = flux_output(
        """
        import errno, flux
        from flux.future import FutureExt
        h = flux.Flux()

        def init(future, n):
            rpc = future.get_flux().rpc("broker.ping", {"n": n})
            rpc.then(lambda r: future.fulfill({"twice": r.get()["n"] * 2}))

        print(FutureExt(init, 21, flux_handle=h).get())
        try:
            FutureExt(lambda f: f.fulfill_error(errno.EPERM, "not yours"), flux_handle=h).get()
        except PermissionError as exc:
            print(exc.strerror)
        seen = []
        FutureExt(init, 5, flux_handle=h).then(lambda f: seen.append(f.get()))
        h.reactor_run()
        print(seen)
        try:
            FutureExt(lambda f: None).get()
        except OSError as exc:
            print(exc.errno == errno.EINVAL)
        """,
        instance.uri,
    )
    assert out.splitlines() == [
        "{'twice': 42}",
        "not yours",
        "[{'twice': 10}]",
        "True",
    ]


def test_a_lost_connection_ends_a_reactor_kept_by_a_message_watcher(tmp_path: Path) -> None:
    live = LiveInstance(tmp_path / "state")
    try:
        out = flux_output(
            f"""
            import flux, os, signal
            h = flux.Flux()
            h.event_subscribe("gone.")
            watcher = h.msg_watcher_create(lambda *a: None, topic_glob="gone.*").start()
            os.kill({live.proc.pid}, signal.SIGKILL)
            try:
                h.reactor_run()
            except ConnectionResetError as exc:
                print(exc.strerror)
            # a timer alone is slept until, not spun for
            watcher.stop()
            h.timer_watcher_create(0.3, lambda *a: None).start()
            waits = []
            poll = h._poll
            h._poll = lambda timeout: (waits.append(timeout), poll(timeout))
            h.reactor_run()
            print(len(waits) < 5)
            """,
            live.uri,
        )
    finally:
        live.kill()
    assert out.splitlines() == ["Connection to the Flux instance was lost", "True"]
