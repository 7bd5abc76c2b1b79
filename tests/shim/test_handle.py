"""flux.Flux against a live instance, in a clean interpreter: attributes, RPCs (plain,
streaming, with callbacks) and flux-core's errors."""

from __future__ import annotations

import json
import socket

import pytest

from support.instance import LiveInstance
from support.shim import flux_output, run_flux


def test_attr_get_gives_the_instance_attributes_as_strings(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import json, flux
        h = flux.Flux()
        attrs = {n: h.attr_get(n) for n in ("local-uri", "size", "rank", "version", "hostlist")}
        try:
            h.attr_get("no-such-attribute")
        except FileNotFoundError as exc:
            attrs["missing"] = exc.errno
        print(json.dumps(attrs))
        """,
        instance.uri,
    )
    attrs = json.loads(out)
    assert attrs["local-uri"] == instance.uri
    assert (attrs["size"], attrs["rank"]) == ("1", "0")
    assert attrs["version"]
    assert attrs["hostlist"] == socket.gethostname()
    assert attrs["missing"] == 2


def test_the_uri_may_be_given_as_str_or_bytes(instance: LiveInstance) -> None:
    out = flux_output(
        f"""
        import flux
        for url in ({instance.uri!r}, {instance.uri.encode()!r}):
            print(flux.Flux(url).rpc("broker.ping", {{"n": 1}}).get()["n"])
        """,
        None,
    )
    assert out.splitlines() == ["1", "1"]


def test_rpc_get_get_str_and_an_unknown_topic_as_flux_words_it(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import errno, flux
        h = flux.Flux()
        f = h.rpc("broker.ping", '{"a": [1, 2]}')
        print(f.get_str().split(",\\"userid\\"")[0])  # with the requester's credentials
        print(f.get()["a"])
        try:
            h.rpc("nosuch.method").get()
        except OSError as exc:
            print(exc.errno == errno.ENOSYS, exc.strerror)
        """,
        instance.uri,
    )
    assert out.splitlines() == [
        '{"a":[1,2]',
        "[1, 2]",
        "True No service matching nosuch.method is registered",
    ]


def test_then_callbacks_run_in_the_reactor_once_per_response(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import errno, flux
        from flux.constants import FLUX_RPC_STREAMING
        h = flux.Flux()
        seen = []

        def plain(f, tag):
            seen.append((tag, f.get()["n"]))

        def stream(f):
            try:
                entry = f.get()
            except OSError as exc:
                seen.append(("end", exc.errno == errno.ENODATA))
                return
            seen.append(("log", "message" in entry))
            f.reset()

        for n in range(3):
            h.rpc("broker.ping", {"n": n}).then(plain, "ping")
        h.rpc("log.dmesg", {}, flags=FLUX_RPC_STREAMING).then(stream)
        assert h.reactor_run() == 0
        print(seen[:3], seen[-1], len(seen) > 4)
        """,
        instance.uri,
    )
    assert out.strip() == "[('ping', 0), ('ping', 1), ('ping', 2)] ('end', True) True"


def test_a_callback_set_after_its_answer_runs_and_a_stopped_stream_ends(
    instance: LiveInstance,
) -> None:
    # the reactor calls back only the futures queued as answered: a callback set on
    # a future already answered is queued by then(), a stopped one leaves the reactor
    out = flux_output(
        """
        import flux
        from flux.constants import FLUX_RPC_STREAMING
        h = flux.Flux()
        seen = []
        answered = h.rpc("broker.ping", {"n": 7})
        answered.get()
        answered.then(lambda f: seen.append(("late", f.get()["n"])))

        def once(f):
            seen.append(("stream", "message" in f.get()))
            f.stop()

        h.rpc("log.dmesg", {}, flags=FLUX_RPC_STREAMING).then(once)
        assert h.reactor_run() == 0
        print(seen)
        """,
        instance.uri,
    )
    assert out.strip() == "[('late', 7), ('stream', True)]"


def test_an_exception_in_a_callback_stops_the_reactor_and_is_raised(
    instance: LiveInstance,
) -> None:
    out = flux_output(
        """
        import flux
        h = flux.Flux()

        def boom(f):
            raise KeyError("from the callback")

        h.rpc("broker.ping", {}).then(boom)
        try:
            h.reactor_run()
        except KeyError as exc:
            print("raised", exc)
        """,
        instance.uri,
    )
    assert out.strip() == "raised 'from the callback'"


def test_wait_for_times_out_and_a_timer_ends_a_reactor_run(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import flux
        from flux.constants import FLUX_RPC_STREAMING
        h = flux.Flux()
        fired = []
        h.timer_watcher_create(0.05, lambda *a: fired.append(1)).start()
        h.reactor_run()
        payload = {"key": "shim.never", "waitcreate": True}  # answered once the key exists
        try:
            h.rpc("kvs.watch", payload, flags=FLUX_RPC_STREAMING).wait_for(0.05)
        except TimeoutError as exc:
            print("timeout", exc.errno, fired)
        late = []

        def expired(f):
            try:
                f.get()
            except TimeoutError as exc:
                late.append(exc.errno)

        h.rpc("kvs.watch", payload, flags=FLUX_RPC_STREAMING).then(expired, timeout=0.05)
        h.reactor_run()
        print(late)
        """,
        instance.uri,
    )
    assert out.splitlines() == ["timeout 110 [1]", "[110]"]


def test_a_timer_reset_runs_it_afresh_by_new_times(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import flux
        h = flux.Flux()
        fired = []

        def tick(handle, watcher, revents, args):
            fired.append(1)
            if len(fired) == 3:
                watcher.stop()

        t = h.timer_watcher_create(60, tick)
        t.start()
        t.reset(after=0.01, repeat=0.01)
        h.reactor_run()
        print(len(fired), t.after, t.repeat)
        """,
        instance.uri,
    )
    assert out == "3 60.0 0.0\n"


def test_flux_core_s_parameter_names_and_positions(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import signal
        import flux
        from flux.constants import FLUX_MSGTYPE_EVENT, FLUX_MATCHTAG_NONE
        from flux.core.watchers import SignalWatcher
        from flux.message import MessageWatcher
        h = flux.Flux()
        h.attr_set(attr="log-ring-size", value="200")
        w = MessageWatcher(h, FLUX_MSGTYPE_EVENT, print, "x.*", FLUX_MATCHTAG_NONE, None, "arg")
        s = SignalWatcher(h, signal_int=signal.SIGUSR1, callback=print)
        print(h.attr_get("log-ring-size"), w.args, w.rolemask, s.signum == signal.SIGUSR1)
        """,
        instance.uri,
    )
    assert out == "200 arg None True\n"


def test_reactor_run_once_and_nowait(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import flux
        from flux.constants import FLUX_REACTOR_NOWAIT, FLUX_REACTOR_ONCE
        h = flux.Flux()
        got = []
        h.rpc("attr.get", {"name": "rank"}).then(lambda f: got.append("rpc"))
        h.timer_watcher_create(60, lambda *a: got.append("late")).start()
        print(h.reactor_run(flags=FLUX_REACTOR_ONCE), got)
        print(h.reactor_run(flags=FLUX_REACTOR_NOWAIT), got)
        try:
            h.reactor_run(flags=4)
        except OSError as exc:
            print(exc.errno)
        """,
        instance.uri,
    )
    assert out == "1 ['rpc']\n1 ['rpc']\n22\n"


def test_a_callback_s_exception_set_on_the_handle_is_raised_by_reactor_run(
    instance: LiveInstance,
) -> None:
    out = flux_output(
        """
        import flux
        h = flux.Flux()

        def failing(handle, watcher, revents, args):
            handle.set_exception(ValueError("from the callback"))
            handle.reactor_stop()

        h.timer_watcher_create(0.01, failing).start()
        try:
            h.reactor_run()
        except ValueError as exc:
            print(exc)
        h.raise_if_exception()
        with h.in_reactor():
            print(h.reactor_running())
        print(h.reactor_running(), h.set_exception(None))
        """,
        instance.uri,
    )
    assert out == "from the callback\nTrue\nFalse None\n"


def test_prepare_idle_and_check_watchers_do_work_between_waits(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import flux
        h = flux.Flux()
        work, done, turns = [1, 2, 3], [], []
        idle = h.idle_watcher_create()

        def prepare(handle, watcher, revents, args):
            turns.append("p")
            if work:
                idle.start()

        def check(handle, watcher, revents, args):
            turns.append("c")
            if work:
                done.append(work.pop(0))
            if not work:
                idle.stop()
                prep.stop()
                watcher.stop()

        prep = h.prepare_watcher_create(prepare).start()
        h.check_watcher_create(check).start()
        print(h.reactor_run(), done, "".join(turns))
        """,
        instance.uri,
    )
    assert out == "0 [1, 2, 3] pcpcpc\n"


def test_no_instance_is_flux_unable_to_connect(tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc = run_flux(
        f"""
        import flux
        for url in ({str(tmp_path / "nosock")!r}, None, "ssh://host/path"):
            try:
                flux.Flux(url)
            except OSError as exc:
                print(exc.strerror)
        """,
        None,
    )
    lines = proc.stdout.splitlines()
    assert len(lines) == 3, proc.stderr
    assert all(line.startswith("Unable to connect to Flux: ") for line in lines)
    assert "No such file or directory" in lines[0]
    assert "FLUX_URI is not set" in lines[1]
    assert "ssh is not supported" in lines[2]


def test_a_rank_other_than_0_is_unreachable_and_a_closed_handle_refuses(
    instance: LiveInstance,
) -> None:
    out = flux_output(
        """
        import errno, flux
        h = flux.Flux()
        try:
            h.rpc("broker.ping", {}, nodeid=1).get()
        except OSError as exc:
            print(errno.errorcode[exc.errno], exc.strerror)
        print(sorted(h.rpc("broker.ping", {}, nodeid=0).get()))
        waiting = h.rpc("kvs.watch", {"key": "shim.never", "waitcreate": True}, flags=2)
        h.close()
        for call in (waiting.get, lambda: h.rpc("broker.ping", {})):
            try:
                call()
            except OSError as exc:
                print(errno.errorcode[exc.errno], exc.strerror)
        """,
        instance.uri,
    )
    assert out.splitlines() == [
        "EHOSTUNREACH broker.ping: no rank 1 in this instance (size 1)",
        "['rank', 'rolemask', 'userid']",
        "ECONNRESET Connection to the Flux instance was lost",
        "EBADF rpc: the Flux handle is closed",
    ]


def test_config_get_answers_the_instance_config_as_flux_core_does(instance: LiveInstance) -> None:
    # tools read tables of it, e.g. queues, as flux-core's broker serves them
    out = flux_output(
        """
        import flux
        config = flux.Flux().rpc("config.get").get()
        print(type(config).__name__, config.get("queues", {}))
        """,
        instance.uri,
    )
    assert out.splitlines() == ["dict {}"]


def test_a_request_without_a_payload_reaches_services_as_an_empty_one(
    instance: LiveInstance,
) -> None:
    # flux-core's tools send requests that need nothing with no payload at all
    out = flux_output(
        """
        import flux
        h = flux.Flux()
        print(sorted(h.rpc("job-manager.getinfo").get()))
        print(sorted(h.rpc("job-manager.queue-status").get())[:2])
        print("job_states" in h.rpc("job-list.job-stats").get())
        """,
        instance.uri,
    )
    assert out.splitlines() == ["['max_jobid']", "['enable', 'start']", "True"]


def test_with_no_flux_uri_the_handle_opens_the_system_instance(
    instance: LiveInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As flux-core's ``flux.Flux()`` opens the system instance with no FLUX_URI set."""
    monkeypatch.setenv("PFLUX_SYSTEM_URI", instance.uri)
    out = flux_output("import flux\nprint(flux.Flux().attr_get('size'))", None)
    assert out == "1\n"


def test_a_wait_all_future_is_fulfilled_once_every_child_is(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import errno, flux
        from flux.future import WaitAllFuture
        h = flux.Flux()
        one, two = h.rpc("broker.attrs", {}), h.rpc("broker.attrs", {})
        both = WaitAllFuture()
        both.push(one)
        both.push(two)
        print(both.get(), one.get()["attrs"]["rank"], two.is_ready(), len(both.children))
        got = []
        later = WaitAllFuture()
        later.push(h.rpc("broker.attrs", {}))
        later.push(h.rpc("nosuch.topic"))
        later.then(lambda f: got.append([c.error_string() for c in f.children]))
        h.reactor_run()
        print(got)
        taken = h.rpc("broker.attrs", {}).then(lambda f: None)
        bad = WaitAllFuture()
        bad.push(taken)
        try:
            bad.get()
        except OSError as exc:
            print(errno.errorcode[exc.errno])
        """,
        instance.uri,
    )
    assert out.splitlines() == [
        "None 0 True 2",
        "[[None, 'No service matching nosuch.topic is registered']]",
        "EEXIST",
    ]
