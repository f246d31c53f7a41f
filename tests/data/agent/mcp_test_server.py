#!/usr/bin/env python3
"""A small MCP server over stdio for kiln's agent tests (standard library only).

Tools: add (two numbers), fail (always an error result), hang (never answers;
the server keeps serving other requests), env (the KILN_TEST_VAR variable and the
folder it runs in). Also one resource and one prompt. Modes (first argument):
  --crash-on-call   exit with status 3 at the first tools/call (after a stderr line)
  --malformed       answer every tools/call with a line that is not JSON
  --crash-at-start  exit with status 4 before reading anything
  --old-protocol    answer initialize with protocol revision 1999-01-01
The two failing modes offer only the add tool.
"""
import json
import os
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else ""
ONLY_ADD = MODE in ("--crash-on-call", "--malformed")

TOOLS = [
    {"name": "add", "description": "Adds two numbers a and b",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                     "required": ["a", "b"], "additionalProperties": False}},
    {"name": "fail", "description": "Always fails",
     "inputSchema": {"type": "object", "properties": {"reason": {"type": "string"}}}},
    {"name": "hang", "description": "Never answers",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "env", "description": "Shows KILN_TEST_VAR and the working folder",
     "inputSchema": {"type": "object", "properties": {}}},
]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def text(t, error=False):
    return {"content": [{"type": "text", "text": t}], "isError": error}


def main():
    if MODE == "--crash-at-start":
        sys.stderr.write("test server: crashing at start\n")
        sys.exit(4)
    for raw in sys.stdin:
        try:
            req = json.loads(raw)
        except ValueError:
            continue
        method, rid = req.get("method"), req.get("id")
        if method is None or rid is None:  # a notification, or the answer to our ping
            continue
        params = req.get("params") or {}
        if method == "initialize":
            version = "1999-01-01" if MODE == "--old-protocol" else params.get("protocolVersion", "2025-06-18")
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": version,
                "capabilities": {"tools": {}} if ONLY_ADD else {"tools": {}, "resources": {}, "prompts": {}},
                "serverInfo": {"name": "kiln-test", "version": "1"}}})
        elif method == "tools/list":
            # Two pages, to exercise nextCursor.
            if ONLY_ADD:
                send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS[:1]}})
            elif params.get("cursor") == "page2":
                send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS[2:]}})
            else:
                send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS[:2], "nextCursor": "page2"}})
        elif method == "resources/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"resources": [
                {"uri": "test://greeting", "name": "greeting", "mimeType": "text/plain"}]}})
        elif method == "resources/read":
            if params.get("uri") == "test://greeting":
                send({"jsonrpc": "2.0", "id": rid, "result": {"contents": [
                    {"uri": "test://greeting", "mimeType": "text/plain", "text": "Hello from the test server"}]}})
            else:
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32002, "message": "Resource not found"}})
        elif method == "prompts/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"prompts": [
                {"name": "review", "description": "Review code", "arguments": [{"name": "code", "required": True}]}]}})
        elif method == "prompts/get":
            code = (params.get("arguments") or {}).get("code", "")
            send({"jsonrpc": "2.0", "id": rid, "result": {"messages": [
                {"role": "user", "content": {"type": "text", "text": "Please review: " + code}}]}})
        elif method == "tools/call":
            if MODE == "--crash-on-call":
                sys.stderr.write("test server: crashing on tools/call\n")
                sys.stderr.flush()
                sys.exit(3)
            if MODE == "--malformed":
                sys.stdout.write("{this is not json\n")
                sys.stdout.flush()
                continue
            name, args = params.get("name"), params.get("arguments") or {}
            # A log notification and a ping request first: the client must skip
            # the one and answer the other.
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": name}})
            send({"jsonrpc": "2.0", "id": "server-ping", "method": "ping"})
            if name == "add":
                send({"jsonrpc": "2.0", "id": rid, "result": text(str(args["a"] + args["b"]))})
            elif name == "fail":
                send({"jsonrpc": "2.0", "id": rid, "result": text("the fail tool failed: " + args.get("reason", "always"), True)})
            elif name == "hang":
                pass  # never answered
            elif name == "env":
                send({"jsonrpc": "2.0", "id": rid, "result": text(os.environ.get("KILN_TEST_VAR", "") + " " + os.getcwd())})
            else:
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Unknown tool: " + str(name)}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
