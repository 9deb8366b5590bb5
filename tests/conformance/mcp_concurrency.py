"""Concurrency and cancellation of `praxis-run mcp` through the official MCP
Python SDK: five one-second calls at once, a ping while they run, one call
cancelled by the client, and a client asking for an older protocol revision.

Usage: python3 mcp_concurrency.py PRAXIS_RUN
Prints one JSON object; tests/tests/mcp.rs checks it against the audit log.
"""

import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def field(obj, snake, camel):
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


async def session(praxis_run):
    params = StdioServerParameters(command=praxis_run, args=["mcp"], env=dict(os.environ), cwd=os.getcwd())
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            init = await s.initialize()
            began = time.monotonic()
            calls = [s.call_tool("run_command", {"command": f"sleep 1; echo call-{i}"}) for i in range(5)]
            pinged = asyncio.ensure_future(s.send_ping())
            results = await asyncio.gather(*calls)
            parallel = time.monotonic() - began
            await pinged
            cancelled = False
            try:
                await asyncio.wait_for(s.call_tool("run_command", {"command": "sleep 30"}), timeout=1.5)
            except (asyncio.TimeoutError, TimeoutError):
                cancelled = True
            await asyncio.sleep(1.0)
            after = await s.call_tool("run_command", {"command": "echo still-serving"})
            return {
                "protocol_version": field(init, "protocol_version", "protocolVersion"),
                "parallel_seconds": parallel,
                "texts": ["".join(c.text for c in r.content if getattr(c, "type", "") == "text") for r in results],
                "cancelled": cancelled,
                "after": "".join(c.text for c in after.content if getattr(c, "type", "") == "text"),
            }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(session(sys.argv[1]))))
