"""The official Python MCP SDK (pinned in requirements.txt) as an HTTP client
of `browser-shell mcp --http`: initialize, list the tools, call one, and
close the session (the SDK sends DELETE). Arguments: the endpoint URL and the
bearer token. Prints one JSON line: what it saw and every warning the SDK
logged (a failed session termination is one)."""

import asyncio
import json
import logging
import sys

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


async def main(url, token):
    warnings = Collect()
    logging.getLogger().addHandler(warnings)
    seen = {}
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                initialized = await session.initialize()
                seen["server"] = initialized.server_info.name
                tools = await session.list_tools()
                seen["tools"] = len(tools.tools)
                seen["titled"] = sum(1 for tool in tools.tools if tool.title)
                tabs = await session.call_tool("browser_list_tabs", {})
                seen["list_tabs_is_error"] = bool(tabs.is_error)
    seen["warnings"] = warnings.messages
    print(json.dumps(seen))


asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), 60))
