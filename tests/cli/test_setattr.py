"""``flux setattr NAME VALUE``: the attributes a running instance lets change."""

from __future__ import annotations

from support.instance import LiveInstance, fails, ok


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
