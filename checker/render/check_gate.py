"""``kvproof check --all`` as a CI gate: JUnit XML for test dashboards, SARIF for code scanning.

Both read each variant's ``--json`` object (``check_json.py``), built once per run.

Both reports say the same thing as the exit code: a variant's verdict for an invariant
either matches the variant's ``[expect]`` table or it does not (and a fixed variant's proof
either holds for all sizes or it does not).

- JUnit: one test suite per variant, one test case per invariant and one per fixed
  variant's proof. A mismatch is a ``<failure>`` whose text is the readable counterexample
  (initial facts, the steps with what each changed, and why the last state is bad); an
  expected violation passes and carries the same text in ``<system-out>``.
- SARIF 2.1.0: one result per mismatch (level ``error``) and per expected violation (level
  ``note``), pointing at the variant file's ``[expect]`` line for that invariant; rule id =
  invariant name (``proof`` for a failed proof).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from kvproof import __version__
from kvproof.checker.report.engine_words import Voice, marked_lines, step_words, voice_for
from kvproof.checker.report.trace_view import cells_text, invariant_doc
from kvproof.checker.verify.verdict import VariantVerdict
from kvproof.spec.files import write_bytes_atomic, write_text_atomic
from kvproof.spec.invariants import INVARIANTS
from kvproof.spec.variant import Variant

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
PROOF_RULE = "proof"


# -- what each check says, as text --------------------------------------------------------


def trace_text(entry: dict[str, Any], voice: Voice | None = None) -> str:
    """The long form of one invariant's counterexample (a ``to_json`` invariant entry)."""
    lines = []
    if entry.get("initial"):
        lines.append("initially: " + "; ".join(entry["initial"]))
    rows = entry.get("trace", [])
    # CI shows this to people: the steps in engine words (the cells stay in --json); a
    # user protocol (no voice) keeps its cells.
    said = step_words(rows, voice) if voice is not None else [cells_text(r) for r in rows]
    steps = [
        f"{row['step']:>3}. {row['label']:<18} {words}"
        for row, words in zip(rows, said, strict=True)
    ]
    lines += marked_lines(steps, entry.get("loop"))
    if entry.get("explanation"):
        lines.append(f"why: {entry['explanation']}")
    return "\n".join(lines)


def trace_short(entry: dict[str, Any]) -> str:
    """The short form: ``arrive(r0) -> alloc(r0, p0) -> ...``; a lasso's loop in
    ``(...)forever``."""
    labels = [row["label"] for row in entry.get("trace", [])]
    loop = entry.get("loop")
    if loop is None:
        return " -> ".join(labels)
    return " -> ".join([*labels[:loop], "(" + " -> ".join(labels[loop:]) + ")forever"])


def _verdict_line(data: dict[str, Any], entry: dict[str, Any]) -> str:
    sizes = data["sizes"]
    got = entry["verdict"]
    if got == "violated":
        kind = "" if entry["primary"] else ", runs through an earlier violation"
        got = f"violated ({entry['shortest']}-step counterexample{kind})"
    else:
        got = f"holds up to depth {entry['depth']}"
    return (
        f"{data['variant']}: {entry['name']} expected {entry['expected'] or '-'}, got {got}; "
        f"BMC with {sizes.get('Req')} requests, {sizes.get('Page')} pages"
    )


def _proof_text(proof: dict[str, Any]) -> str:
    lines = [proof["summary"]]
    cti = proof.get("cti")
    if cti:
        sizes = ", ".join(f"{v} {k}" for k, v in cti["sizes"].items())
        lines.append(f"counterexample to induction ({cti['query']}, {sizes}):")
        lines += [f"  pre: {cell}" for cell in cti.get("pre", [])]
        if "action" in cti:
            lines.append(f"  action: {cti['action']}")
            lines += [f"  changes: {c}" for c in cti.get("changes", [])]
        lines.append(f"  fails: {cti['conjunct']}")
    return "\n".join(lines)


def _statement(check: VariantVerdict, name: str) -> str:
    info = INVARIANTS.get(name)
    assert check.protocol is not None
    if info is not None and check.protocol.name == "handoff":
        return info.statement
    return invariant_doc(check.protocol, name) or (
        info.statement if info else f"the protocol's invariant {name}"
    )


# -- JUnit --------------------------------------------------------------------------------


Checked = list[tuple[VariantVerdict, dict[str, Any]]]  # each verdict with its --json object


def write_junit(checks: Checked, path: Path, *, gate: bool = True) -> None:
    """JUnit XML whose failure count agrees with the exit code.

    ``gate`` (``check --all``): a failure is a verdict that does not match the variant's
    expectation. Otherwise (``check VARIANT``, which exits 1 on any violation) every
    violated invariant is a failure too.
    """
    root = ET.Element("testsuites", name="kvproof check")
    seconds = 0.0
    for check, data in checks:
        name = check.variant.name
        suite = ET.SubElement(root, "testsuite", name=name)
        uri, base = _relative(check.variant.path)
        file = uri if base is not None else str(check.variant.path)
        voice = voice_for(check)
        # Per-invariant times overlap (one incremental solver): the suite's is the run's.
        suite_seconds = check.bmc.seconds
        for entry in data["invariants"]:
            tc = _case(suite, name, entry["name"], entry["seconds"], file)
            text = message = _verdict_line(data, entry)
            if entry["verdict"] == "violated":
                text += "\n" + trace_text(entry, voice)
            if not entry["matches"] or (not gate and entry["verdict"] == "violated"):
                kind = "mismatch" if not entry["matches"] else "violation"
                ET.SubElement(tc, "failure", message=message, type=kind).text = text
            elif entry["verdict"] == "violated":
                ET.SubElement(tc, "system-out").text = text
        proof = data.get("proof")
        if proof is not None and (not check.variant.buggy or not gate):
            tc = _case(suite, name, "proof (all sizes)", proof["seconds"], file)
            suite_seconds += proof["seconds"]
            if not proof["proved"]:
                message = f"not proved: {proof['summary']}"
                failure = ET.SubElement(tc, "failure", message=message, type="proof")
                failure.text = _proof_text(proof)
        _tally(suite, suite_seconds)
        seconds += suite_seconds
    _tally(root, seconds)
    ET.indent(root)
    xml = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    write_bytes_atomic(path, xml + b"\n")


def _case(suite: ET.Element, variant: str, name: str, seconds: float, file: str) -> ET.Element:
    return ET.SubElement(
        suite,
        "testcase",
        classname=f"kvproof.{variant}",
        name=name,
        time=f"{seconds:.3f}",
        file=file,
    )


def _tally(element: ET.Element, seconds: float) -> None:
    """The counts a suite (or all of them) reports: its test cases and their failures."""
    element.set("tests", str(len(element.findall(".//testcase"))))
    element.set("failures", str(len(element.findall(".//failure"))))
    element.set("errors", "0")
    element.set("time", f"{seconds:.3f}")


# -- SARIF --------------------------------------------------------------------------------


def write_sarif(checks: Checked, path: Path) -> None:
    rules: dict[str, dict[str, Any]] = {}
    results: list[dict[str, Any]] = []
    roots: set[Path] = set()

    def add(rule_id: str, text: str, level: str, message: str, where: Any, props: Any) -> None:
        """A result of rule ``rule_id`` (``text``: what it asks), ``where`` its location."""
        if rule_id not in rules:
            rules[rule_id] = {
                "id": rule_id,
                "name": rule_id,
                "shortDescription": {"text": text},
                "fullDescription": {"text": text},
                "help": {"text": f"{text}. Run `kvproof check` on the variant to see the trace."},
            }
        results.append(
            {
                "ruleId": rule_id,
                "ruleIndex": list(rules).index(rule_id),
                "level": level,
                "message": {"text": message},
                "locations": [where],
                "properties": props,
            }
        )

    for check, data in checks:
        uri, root = _relative(check.variant.path)
        if root is not None:
            roots.add(root)
        lines = _expect_lines(check.variant)
        for entry in data["invariants"]:
            if entry["matches"] and entry["verdict"] == "holds":
                continue
            name = entry["name"]
            message = _verdict_line(data, entry)
            if entry["verdict"] == "violated":
                message += f". Why: {entry['explanation']} Trace: {trace_short(entry)}"
            props = {"variant": check.variant.name}
            props |= {k: entry.get(k) for k in ("expected", "verdict", "matches", "shortest")}
            level = "error" if not entry["matches"] else "note"
            where = _location(uri, root, lines.get(name, lines[""]))
            add(name, _statement(check, name), level, message, where, props)
        proof = data.get("proof")
        if proof is not None and not check.variant.buggy and not proof["proved"]:
            said = "; ".join(line.strip() for line in _proof_text(proof).splitlines())
            message = f"{check.variant.name}: not proved: {said}"
            text = "a fixed variant is proved safe for all numbers of requests and pages"
            where = _location(uri, root, lines[""])
            add(PROOF_RULE, text, "error", message, where, {"variant": check.variant.name})
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "kvproof",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": list(rules.values()),
            }
        },
        "results": results,
    }
    if len(roots) == 1:
        run["originalUriBaseIds"] = {"%SRCROOT%": {"uri": roots.pop().as_uri() + "/"}}
    sarif = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    write_text_atomic(path, json.dumps(sarif, indent=2) + "\n")


def _location(uri: str, root: Path | None, line: int) -> dict[str, Any]:
    artifact: dict[str, Any] = {"uri": uri}
    if root is not None:
        artifact["uriBaseId"] = "%SRCROOT%"
    return {"physicalLocation": {"artifactLocation": artifact, "region": {"startLine": line}}}


def _relative(path: Path) -> tuple[str, Path | None]:
    """The variant file's URI relative to its repository root (code scanning needs that),
    else relative to the working directory, else an absolute ``file:`` URI."""
    path = path.resolve()
    for parent in path.parents:
        if (parent / ".git").exists():
            return path.relative_to(parent).as_posix(), parent
    cwd = Path.cwd().resolve()
    if path.is_relative_to(cwd):
        return path.relative_to(cwd).as_posix(), cwd
    return path.as_uri(), None


def _expect_lines(variant: Variant) -> dict[str, int]:
    """Line numbers (1-based) of each key of the ``[expect]`` table; ``""``: the header
    (the spec loader records them: ``Variant.lines``)."""
    lines = {"": variant.lines.get("expect", 1)}
    for key, number in variant.lines.items():
        if key.startswith("expect."):
            lines[key.removeprefix("expect.")] = number
    return lines
