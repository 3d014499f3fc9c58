"""A fake NIXL agent: the seven methods the worker's decision code calls, with every
transfer state, notification, failure and timing chosen by the walk.

It stands in for ``nixl._api.nixl_agent`` (and the ``NixlWrapper`` vLLM wraps it in): a
handle is ``PROC`` until the walk lands it (``DONE``) or fails it (``ERR``); a notification
is delivered only when the walk says so. ``release_fails`` makes ``release_xfer_handle``
raise for a handle, the case ``base_worker.py::_try_release_xfer_handle`` retains (#56104).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FakeNixlAgent:
    name: str = "agent"
    states: dict[int, str] = field(default_factory=dict)  # handle -> PROC | DONE | ERR
    released: set[int] = field(default_factory=set)
    release_fails: set[int] = field(default_factory=set)
    inbox: dict[str, list[bytes]] = field(default_factory=lambda: defaultdict(list))
    sent: list[tuple[str, bytes]] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    _next: int = 1

    def __init__(self, name: str = "agent", *args: Any, **kwargs: Any) -> None:
        self.name = name
        self.states, self.released, self.release_fails = {}, set(), set()
        self.inbox, self.sent, self.calls = defaultdict(list), [], defaultdict(int)
        self._next = 1

    # -- the seven methods ---------------------------------------------------------------
    def get_new_notifs(self) -> dict[str, list[bytes]]:
        self.calls["get_new_notifs"] += 1
        out, self.inbox = dict(self.inbox), defaultdict(list)
        return out

    def check_xfer_state(self, handle: int) -> str:
        self.calls["check_xfer_state"] += 1
        return self.states[handle]

    def release_xfer_handle(self, handle: int) -> None:
        self.calls["release_xfer_handle"] += 1
        if handle in self.release_fails:
            raise RuntimeError(f"nixl: release of handle {handle} failed (status error)")
        self.released.add(handle)

    def get_xfer_telemetry(self, handle: int) -> Any:
        self.calls["get_xfer_telemetry"] += 1
        return None

    def check_remote_metadata(self, agent: str, *args: Any) -> bool:
        self.calls["check_remote_metadata"] += 1
        return True

    def send_notif(self, agent: str, notif_msg: bytes | str = b"") -> None:
        self.calls["send_notif"] += 1
        msg = notif_msg.encode() if isinstance(notif_msg, str) else notif_msg
        self.sent.append((agent, msg))

    # -- what the walk does --------------------------------------------------------------
    def post(self) -> int:
        """A transfer posted (READ in pull, WRITE in push): in progress."""
        handle, self._next = self._next, self._next + 1
        self.states[handle] = "PROC"
        return handle

    def land(self, handle: int) -> None:
        self.states[handle] = "DONE"

    def fail(self, handle: int) -> None:
        self.states[handle] = "ERR"

    def deliver(self, peer: str, msg: str) -> None:
        """A notification from ``peer`` arrives (a read's completion, a heartbeat)."""
        self.inbox[peer].append(msg.encode())

    def in_flight(self, handles: list[int]) -> bool:
        return any(self.states.get(h) == "PROC" for h in handles)
