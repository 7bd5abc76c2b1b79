"""``flux setattr NAME VALUE``: the attributes a running instance lets change."""

from __future__ import annotations

from support.instance import LiveInstance, fails, ok, wait_for_log


def test_setattr_changes_the_log_attributes_and_names_the_refusal(instance: LiveInstance) -> None:
    uri = instance.uri
    ok(uri, "setattr", "log-ring-size", "7")
    assert ok(uri, "getattr", "log-ring-size") == "7\n"
    assert "pflux-setattr: ERROR: attr.set: size cannot be changed" in fails(
        uri, "setattr", "size", "3"
    )
    assert "no attribute 'nosuch'" in fails(uri, "setattr", "nosuch", "1")
    assert "must be an integer 1-65536" in fails(uri, "setattr", "log-ring-size", "0")
    assert ok(uri, "getattr", "log-ring-size") == "7\n"
    assert "the following arguments are required: VALUE" in fails(
        uri, "setattr", "log-ring-size", rc=2
    )


def test_setattr_log_level_lets_the_ring_keep_debug_entries(instance: LiveInstance) -> None:
    uri = instance.uri
    assert ok(uri, "getattr", "log-level") == "6\n"
    jobid = ok(uri, "submit", "-t", "5m", "sleep", "300").strip()
    try:
        ok(uri, "job", "wait-event", jobid, "start")
        ok(uri, "setattr", "log-level", "7")
        assert ok(uri, "getattr", "log-level") == "7\n"
        ok(uri, "update", jobid, "duration=10m")
        wait_for_log(uri, f"job {jobid}: updated expiration")  # a debug entry
    finally:
        ok(uri, "setattr", "log-level", "6")
        ok(uri, "cancel", jobid)
    assert "must be an integer 0-7" in fails(uri, "setattr", "log-level", "8")
