"""Praxis for the OpenAI Agents SDK.

``shell`` is a function tool that runs a command through ``praxis-run``: the
daemon decides before it runs, runs what it allows in its sandbox, and audits
every call. ``praxis_guardrail`` is a tool input guardrail that asks the
daemon for its decision first (``praxis-run judge``), so a HOLD or STOP never
reaches the tool and the model gets the reason instead (``reject_content``).

Judgment memory: before the guardrail decides, it asks praxisd's judge API
for the memories of this workspace about the command (``recall``), and
after, it writes the decision back (``write_back``). The decision itself
comes from ``praxis-run judge --proposal``, which the daemon answers with
what confirmed lessons allow. The recalled memories and the written-back
decision ride in the guardrail's ``output_info``.

The agent's session id for the audit record is ``PRAXIS_SESSION`` if set,
else one per process; the workspace is ``PRAXIS_WORKSPACE`` if set, else
the current directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agents import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailData,
    function_tool,
    tool_input_guardrail,
)

__all__ = [
    "MEMORY_TIMEOUT",
    "RUNTIME",
    "api",
    "judge",
    "judge_proposal",
    "praxis_guardrail",
    "proposal",
    "recall",
    "run",
    "session_id",
    "shell",
    "write_back",
]

#: Runtime name in the audit record.
RUNTIME = "openai-agents"

_SESSION = os.environ.get("PRAXIS_SESSION") or f"agents-{uuid.uuid4().hex[:12]}"


def session_id() -> str:
    """The session id these tools report to praxisd."""
    return _SESSION


def _praxis_run() -> str:
    return os.environ.get("PRAXIS_RUN") or shutil.which("praxis-run") or "praxis-run"


def _ids(tool_call_id: str | None) -> list[str]:
    ids = ["--session", session_id(), "--runtime", RUNTIME]
    if tool_call_id:
        ids += ["--tool-call-id", tool_call_id]
    return ids


def _deadline() -> float:
    """Seconds to wait for praxis-run's answer: its own decision deadline
    (``PRAXIS_DECISION_TIMEOUT``, default 10 s) plus slack for it to report."""
    try:
        seconds = float(os.environ.get("PRAXIS_DECISION_TIMEOUT", "10"))
    except ValueError:
        seconds = 10.0
    return (seconds if seconds > 0 else 10.0) + 5.0


def judge(command: str, tool_call_id: str | None = None) -> dict[str, Any]:
    """The daemon's decision on ``command`` (audited, not run).

    Anything that keeps the daemon from answering is a HOLD: this never
    returns ALLOW by default.
    """
    try:
        done = subprocess.run(
            [_praxis_run(), "judge", "--json", *_ids(tool_call_id), "-c", command],
            capture_output=True,
            text=True,
            timeout=_deadline(),
            check=False,
        )
        decision = json.loads(done.stdout)
        if not isinstance(decision, dict) or decision.get("decision") not in ("ALLOW", "HOLD", "STOP"):
            raise ValueError(f"unexpected answer: {done.stdout!r}")
        return decision
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        return {"decision": "HOLD", "execution_prevented": True, "reason": f"praxis could not judge: {e}"}


def workspace() -> str:
    """The workspace memories are scoped to."""
    return os.environ.get("PRAXIS_WORKSPACE") or os.getcwd()


#: Seconds recall and write-back may take: memory informs the decision and
#: records it, and never holds the tool call up for longer.
MEMORY_TIMEOUT = 2.0


def api(
    method: str, path: str, body: dict[str, Any] | None = None, timeout: float | None = None
) -> dict[str, Any]:
    """One judge API request through ``praxis-run api``; the JSON answer.

    Raises ``RuntimeError`` with praxisd's reason when it refuses or does
    not answer within ``timeout`` seconds (default: the decision deadline).
    """
    try:
        done = subprocess.run(
            [_praxis_run(), "api", method, path],
            input=json.dumps(body) if body is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout or _deadline(),
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise RuntimeError(f"praxis-run api: {e}") from e
    try:
        answer = json.loads(done.stdout) if done.stdout.strip() else {}
    except ValueError as e:
        raise RuntimeError(f"praxis-run api: unexpected answer {done.stdout!r}") from e
    if done.returncode != 0:
        raise RuntimeError(answer.get("error", {}).get("message") or done.stderr.strip())
    return answer


def _digest(command: str) -> str:
    return hashlib.sha256(command.encode()).hexdigest()


def _action_id(command: str, tool_call_id: str | None) -> str:
    return tool_call_id or f"call-{_digest(command)[:16]}"


def proposal(command: str, tool_call_id: str | None = None, tool_name: str = "shell") -> dict[str, Any]:
    """The ``openbrain.judge.action_proposal.v1`` of running ``command``.

    No raw arguments beyond the command line the judge must see: the rest
    is a digest. The risk class is what a shell command may be until
    praxisd classifies it.
    """
    action_id = _action_id(command, tool_call_id)
    return {
        "schema_version": "openbrain.judge.action_proposal.v1",
        "workspace_id": workspace(),
        "project_id": None,
        "task_id": None,
        "flow_id": session_id(),
        "action_id": action_id,
        "idempotency_key": f"{session_id()}/{action_id}",
        "runtime": {"name": RUNTIME, "version": None, "adapter": "praxis_agents"},
        "actor": {"agent_id": session_id(), "role": None, "provider": None, "model": None},
        "tool": {"name": tool_name, "kind": "shell", "target_system": None},
        "action": {
            "risk_class": "external_side_effect",
            "description": "run a shell command",
            "target": command,
            "arguments_digest": f"sha256:{_digest(command)}",
            "full_arguments_ref": None,
        },
        "authorization": {"claimed_user_authorization": None, "user_authorization_refs": []},
        "evidence": {"source_refs": []},
        "expected_consequence": {
            "summary": "whatever the command does on this host",
            "external_recipients": [],
            "data_exposed": [],
            "systems_changed": [],
            "persistence": "durable",
        },
        "rollback": {"is_reversible": False, "rollback_plan": None, "rollback_owner": None},
        "sensitivity": {
            "contains_secret_like_data": False,
            "contains_customer_data": False,
            "contains_private_personal_data": False,
            "contains_financial_or_legal_data": False,
            "contains_production_system_access": False,
        },
    }


def recall(command: str, tool_call_id: str | None = None) -> dict[str, Any]:
    """What judgment memory holds about ``command`` in this workspace: an
    ``openbrain.judge.recall_response.v1``, or one with no memories and a
    warning when praxisd cannot answer (recall informs; it never decides)."""
    action_id = _action_id(command, tool_call_id)
    words = command.split()
    request = {
        "schema_version": "openbrain.judge.recall.v1",
        "request_id": f"recall-{action_id}",
        "workspace_id": workspace(),
        "project_id": None,
        "task_id": None,
        "flow_id": session_id(),
        "action_id": action_id,
        "query": {
            "summary": "run a shell command",
            "action_type": "external_side_effect",
            "tool_name": words[0] if words else None,
            "target_system": None,
        },
        "entities": {
            "people": [],
            "orgs": [],
            "repos": [],
            "files": [],
            "customers": [],
            "systems": [],
            "topics": words[1:2],
        },
        "scope": {
            "visibility": "workspace",
            "include_unconfirmed": False,
            "include_disputed": False,
            "include_stale": False,
        },
        "limits": {"max_items": 5, "max_tokens": 1000, "recency_days": None},
        "policy": {
            "allowed_use_policies": ["can_use_as_instruction", "can_use_as_evidence"],
            "require_source_refs": False,
        },
    }
    try:
        return api("POST", "/v1/judge/recall", request, MEMORY_TIMEOUT)
    except RuntimeError as e:
        return {
            "schema_version": "openbrain.judge.recall_response.v1",
            "request_id": request["request_id"],
            "memories": [],
            "policy_hits": [],
            "warnings": [{"code": "recall_unavailable", "message": str(e)}],
        }


_VERDICTS = {"allow": "ALLOW", "block": "STOP", "revise": "HOLD", "escalate": "HOLD"}


def judge_proposal(action: dict[str, Any]) -> dict[str, Any]:
    """praxisd's decision on an action proposal: ``decision`` (ALLOW, HOLD,
    STOP), ``reason``, ``approve_with`` and the ``openbrain.judge.decision.v1``
    document as ``judge_decision``. Anything that keeps the daemon from
    answering is a HOLD."""
    try:
        done = subprocess.run(
            [_praxis_run(), "judge", "--proposal", "-", *_ids(action["action_id"])],
            input=json.dumps(action),
            capture_output=True,
            text=True,
            timeout=_deadline(),
            check=False,
        )
        document = json.loads(done.stdout)
        verdict = _VERDICTS[document["decision"]]
    except (OSError, ValueError, KeyError, TypeError, subprocess.SubprocessError) as e:
        return {"decision": "HOLD", "execution_prevented": True, "reason": f"praxis could not judge: {e}"}
    signal = next((json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")), {})
    return {
        "decision": verdict,
        "reason": document["reasoning_summary"],
        "request_id": signal.get("request_id"),
        "approve_with": signal.get("approve_with"),
        "judge_decision": document,
    }


def write_back(document: dict[str, Any]) -> dict[str, Any]:
    """Writes a judge decision back to praxisd's memory (idempotent per its
    ``idempotency_key``); the API's answer, or the error when it refused."""
    try:
        return api("POST", "/v1/judge/decisions", document, MEMORY_TIMEOUT)
    except RuntimeError as e:
        return {"error": str(e)}


def _refusal_message(decision: dict[str, Any]) -> str:
    message = f"praxis {decision['decision']}: the command was not run ({decision.get('reason', '')})."
    if decision.get("approve_with"):
        message += f" An operator can allow it with `{decision['approve_with']}`; then retry the same command."
    elif decision["decision"] == "STOP":
        message += " It cannot be approved; choose another approach."
    return message


@tool_input_guardrail
def praxis_guardrail(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
    """Recalls, asks praxisd before the tool runs, and writes the decision
    back; HOLD and STOP reject the call."""
    try:
        arguments = json.loads(data.context.tool_arguments or "{}")
        command = arguments["command"]
        if not isinstance(command, str):
            raise TypeError("command is not a string")
    except (ValueError, KeyError, TypeError) as e:
        decision = {"decision": "HOLD", "execution_prevented": True, "reason": f"unreadable tool arguments: {e}"}
        return ToolGuardrailFunctionOutput.reject_content(_refusal_message(decision), output_info=decision)
    # Recall runs beside the decision (praxisd consults memory for the
    # decision itself), so it adds no wait of its own.
    with ThreadPoolExecutor(max_workers=1) as pool:
        recalling = pool.submit(recall, command, data.context.tool_call_id)
        decision = judge_proposal(proposal(command, data.context.tool_call_id, data.context.tool_name))
        decision["recalled"] = recalling.result()
    document = decision.get("judge_decision")
    # A decision praxisd never made (it did not answer in time) is not
    # written back to it: that would only wait on it once more.
    if document and not document["decision_id"].startswith("praxis-unjudged-"):
        decision["written_back"] = write_back(document)
    if decision["decision"] == "ALLOW":
        return ToolGuardrailFunctionOutput.allow(output_info=decision)
    return ToolGuardrailFunctionOutput.reject_content(_refusal_message(decision), output_info=decision)


def run(command: str, timeout_s: int | None = None, tool_call_id: str | None = None) -> str:
    """Runs ``command`` through praxis-run; the exit code, stdout and stderr as text."""
    argv = [_praxis_run(), *_ids(tool_call_id)]
    if timeout_s:
        argv += ["--timeout", str(int(timeout_s))]
    argv += ["-c", command]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    except OSError as e:
        return f"exit code: 125\npraxis-run could not start: {e}"
    text = f"exit code: {done.returncode}\n"
    if done.stdout:
        text += f"stdout:\n{done.stdout}"
    if done.stderr:
        text += f"stderr:\n{done.stderr}"
    return text


@function_tool(tool_input_guardrails=[praxis_guardrail])
def shell(command: str, timeout_s: int | None = None) -> str:
    """Run one shell command (bash) on this host through Praxis.

    Args:
        command: The command line.
        timeout_s: Wall-clock limit in seconds (policy may set a lower one).
    """
    return run(command, timeout_s)
