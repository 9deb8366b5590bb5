"""Praxis for the OpenAI Agents SDK.

``shell`` is a function tool that runs a command through ``praxis-run``: the
daemon decides before it runs, runs what it allows in its sandbox, and audits
every call. ``praxis_guardrail`` is a tool input guardrail that asks the
daemon for its decision first (``praxis-run judge``), so a HOLD or STOP never
reaches the tool and the model gets the reason instead (``reject_content``).

The agent's session id for the audit record is ``PRAXIS_SESSION`` if set,
else one per process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from typing import Any

from agents import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailData,
    function_tool,
    tool_input_guardrail,
)

__all__ = ["RUNTIME", "judge", "praxis_guardrail", "run", "session_id", "shell"]

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


def _refusal_message(decision: dict[str, Any]) -> str:
    message = f"praxis {decision['decision']}: the command was not run ({decision.get('reason', '')})."
    if decision.get("approve_with"):
        message += f" An operator can allow it with `{decision['approve_with']}`; then retry the same command."
    elif decision["decision"] == "STOP":
        message += " It cannot be approved; choose another approach."
    return message


@tool_input_guardrail
def praxis_guardrail(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
    """Asks praxisd before the tool runs; HOLD and STOP reject the call."""
    try:
        arguments = json.loads(data.context.tool_arguments or "{}")
        command = arguments["command"]
        if not isinstance(command, str):
            raise TypeError("command is not a string")
    except (ValueError, KeyError, TypeError) as e:
        decision = {"decision": "HOLD", "execution_prevented": True, "reason": f"unreadable tool arguments: {e}"}
        return ToolGuardrailFunctionOutput.reject_content(_refusal_message(decision), output_info=decision)
    decision = judge(command, data.context.tool_call_id)
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
