"""Runs commands through `praxis-run mcp --session ID` with the official MCP
Python SDK's stdio client, one tool call each, in order.

Usage: python3 mcp_session.py PRAXIS_RUN SESSION COMMAND...
Prints one JSON list: for each call, its text, structured content and
is_error. The Rust e2e test (tests/tests/mcp.rs) checks where the session
control plane's steer lands in them.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_client import result_json


async def calls(praxis_run, session, commands):
    params = StdioServerParameters(
        command=praxis_run, args=["mcp", "--session", session], env=dict(os.environ), cwd=os.getcwd()
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            return [result_json(await s.call_tool("run_command", {"command": c})) for c in commands]


if __name__ == "__main__":
    print(json.dumps(asyncio.run(calls(sys.argv[1], sys.argv[2], sys.argv[3:]))))
