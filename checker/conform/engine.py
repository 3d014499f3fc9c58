"""What an engine adapter implements for ``kvproof conform``: the core's only view of an
engine's code.

The core (``walk.py``, ``diagnose.py``, ``run.py``) chooses every walk from the model and
judges every step; an adapter (``checker/upstream/`` for SGLang, ``checker/conform/vllm/``
for vLLM) loads the release's real decision code, stands in for its edges (sockets, GPU,
collectives, the clock), and answers the calls below. Nothing in the core imports an
engine's modules.

One walk, as the core drives it::

    with open_engine(...) as engine:            # the adapter loads the release's code
                                                #   (SGLang: upstream/engine.py::open_sglang)
        h = engine.harness(requests)            # fresh code objects for one walk
        h.apply(Step(inst, status))             # a model step, into the code; then the
                                                #   code's own scheduler pass runs
        h.decided(r)                            # what that pass decided on its own
        h.project()                             # the code's Projection, compared
        h.jump_target(inst) / h.expiring(...)   # clock jumps (timeouts) the code set
        h.stall_deadlines() / h.stall(t)        # time passing with no model step
        h.beats() / h.beat(t)                   # ... with the code's heartbeats delivered
        h.decisions()                           # what the code decided, counted
    engine.exercised(), engine.run_decisions()  # the functions run real; once-per-run

``Step.status`` is the model's transfer status of the request after the step
("success", "failed", ...). ``Step.reported`` is what the model says the peer reports at
``done`` (Success or, when a pending abort wins, Failed), for an adapter that plays the peer
itself; SGLang's adapter runs the peer's code instead (``checker/upstream/status.py``:
prefill's own managers decide what they send, compared as ``prefill_status``) and ignores it.

The code's own same-pass decisions (``Decided``) are evidence the core asks the model to
match with its own enabled action: ``commit`` when the code committed, ``abort`` when it
aborted a failed transfer, ``give_up`` when its waiting deadline passed, ``timeout`` when
its release deadline passed. An exception raised inside the engine's code is reported as
``UpstreamRaised`` (a finding, not a bug in kvproof).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kvproof.checker.conform.projection import Projection
from kvproof.model.lang.instance import ActionInstance


@dataclass(frozen=True)
class RequestSpec:
    """A request's fixed facts, chosen by the model's initial state."""

    over_prefill: bool  # the prompt is over prefill's max input length
    over_decode: bool  # ... and over decode's


@dataclass(frozen=True)
class Step:
    inst: ActionInstance  # the model's step (``action``, ``args``; args[0] the request)
    status: str  # the model's transfer status of args[0] after the step
    reported: str | None = None  # the status the walk's peer reports (None: not a report)


@dataclass(frozen=True)
class Decided:
    """What the code decided on its own about one request, by the end of a pass."""

    committed: bool = False  # took the transfer (KVPoll Success)
    aborted: bool = False  # aborted the request (its own decision or a client's)
    waited_out: bool = False  # its waiting deadline for the transfer has passed
    release_due: bool = False  # its deadline for releasing a held request has passed
    # vLLM (checker/conform/vllm/): prefill's lease was reaped while the transfer still
    # needed the source blocks (the model's ``expire``), and decode freed an aborted
    # request's blocks on its own (the model's ``ack``: pull's drain, push's last WRITE).
    source_expired: bool = False
    freed: bool = False


@dataclass(frozen=True)
class Beat:
    """A walk's move with no model step and no fault: time passes to ``when`` and every
    heartbeat the code sends on the way is delivered (vLLM: decode's lease-renewal
    heartbeats reach prefill, ``nixl/base_worker.py::_handle_heartbeat``). A stall is the
    same time passing with none delivered, which is a fault."""

    when: float


class UpstreamRaised(Exception):
    """An exception raised inside the engine's code: a finding, not a bug in kvproof.
    ``head`` names it and the engine's file:line; the core adds when (``during``)."""

    def __init__(self, head: str, traceback: str = "", during: str = "") -> None:
        super().__init__(head)
        self.head = head
        self.traceback = traceback  # the full traceback, written beside the trace
        self.during = during  # "step 3 (abort(0))", "prefill's intake", ...

    def __str__(self) -> str:
        return f"{self.head} during {self.during}" if self.during else self.head


class Harness(Protocol):
    """One walk's worth of the engine's code, fresh for every walk."""

    def apply(self, step: Step) -> None:
        """Take the model's step in the code, then run the code's own pass once."""
        ...

    def decided(self, r: int) -> Decided: ...

    def project(self) -> Projection:
        """The code's view of every request, in request order."""
        ...

    def jump_target(self, inst: ActionInstance) -> float | None:
        """The deadline the code set that the model's timer step ``inst`` passes (None:
        no deadline, the step moves no clock)."""
        ...

    def expiring(self, target: float, r: int) -> list[ActionInstance]:
        """The model steps that the clock at ``target`` also expires for requests other
        than ``r`` (the core takes a jump only if the model can take them too)."""
        ...

    def stall_deadlines(self) -> list[float]:
        """Deadlines of the code's holds that time passing alone would reach."""
        ...

    def stall(self, when: float) -> None:
        """Time passes to ``when`` with no model step; the code's pass runs once."""
        ...

    def beats(self) -> list[float]:
        """Times the clock may pass to with every heartbeat delivered (``Beat``), when
        that reaches no hold's deadline that a heartbeat does not renew; [] for an engine
        whose walk delivers none."""
        ...

    def beat(self, when: float) -> None:
        """Time passes to ``when`` and the heartbeats sent on the way are delivered."""
        ...

    def decisions(self) -> Mapping[str, int]:
        """What the code decided in this walk, counted (holds, releases, aborts...)."""
        ...


class Engine(Protocol):
    """An engine release's code, loaded and ready for walks (an adapter's context manager
    yields one; the loaded code is unloaded when it exits)."""

    # Read-only members: an adapter may hold them as fields or compute them.
    @property
    def name(self) -> str: ...  # "sglang", "vllm"
    @property
    def release(self) -> str: ...  # the version, or the PATH given
    @property
    def adapter(self) -> str: ...  # which adapter drives it (a release range)
    @property
    def settings(self) -> Mapping[str, Any]: ...  # what the code runs under (env, args)
    @property
    def settings_source(self) -> Mapping[str, str]: ...  # setting -> "variant" | "release default"
    @property
    def sizes(self) -> Mapping[str, int]: ...  # the model's instance sizes its harness supports

    def harness(self, requests: tuple[RequestSpec, ...]) -> Harness: ...

    def exercised(self) -> tuple[str, ...]:
        """The engine's functions (file::function) the walks run real."""
        ...

    def run_decisions(self) -> Mapping[str, int]:
        """Decisions taken once per run rather than per walk (e.g. prefill's intake)."""
        ...
