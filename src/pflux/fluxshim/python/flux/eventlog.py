"""``flux.eventlog.EventLogEvent``: one RFC 18 eventlog entry, a dict with properties."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class EventLogEvent(dict):  # type: ignore[type-arg]
    """An entry ``{timestamp, name, context}`` (from its JSON text or a dict); a missing
    context is ``{}``."""

    def __init__(self, event: str | dict[str, Any]) -> None:
        if isinstance(event, str):
            import json

            event = json.loads(event)
        entry: dict[str, Any] = event  # type: ignore[assignment]  # JSON text decoded above
        super().__init__(entry)
        if "context" not in self:
            self["context"] = {}

    def __str__(self) -> str:
        return f"{self.timestamp:<0.5f}: {self.name} {self.context}"

    @property
    def name(self) -> str:
        name: str = self["name"]
        return name

    @property
    def timestamp(self) -> float:
        timestamp: float = self["timestamp"]
        return timestamp

    @property
    def context(self) -> dict[str, Any]:
        context: dict[str, Any] = self["context"]
        return context

    @property
    def context_string(self) -> str:
        """The context as compact JSON with sorted keys ("" if empty)."""
        if not self.context:
            return ""
        import json

        return json.dumps(self.context, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
