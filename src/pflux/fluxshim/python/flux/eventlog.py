"""``flux.eventlog``: RFC 18 eventlog entries (``EventLogEvent``, a dict with properties)
and their display (``EventLogFormatter``), as flux-core's commands print them."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar


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


class EventLogFormatter:
    """Eventlog entries as text lines (``name key=value ...``) or compact JSON, with a raw,
    ISO 8601, offset (from the first entry) or human timestamp, colored by choice."""

    BOLD = "\033[1m"
    YELLOW = "\033[33m"
    GREEN = "\033[32m"
    BLUE = "\033[34m"
    MAGENTA = "\033[35m"
    GRAY = "\033[37m"
    RED = "\033[31m"

    eventlog_colors: ClassVar[dict[str, str]] = {
        "name": YELLOW,
        "time": GREEN,
        "timebreak": BOLD + GREEN,
        "key": BLUE,
        "value": MAGENTA,
        "number": GRAY,
        "exception": BOLD + RED,
    }

    def __init__(
        self,
        format: str = "text",
        timestamp_format: str = "raw",
        color: str = "auto",
    ) -> None:
        """``format``: text or json; ``timestamp_format``: raw, iso, offset, human (or
        its other name reltime); ``color``: auto (when stdout is a terminal), always,
        never."""
        self.t0: float | None = None
        self.last_dt: Any = None
        self.last_ts: float | None = None
        if format not in ("text", "json"):
            raise ValueError(f"Invalid entry_fmt: {format}")
        self.entry_format = format
        if timestamp_format not in ("raw", "human", "reltime", "iso", "offset"):
            raise ValueError(f"Invalid timestamp_fmt: {timestamp_format}")
        self.timestamp_format = "human" if timestamp_format == "reltime" else timestamp_format
        if color not in ("always", "never", "auto"):
            raise ValueError(f"Invalid color: {color}")
        import sys

        self.color = color == "always" or (color == "auto" and sys.stdout.isatty())

    def _color(self, name: str) -> str:
        return self.eventlog_colors[name] if self.color else ""

    def _reset(self) -> str:
        return "\033[0m" if self.color else ""

    def _painted(self, name: str, text: str) -> str:
        return self._color(name) + text + self._reset()

    def _timestamp_human(self, ts: float) -> str:
        """The date and minute at the first entry and each new minute, else the offset
        from the last such entry."""
        from datetime import datetime, timedelta

        when = datetime.fromtimestamp(ts)
        if self.last_dt is not None and when - self.last_dt < timedelta(minutes=1):
            offset = (when - self.last_dt).total_seconds()
            return self._painted("time", f"[{offset:>+11.6f}]")
        self.last_ts = ts
        self.last_dt = when
        return self._painted("timebreak", f"[{when.astimezone().strftime('%b%d %H:%M')}]")

    def _timestamp(self, ts: float) -> str:
        if self.t0 is None:
            self.t0 = ts
        if self.timestamp_format == "human":
            return self._timestamp_human(ts)
        if self.timestamp_format == "raw":
            text = f"{ts:11.6f}"
        elif self.timestamp_format == "iso":
            from datetime import datetime

            local = datetime.fromtimestamp(ts).astimezone()
            zone = local.strftime("%z").replace("+0000", "Z")
            micros = int((ts - int(ts)) * 1e6)
            text = local.strftime("%Y-%m-%dT%H:%M:%S.") + f"{micros:06d}" + zone
        else:
            text = f"{ts - self.t0:15.6f}"
        return self._painted("time", text)

    def _format_text(self, entry: EventLogEvent) -> str:
        import json

        kind = "exception" if entry.name == "exception" else "name"
        line = f"{self._timestamp(entry.timestamp)} {self._painted(kind, entry.name)}"
        for key, val in entry.context.items():
            color = "number" if type(val) in (int, float) else "value"
            text = json.dumps(val, separators=(",", ":"), ensure_ascii=False)
            line += f" {self._painted('key', key)}={self._painted(color, text)}"
        return line

    def format(self, entry: dict[str, Any]) -> str:
        """One entry (an RFC 18 dict or EventLogEvent) as a line, without newline."""
        if not isinstance(entry, EventLogEvent):
            entry = EventLogEvent(entry)
        if self.entry_format == "text":
            return self._format_text(entry)
        import json

        shown = {k: v for k, v in entry.items() if k != "context" or v}
        return json.dumps(shown, separators=(",", ":"), ensure_ascii=False)
