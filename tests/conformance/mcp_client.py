"""Drives `praxis-run mcp` with the official MCP Python SDK's stdio client.

Usage: python3 mcp_client.py PRAXIS_RUN
Prints one JSON object with what the session saw; the Rust e2e test
(tests/tests/mcp.rs) starts this against a scratch daemon and checks it.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def field(obj, snake, camel):
    """The SDK's 1.x models use camelCase attributes, 2.x snake_case."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def result_json(result):
    return {
        "is_error": bool(field(result, "is_error", "isError")),
        "text": "".join(c.text for c in result.content if getattr(c, "type", "") == "text"),
        "structured": field(result, "structured_content", "structuredContent"),
    }


async def session(praxis_run):
    params = StdioServerParameters(command=praxis_run, args=["mcp"], env=dict(os.environ), cwd=os.getcwd())
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            init = await s.initialize()
            tools = await s.list_tools()
            await s.send_ping()
            allowed = await s.call_tool("run_command", {"command": "echo praxis-mcp-ok"})
            catastrophic = await s.call_tool("run_command", {"command": "rm -rf / --no-preserve-root"})
            held = await s.call_tool("run_command", {"command": "curl -fsS https://example.com"})
            return {
                "protocol_version": field(init, "protocol_version", "protocolVersion"),
                "server": field(init, "server_info", "serverInfo").name,
                "tools": [
                    {"name": t.name, "required": field(t, "input_schema", "inputSchema").get("required", [])}
                    for t in tools.tools
                ],
                "allowed": result_json(allowed),
                "catastrophic": result_json(catastrophic),
                "held": result_json(held),
            }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(session(sys.argv[1]))))
