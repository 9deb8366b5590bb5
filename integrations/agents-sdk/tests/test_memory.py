"""Judgment memory around the guardrail, with the real openai-agents
package: recall before the decision, write-back after. Needs PRAXIS_RUN, a
reachable daemon and PRAXIS_WORKSPACE, a git work tree in which praxisd holds
a confirmed lesson for pushes to non-default branches (the Rust e2e test
tests/tests/agents_sdk.rs prepares all three)."""

import asyncio
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from agents import Agent, ToolInputGuardrailData  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402

import praxis_agents  # noqa: E402


def guard(command, call_id):
    context = ToolContext(
        context=None, tool_name="shell", tool_call_id=call_id, tool_arguments=json.dumps({"command": command})
    )
    data = ToolInputGuardrailData(context=context, agent=Agent(name="t"))
    return asyncio.run(praxis_agents.praxis_guardrail.run(data))


class Memory(unittest.TestCase):
    def setUp(self):
        self.cwd = os.getcwd()
        os.chdir(os.environ["PRAXIS_WORKSPACE"])

    def tearDown(self):
        os.chdir(self.cwd)

    def test_a_confirmed_lesson_is_recalled_allows_and_the_decision_is_written_back(self):
        out = guard("git push origin feature/sdk", "call_mem_1")
        info = out.output_info
        self.assertEqual(out.behavior["type"], "allow", info)
        recalled = [m["memory_id"] for m in info["recalled"]["memories"]]
        self.assertEqual(len(recalled), 1, info["recalled"])
        self.assertTrue(recalled[0].startswith("lesson-"), recalled)
        used = info["judge_decision"]["memory_used"]
        self.assertEqual(used, [{"memory_id": recalled[0], "used_as": "instruction"}])
        self.assertEqual(info["written_back"]["replayed"], False, info["written_back"])
        decision_id = info["written_back"]["decision_id"]
        stored = praxis_agents.api("GET", f"/v1/judge/decisions/{decision_id}")
        self.assertEqual(stored["decision"], "allow")
        self.assertEqual(stored["idempotency_key"], f"{praxis_agents.session_id()}/call_mem_1")

    def test_a_held_call_is_rejected_and_written_back_as_an_escalation(self):
        out = guard("git push origin main", "call_mem_2")
        info = out.output_info
        self.assertEqual(out.behavior["type"], "reject_content", info)
        self.assertEqual(info["decision"], "HOLD")
        self.assertIn("praxis approve r-", out.behavior["message"])
        self.assertEqual(info["judge_decision"]["decision"], "escalate")
        stored = praxis_agents.api("GET", f"/v1/judge/decisions/{info['written_back']['decision_id']}")
        self.assertEqual(stored["escalation"]["required"], True)

    def test_an_unreachable_api_recalls_nothing_and_says_why(self):
        saved = os.environ["PRAXIS_RUN"]
        os.environ["PRAXIS_RUN"] = "/nonexistent/praxis-run"
        try:
            recalled = praxis_agents.recall("git push origin feature/x")
        finally:
            os.environ["PRAXIS_RUN"] = saved
        self.assertEqual(recalled["memories"], [])
        self.assertEqual(recalled["warnings"][0]["code"], "recall_unavailable")


if __name__ == "__main__":
    unittest.main()
