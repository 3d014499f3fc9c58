"""Deployment audit: read what the engines printed, find the incident's preconditions.

``audit(paths)`` is the whole job as a library call: detect each file's format, build the
deployment (nodes with roles), apply the rules, solve the danger window with Z3. The
command's run (``ops/audit/run.py``) adds the ``--fail-on`` threshold; the CLI
(``kvproof audit``) only parses arguments, makes that one call and renders the run.
"""

from kvproof.ops.audit.deployment import Deployment, Node, load_deployment
from kvproof.ops.audit.findings import AuditFinding, Severity
from kvproof.ops.audit.report import AuditReport, audit
from kvproof.ops.audit.window import Window

__all__ = [
    "AuditFinding",
    "AuditReport",
    "Deployment",
    "Node",
    "Severity",
    "Window",
    "audit",
    "load_deployment",
]
