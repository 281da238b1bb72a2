#!/usr/bin/env python3
"""Smoke test of the Windows browser-shell.exe under Wine: it serves MCP
over stdio with --connect to a Chromium running on Linux, and an agent's
round trip works: open a fixture, snapshot, click by ref (the page's
counter goes to 1), screenshot (a PNG), content (markdown).

usage: smoke.py WINE EXE CDP_URL FIXTURES_URL
"""
import base64
import json
import subprocess
import sys

wine, exe, cdp, base = sys.argv[1:5]
server = subprocess.Popen(
    [wine, exe, "mcp", "--connect", cdp],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
)
next_id = 0


def request(method, params):
    global next_id
    next_id += 1
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}) + "\n")
    server.stdin.flush()
    while True:
        line = server.stdout.readline()
        if not line:
            raise SystemExit("the server ended: " + server.stderr.read()[-2000:])
        message = json.loads(line)
        if message.get("id") == next_id:
            return message


def call(name, arguments):
    result = request("tools/call", {"name": name, "arguments": arguments})["result"]
    if result.get("isError"):
        raise SystemExit(f"{name} failed: {result}")
    return result["content"]


init = request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "wine-smoke", "version": "1"}})
assert init["result"]["serverInfo"]["name"] == "browser-shell", init
server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
server.stdin.flush()

opened = call("browser_open", {"url": base + "/form.html"})[0]["text"]
assert "form.html" in opened and "HTTP 200" in opened, opened
snapshot = call("browser_snapshot", {})[0]["text"]
assert 'textbox "Full name"' in snapshot, snapshot
line = next(l for l in snapshot.splitlines() if 'button "Add one"' in l)
ref = line.split("[ref=")[1].split("]")[0]
call("browser_act", {"action": "click", "ref": ref})
count = call("browser_execute", {"script": "document.getElementById('count').textContent"})[0]["text"]
assert '"1"' in count or "\n1" in count or count.strip().endswith("1"), count
shot = [c for c in call("browser_screenshot", {}) if c["type"] == "image"][0]
assert base64.b64decode(shot["data"])[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
markdown = call("browser_content", {"format": "markdown"})[0]["text"]
assert "Sign up" in markdown, markdown
server.stdin.close()
server.wait(timeout=30)
print("windows smoke: ok (open, snapshot, click, execute, screenshot, content)")
