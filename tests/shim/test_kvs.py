"""flux.kvs against a live instance, in a clean interpreter: values as flux-core encodes
them, KVSDir and KVSTxn, walk, namespaces, and flux-core's exceptions."""

from __future__ import annotations

import json

from pflux.api import Client
from support.instance import LiveInstance
from support.shim import flux_output, run_flux


def test_values_are_stored_as_json_and_read_back_decoded(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import json, flux, flux.kvs
        h = flux.Flux()
        flux.kvs.put(h, "v.str", "hello")
        flux.kvs.put(h, "v.int", 42)
        flux.kvs.put(h, "v.obj", {"a": [1, 2.5, None]})
        flux.kvs.put(h, "v.raw", b"not json")
        flux.kvs.put(h, "v..dots.", True)  # normalized as flux-core's: v.dots
        flux.kvs.commit(h)
        flux.kvs.commit(h)  # nothing staged: nothing to do
        got = {k: flux.kvs.get(h, "v." + k) for k in ("str", "int", "obj", "raw", "dots")}
        print(json.dumps(got))
        """,
        instance.uri,
    )
    assert json.loads(out) == {
        "str": "hello",
        "int": 42,
        "obj": {"a": [1, 2.5, None]},
        "raw": "not json",
        "dots": True,
    }
    with Client(instance.uri) as client:
        assert client.kvs_get("v.str") == '"hello"'  # the JSON text, quotes and all
        assert client.kvs_get("v.raw") == "not json"


def test_raw_values_are_stored_as_their_text(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import json, flux, flux.kvs
        h = flux.Flux()
        flux.kvs.put(h, "raw.s", "[1, 2", raw=True)
        flux.kvs.put(h, "raw.b", b"bytes", raw=True)
        with flux.kvs.KVSTxn(h, "raw") as txn:
            txn.put("t", "text", raw=True)
        try:
            flux.kvs.put(h, "raw.n", 5, raw=True)
        except TypeError as exc:
            print(exc)
        flux.kvs.commit(h)
        """,
        instance.uri,
    )
    assert out == "kvs: put: a raw value must be bytes or str, not int\n"
    with Client(instance.uri) as client:
        assert [client.kvs_get(f"raw.{k}") for k in "sbt"] == ["[1, 2", "bytes", "text"]
        assert sorted(client.kvs_ls("raw")) == ["b", "s", "t"]


def test_lookups_fail_with_flux_cores_exceptions(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import flux, flux.kvs
        h = flux.Flux()
        flux.kvs.put(h, "e.dir.x", 1)
        flux.kvs.commit(h)
        def fails(call, *args):
            try:
                call(h, *args)
            except OSError as exc:
                print(type(exc).__name__, exc.errno, exc.strerror)
        fails(flux.kvs.get, "e.nope")
        fails(flux.kvs.get_key_direct, "e.dir")
        fails(flux.kvs.get_dir, "e.dir.x")
        fails(flux.kvs.put, ".", 1)
        for test in (flux.kvs.exists, flux.kvs.isdir):
            print(*(test(h, key) for key in ("e.dir", "e.dir.x", "e.no")))
        flux.kvs.put(h, "e.bad key", 1)
        fails(flux.kvs.commit)
        """,
        instance.uri,
    )
    assert out.splitlines() == [
        "FileNotFoundError 2 No such file or directory",
        "IsADirectoryError 21 Is a directory",
        "NotADirectoryError 20 Not a directory",
        "OSError 22 kvs: the root directory cannot be written",
        "True True False",
        "True False False",
        'OSError 22 kvs.commit: ops[0]: key "e.bad key": path component "bad key" contains'
        " whitespace or a control character",
    ]


def test_kvsdir_is_a_mapping_whose_writes_wait_for_commit(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import flux, flux.kvs
        h = flux.Flux()
        with flux.kvs.get_dir(h) as root:
            root["d.a"] = 1
            root["d.sub.b"] = "two"
        d = flux.kvs.get_dir(h, "d")
        print(sorted(d), len(d), d.key_at("a"), d.list_all())
        print(d["a"], type(d["sub"]).__name__, d["sub"]["b"], d["sub.b"])
        try:
            d["missing"]
        except KeyError as exc:
            print(exc.args[0])
        d["c"] = 3
        print(d.exists("c"))  # staged, not committed
        d.commit()
        print(d.exists("c"), "c" in d, "c" in list(d))  # the listing: as when d was made
        del d["a"]
        d["sub"]["e"] = 5  # reached through d: shares its transaction
        d.commit()
        d = flux.kvs.get_dir(h, "d")
        print(sorted(d.files()), sorted(d.directories()), sorted(d["sub"]))
        d.mkdir("new", {"x": 1, "y.z": 2})
        d.mkdir("empty")
        print(flux.kvs.get(h, "d.new.y.z"), list(flux.kvs.get_dir(h, "d.empty")))
        d.fill({"f": "filled"})
        print(flux.kvs.get(h, "d.f"))
        """,
        instance.uri,
    )
    assert out.splitlines() == [
        "['a', 'sub'] 2 d.a (['a'], ['sub'])",
        "1 KVSDir two two",
        "missing not found under directory d.",
        "False",
        "True True False",
        "['c'] ['sub'] ['b', 'e']",
        "2 []",
        "filled",
    ]


def test_walk_lists_directories_as_os_walk_does(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import flux, flux.kvs
        h = flux.Flux()
        with flux.kvs.KVSTxn(h, "w") as txn:
            txn.put("top", 1)
            txn.put("a.one", 1)
            txn.put("a.b.two", 2)
            txn.mkdir("c")
        for topdown in (True, False):
            for path, dirs, files in flux.kvs.walk("w", topdown=topdown, flux_handle=h):
                print(repr(path), sorted(dirs), sorted(files))
        try:
            flux.kvs.walk("w")
        except ValueError as exc:
            print(exc)
        print(flux.kvs.join("a", "", "b"))
        """,
        instance.uri,
    )
    assert out.splitlines() == [
        "'' ['a', 'c'] ['top']",
        "'a' ['b'] ['one']",
        "'a.b' [] ['two']",
        "'c' [] []",
        "'a.b' [] ['two']",
        "'a' ['b'] ['one']",
        "'c' [] []",
        "'' ['a', 'c'] ['top']",
        "If directory is a key, flux_handle must be specified",
        "a.b",
    ]


def test_kvstxn_commits_atomically_and_async(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import flux, flux.kvs
        from flux.constants import FLUX_KVS_NO_MERGE, FLUX_KVS_SYNC
        h = flux.Flux()
        txn = flux.kvs.KVSTxn(h, "t.")
        txn.put("ok", 1)
        txn.put("bad key", 2)
        try:
            txn.commit()
        except OSError as exc:
            print(exc.errno)
        print(flux.kvs.exists(h, "t.ok"), txn.txn)  # nothing applied, and the txn is cleared
        txn.put("ok", 1)
        txn.unlink("gone")
        future = txn.commit_async(FLUX_KVS_NO_MERGE | FLUX_KVS_SYNC)
        print(future.get(), flux.kvs.get(h, "t.ok"))
        flux.kvs.put_unlink(h, "t.ok")
        flux.kvs.commit_async(h).get()
        print(flux.kvs.exists(h, "t.ok"))
        flux.kvs.put(h, "t.dir.v", "through the link")
        flux.kvs.put_symlink(h, "t.link", "t.dir")
        flux.kvs.commit(h)
        with flux.kvs.KVSTxn(h, "t") as t2:
            t2.symlink("link2", "t.dir.v")
        files = sorted(flux.kvs.get_dir(h, "t").files())
        print(flux.kvs.get(h, "t.link.v"), flux.kvs.get(h, "t.link2"), files)
        try:
            txn.put("x", 1)
            txn.commit(flags=64)
        except OSError as exc:
            print(exc.strerror)
        """,
        instance.uri,
    )
    assert out.splitlines() == [
        "22",
        "False []",
        "{} 1",
        "False",
        "through the link through the link ['link', 'link2']",
        "kvs: commit: flags: invalid value 64",
    ]


def test_namespaces_are_created_listed_used_and_removed(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import os, flux, flux.kvs
        h = flux.Flux()
        flux.kvs.namespace_create(h, "test.ns-1")
        print("test.ns-1" in flux.kvs.namespace_list(h), flux.kvs.namespace_list(h)[0])
        flux.kvs.put(h, "k", "in ns")
        flux.kvs.commit(h, namespace="test.ns-1")
        print(flux.kvs.get(h, "k", namespace="test.ns-1"), flux.kvs.exists(h, "k"))
        os.environ["FLUX_KVS_NAMESPACE"] = "test.ns-1"
        print(flux.kvs.get(h, "k"), sorted(flux.kvs.get_dir(h)))
        del os.environ["FLUX_KVS_NAMESPACE"]
        try:
            flux.kvs.namespace_create(h, "test.ns-1")
        except FileExistsError as exc:
            print(exc.errno)
        flux.kvs.namespace_remove(h, "test.ns-1")
        print("test.ns-1" in flux.kvs.namespace_list(h))
        flux.kvs.dropcache(h)
        """,
        instance.uri,
    )
    assert out.splitlines() == ["True primary", "in ns False", "in ns ['k']", "17", "False"]


def test_flux_kvs_loads_lazily(instance: LiveInstance) -> None:
    proc = run_flux(
        """
        import sys, flux
        print("flux.kvs" in sys.modules, flux.kvs.__name__, "flux.kvs" in sys.modules)
        """,
        instance.uri,
    )
    assert proc.stdout.split() == ["False", "flux.kvs", "True"], proc.stderr


def test_a_watched_key_gives_each_value_until_canceled(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import errno, flux, flux.kvs
        h, writer = flux.Flux(), flux.Flux()
        try:
            flux.kvs.kvs_watch_async(h, "w.none").get()
        except FileNotFoundError as exc:
            print("missing", exc.errno == errno.ENOENT)
        watch = flux.kvs.kvs_watch_async(h, "w.key", waitcreate=True, uniq=True)
        for value in (1, 1, {"two": 2}, "three"):
            flux.kvs.put(writer, "w.key", value)
            flux.kvs.commit(writer)
        print([watch.get() for _ in range(3)])
        watch.cancel()
        print(watch.get())
        try:
            flux.kvs.kvs_watch_async(h, "w.key", full=True)
        except OSError as exc:
            print(exc.errno == errno.EINVAL, exc.strerror)
        """,
        instance.uri,
    )
    assert out.splitlines() == [
        "missing True",
        "[1, {'two': 2}, 'three']",
        "None",
        "True kvs_watch_async: full: not supported by pflux's KVS",
    ]
