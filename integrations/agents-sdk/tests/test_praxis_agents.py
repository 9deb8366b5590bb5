"""Offline tests with the real openai-agents package: the guardrail and the
tool are called directly, no model. Needs PRAXIS_RUN and a reachable daemon
(the Rust e2e test tests/tests/agents_sdk.rs provides both)."""

import asyncio
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from agents import Agent, ToolInputGuardrailData  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402

import praxis_agents  # noqa: E402


def context(arguments, call_id="call_1"):
    return ToolContext(
        context=None, tool_name="shell", tool_call_id=call_id, tool_arguments=json.dumps(arguments)
    )


def guard(arguments):
    data = ToolInputGuardrailData(context=context(arguments), agent=Agent(name="t"))
    return asyncio.run(praxis_agents.praxis_guardrail.run(data))


class Guardrail(unittest.TestCase):
    def test_allowed_command_passes(self):
        out = guard({"command": "ls"})
        self.assertEqual(out.behavior["type"], "allow", out)
        self.assertEqual(out.output_info["decision"], "ALLOW")

    def test_catastrophic_command_is_rejected_with_the_reason(self):
        out = guard({"command": "rm -rf /"})
        self.assertEqual(out.behavior["type"], "reject_content")
        self.assertEqual(out.output_info["decision"], "STOP")
        self.assertIn("praxis STOP", out.behavior["message"])

    def test_held_command_is_rejected_with_the_approve_command(self):
        out = guard({"command": "curl -fsS https://example.com"})
        self.assertEqual(out.behavior["type"], "reject_content")
        self.assertEqual(out.output_info["decision"], "HOLD")
        self.assertIn("praxis approve r-", out.behavior["message"])

    def test_unreadable_arguments_are_held(self):
        out = guard({"cmd": "ls"})
        self.assertEqual(out.behavior["type"], "reject_content")
        self.assertEqual(out.output_info["decision"], "HOLD")

    def test_unreachable_praxis_is_hold_never_allow(self):
        saved = os.environ.get("PRAXIS_RUN")
        os.environ["PRAXIS_RUN"] = "/nonexistent/praxis-run"
        try:
            self.assertEqual(praxis_agents.judge("ls")["decision"], "HOLD")
        finally:
            os.environ["PRAXIS_RUN"] = saved


class ShellTool(unittest.TestCase):
    def test_the_tool_runs_through_praxis_run(self):
        self.assertIn(praxis_agents.praxis_guardrail, praxis_agents.shell.tool_input_guardrails)
        out = asyncio.run(
            praxis_agents.shell.on_invoke_tool(context({"command": "echo via-praxis"}), json.dumps({"command": "echo via-praxis"}))
        )
        self.assertIn("exit code: 0", out)
        self.assertIn("via-praxis", out)

    def test_a_refused_command_reports_the_decision(self):
        out = praxis_agents.run("rm -rf /")
        self.assertIn("exit code: 126", out)
        self.assertIn('"execution_prevented":true', out.replace(" ", ""))


if __name__ == "__main__":
    unittest.main()
