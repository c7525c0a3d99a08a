"""The first-five-minutes ergonomics: test client, inferred output schemas, typed elicitation,
dataclass arguments, typed template variables, lifespan, run(transport=...), the package's dir()."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import pytest

import mcp_agent_kit
from mcp_agent_kit import Context, Elicited, RpcError, Server, ToolResult
from mcp_agent_kit.testing import accept, cancel, decline

ROOT = Path(__file__).resolve().parents[2]
ERAS = ("2026-07-28", "2025-11-25")


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


@dataclasses.dataclass
class Segment:
    start: Point
    end: Point


class Box(TypedDict):
    width: int
    label: NotRequired[str]


class Size(enum.Enum):
    S = "small"
    L = "large"


@dataclasses.dataclass
class Booking:
    name: str
    nights: int
    size: Size
    breakfast: bool = False
    note: str | None = None


class Opaque:
    """A class with no JSON Schema."""


class Contact(TypedDict):
    email: Annotated[str, {"format": "email"}]
    phone: NotRequired[str]


def make() -> Server:
    server = Server("ergonomics")

    @server.tool
    def shout(text: str) -> str:
        return text.upper()

    @server.tool
    def count(n: int) -> int:
        return n

    @server.tool
    def pair(a: int) -> list[int]:
        return [a, a]

    @server.tool
    def stats(values: list[float]) -> dict[str, float]:
        return {"total": sum(values)}

    @server.tool
    def point(x: int) -> Point:
        return Point(x, x + 1)

    @server.tool
    def untyped(x: int):  # type: ignore[no-untyped-def]
        return {"x": x}

    @server.tool
    def nothing() -> None:
        return None

    @server.tool
    def anything() -> Any:
        return 1

    @server.tool
    def full() -> ToolResult:
        return ToolResult(structured={"a": 1})

    @server.tool
    def liar() -> int:
        return "not a number"  # type: ignore[return-value]

    @server.tool(output_schema=False)
    def opted_out() -> int:
        return 3

    @server.tool(output_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    def explicit() -> int:
        return {"n": 1}  # type: ignore[return-value]

    @server.tool
    def length(segment: Segment, box: Box, maybe: Point | None = None) -> dict[str, Any]:
        assert isinstance(segment, Segment) and isinstance(segment.start, Point)
        assert type(box) is dict and (maybe is None or isinstance(maybe, Point))
        return {"dx": segment.end.x - segment.start.x, "width": box["width"], "maybe": maybe is not None}

    @server.resource("items://{item_id}")
    def item(item_id: int) -> dict[str, Any]:
        return {"id": item_id, "kind": type(item_id).__name__}

    @server.resource("sizes://{size}/{flag}")
    def sized(size: Size, flag: bool) -> str:
        return f"{size.name} {flag!r}"

    @server.tool
    def confirm(ctx: Context) -> str:
        answer = ctx.elicit("Go on?", bool)
        return f"{answer.action}:{answer.data!r}"

    @server.tool
    def choose(ctx: Context) -> str:
        answer = ctx.elicit("Which?", Literal["red", "blue"], key="colour")
        return f"{answer.action}:{answer.data!r}"

    @server.tool
    def book(ctx: Context) -> str:
        answer = ctx.elicit("Booking details", Booking)
        if not answer.accepted:
            return answer.action
        booking = answer.data
        assert isinstance(booking, Booking)
        return f"{booking.name} {booking.nights} {booking.size.name} {booking.breakfast} {booking.note}"

    @server.tool
    def contact(ctx: Context) -> str:
        answer = ctx.elicit("Contact", Contact)
        return json.dumps(answer.data)

    @server.tool
    async def arate(ctx: Context) -> str:
        answer = await ctx.aelicit("Rate 1-5", int)
        return f"{answer.data!r}:{type(answer.data).__name__}"

    @server.tool
    def raw(ctx: Context) -> str:
        answer = ctx.elicit("raw", {"type": "object", "properties": {"a": {"type": "string"}}})
        return f"{type(answer).__name__}:{answer.get('action')}"

    return server


@pytest.fixture
def server() -> Server:
    return make()


# ---- 8. the test client ----------------------------------------------------------------------------
@pytest.mark.parametrize("era", ERAS)
def test_the_test_client_speaks_each_era(server: Server, era: str) -> None:
    client = server.test_client(era)
    names = [tool["name"] for tool in client.list_tools()]
    assert client.conn.era == ("modern" if era == "2026-07-28" else "legacy")
    assert names == sorted(names) and "shout" in names
    assert client.call_tool("shout", {"text": "hi"})["content"] == [{"type": "text", "text": "HI"}]
    assert client.call_tool("shout", {"text": 5})["isError"] is True
    with pytest.raises(RpcError) as raised:
        client.call_tool("no_such_tool")
    assert raised.value.code == -32602
    assert [t["uriTemplate"] for t in client.list_resource_templates()] == ["items://{item_id}", "sizes://{size}/{flag}"]


def test_the_test_client_pages_through_lists() -> None:
    server = Server("paged", page_size=1)
    for name in ("a", "b", "c"):
        server.add_tool(lambda: "x", name=name)
    assert [tool["name"] for tool in server.test_client().list_tools()] == ["a", "b", "c"]


def test_the_test_client_refuses_an_unknown_era(server: Server) -> None:
    with pytest.raises(ValueError, match="unknown protocol version"):
        server.test_client("2020-01-01")


def test_a_question_without_an_answer_is_a_clear_failure(server: Server) -> None:
    with pytest.raises(AssertionError, match="no answer was given"):
        server.test_client().call_tool("confirm")
    result = server.test_client("2025-11-25").call_tool("confirm")
    assert result["isError"] is True and "no answer was given" in result["content"][0]["text"]


@pytest.mark.parametrize("era", ERAS)
def test_an_on_input_callback_answers_questions(server: Server, era: str) -> None:
    asked: list[tuple[str, str]] = []

    def on_input(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append((method, params["message"]))
        return accept({"value": True})

    client = server.test_client(era, on_input=on_input)
    assert client.call_tool("confirm")["structuredContent"] == {"result": "accept:True"}
    assert asked == [("elicitation/create", "Go on?")]


# ---- 2. output schemas from return annotations -----------------------------------------------------
def test_output_schemas_are_inferred_from_return_annotations(server: Server) -> None:
    schemas = {tool["name"]: tool.get("outputSchema") for tool in server.test_client().list_tools()}
    wrapped = {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}
    assert schemas["shout"] == wrapped
    assert schemas["count"]["properties"]["result"] == {"type": "integer"}
    assert schemas["pair"]["properties"]["result"] == {"type": "array", "items": {"type": "integer"}}
    assert schemas["stats"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert schemas["point"] == {
        "type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
        "required": ["x"], "additionalProperties": False,
    }
    for name in ("untyped", "nothing", "anything", "full", "opted_out"):
        assert schemas[name] is None, name
    assert schemas["explicit"] == {"type": "object", "properties": {"n": {"type": "integer"}}}


@pytest.mark.parametrize("era", ERAS)
def test_inferred_results_are_structured(server: Server, era: str) -> None:
    client = server.test_client(era)
    shout = client.call_tool("shout", {"text": "hi"})
    assert shout["structuredContent"] == {"result": "HI"} and shout["content"][0]["text"] == "HI"
    count = client.call_tool("count", {"n": 3})
    assert count["structuredContent"] == {"result": 3} and count["content"][0]["text"] == "3"
    assert client.call_tool("pair", {"a": 2})["structuredContent"] == {"result": [2, 2]}
    assert client.call_tool("stats", {"values": [1, 2]})["structuredContent"] == {"total": 3}
    point = client.call_tool("point", {"x": 1})
    assert point["structuredContent"] == json.loads(point["content"][0]["text"]) == {"x": 1, "y": 2}
    assert client.call_tool("untyped", {"x": 1})["structuredContent"] == {"x": 1}
    assert client.call_tool("opted_out").get("structuredContent") == (3 if era == "2026-07-28" else None)  # as before
    assert client.call_tool("full")["structuredContent"] == {"a": 1}


def test_loose_mappings_and_content_blocks_infer_no_schema() -> None:
    from mcp_agent_kit import content

    server = Server("loose", "1.0")

    @server.tool(read_only=True)
    def picture() -> dict[str, Any]:
        """Use when a picture is wanted. Do not use for text."""
        return content.image("iVBORw0KGgo=", "image/png")

    tool = server.get_tool("picture")
    assert tool is not None and "outputSchema" not in tool.wire
    result = server.test_client().call_tool("picture")
    assert result["content"][0]["type"] == "image" and "structuredContent" not in result


@pytest.mark.parametrize("era", ERAS)
def test_a_result_breaking_its_inferred_schema_is_a_server_error(server: Server, era: str) -> None:
    with pytest.raises(RpcError) as raised:
        server.test_client(era).call_tool("liar")
    assert raised.value.code == -32603 and "outputSchema" in raised.value.message


def test_wire_bytes_of_a_wrapped_result_are_consistent(server: Server) -> None:
    from mcp_agent_kit.wire.reply import encode_reply

    reply = server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}},
        "name": "count", "arguments": {"n": 7}}})
    assert reply is not None
    decoded = json.loads(encode_reply(reply))
    assert decoded["result"]["structuredContent"] == {"result": 7} and decoded["result"]["content"][0]["text"] == "7"


def test_plain_tools_keep_their_own_function(server: Server) -> None:
    tool = server.get_tool("stats")
    assert tool is not None and tool.handler.fn.__name__ == "stats" and tool.handler.plain


# ---- 1. typed elicitation ----------------------------------------------------------------------------
def test_typed_forms_build_flat_primitive_schemas() -> None:
    from mcp_agent_kit.core.elicit_types import form

    assert form(bool).schema == {"type": "object", "properties": {"value": {"type": "boolean"}}, "required": ["value"]}
    assert form(Literal["a", "b"]).schema["properties"]["value"] == {"type": "string", "enum": ["a", "b"]}
    sizes = {"type": "array", "items": {"type": "string", "enum": ["small", "large"]}}
    assert form(list[Size]).schema["properties"]["value"] == sizes
    booking = form(Booking).schema
    assert booking["required"] == ["name", "nights", "size"]
    assert booking["properties"]["size"] == {"type": "string", "enum": ["small", "large"]}
    assert booking["properties"]["note"] == {"type": "string"}
    contact = form(Contact).schema
    assert contact["properties"]["email"] == {"type": "string", "format": "email"} and contact["required"] == ["email"]
    for bad in (Segment, dict, list[int], Literal[1, 2]):
        with pytest.raises(TypeError, match="a form cannot ask for"):
            form(bad)


@pytest.mark.parametrize("era", ERAS)
def test_typed_elicitation_returns_typed_answers(server: Server, era: str) -> None:
    client = server.test_client(era)
    text = lambda result: result["structuredContent"]["result"]  # noqa: E731
    assert text(client.call_tool("confirm", answers=[accept({"value": False})])) == "accept:False"
    assert text(client.call_tool("confirm", answers=[decline()])) == "decline:None"
    assert text(client.call_tool("confirm", answers=[cancel()])) == "cancel:None"
    assert text(client.call_tool("choose", answers=[accept({"value": "blue"})])) == "accept:'blue'"
    booked = client.call_tool("book", answers=[accept({"name": "Ada", "nights": 2.0, "size": "large"})])
    assert text(booked) == "Ada 2 L False None"
    assert text(client.call_tool("book", answers=[decline()])) == "decline"
    assert json.loads(text(client.call_tool("contact", answers=[accept({"email": "a@b.c"})]))) == {"email": "a@b.c"}
    assert text(client.call_tool("arate", answers=[accept({"value": 4})])) == "4:int"
    assert text(client.call_tool("raw", answers=[accept({"a": "x"})])) == "dict:accept"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("tool", "answer"), [
    ("confirm", accept({"value": "yes"})),
    ("confirm", accept({})),
    ("choose", accept({"value": "green"})),
    ("book", accept({"name": "Ada", "nights": "two", "size": "large"})),
    ("book", accept({"name": "Ada", "nights": 1, "size": "medium"})),
    ("arate", accept({"value": True})),
    ("confirm", {"action": "maybe"}),
])
def test_a_wrong_answer_is_a_clear_tool_error(server: Server, era: str, tool: str, answer: dict[str, Any]) -> None:
    result = server.test_client(era).call_tool(tool, answers=[answer])
    message = result["content"][0]["text"]
    assert result["isError"] is True
    assert "does not match the form" in message or "not an ElicitResult" in message


def test_the_modern_round_carries_the_built_schema(server: Server) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    reply = server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"_meta": meta, "name": "choose", "arguments": {}}})
    assert reply is not None and reply["result"]["resultType"] == "input_required"
    request = reply["result"]["inputRequests"]["colour"]
    assert request["params"]["requestedSchema"]["properties"]["value"]["enum"] == ["red", "blue"]


def test_elicited_is_exported_and_readable() -> None:
    answer: Elicited[bool] = Elicited("accept", True, {"value": True})
    assert answer.accepted and repr(answer) == "Elicited(action='accept', data=True)"


# ---- 4. dataclass and TypedDict parameters -----------------------------------------------------------
@pytest.mark.parametrize("era", ERAS)
def test_dataclass_parameters_get_schemas_and_instances(server: Server, era: str) -> None:
    tool = server.get_tool("length")
    assert tool is not None
    props = tool.input_schema["properties"]
    assert props["segment"]["properties"]["start"]["required"] == ["x"]
    assert props["box"] == {"type": "object", "properties": {"width": {"type": "integer"}, "label": {"type": "string"}},
                            "required": ["width"]}
    client = server.test_client(era)
    result = client.call_tool("length", {"segment": {"start": {"x": 1}, "end": {"x": 4, "y": 1}}, "box": {"width": 2},
                                         "maybe": {"x": 0}})
    assert result["structuredContent"] == {"dx": 3, "width": 2, "maybe": True}
    bad = client.call_tool("length", {"segment": {"start": {"x": 1, "z": 0}, "end": {"x": 4}}, "box": {"width": 2}})
    assert bad["isError"] is True and "Invalid arguments" in bad["content"][0]["text"]


def test_a_parameter_type_without_a_schema_is_refused_at_registration() -> None:
    server = Server("strict")

    def handle(thing: Opaque) -> str:
        return "x"

    with pytest.raises(ValueError, match=r"tool 'handle': parameter 'thing': no JSON Schema for its type .*Opaque"):
        server.add_tool(handle)
    server.add_tool(handle, input_schema={"type": "object", "properties": {}})  # explicit schemas still work


# ---- 3. typed template variables ---------------------------------------------------------------------
@pytest.mark.parametrize(("era", "code"), [("2026-07-28", -32602), ("2025-11-25", -32002)])
def test_template_variables_are_converted_by_their_hints(server: Server, era: str, code: int) -> None:
    client = server.test_client(era)
    assert json.loads(client.read_resource("items://42")["contents"][0]["text"]) == {"id": 42, "kind": "int"}
    assert client.read_resource("sizes://large/true")["contents"][0]["text"] == "L True"
    for uri in ("items://forty-two", "sizes://medium/true", "sizes://small/perhaps"):
        with pytest.raises(RpcError) as raised:
            client.read_resource(uri)
        assert raised.value.code == code and uri in raised.value.message


# ---- 5. lifespan ----------------------------------------------------------------------------------------
def test_lifespan_runs_once_around_in_process_use() -> None:
    events: list[str] = []

    server = Server("life")

    @server.lifespan
    def life(srv: Server) -> Iterator[dict[str, str]]:
        events.append(f"enter {srv.name}")
        yield {"db": "open"}
        events.append("exit")

    @server.tool
    def db(ctx: Context) -> str:
        return str(ctx.lifespan)

    assert server.test_client().call_tool("db")["structuredContent"] == {"result": "None"}
    with server.running() as value, server.test_client("2025-11-25") as client:
        assert value == {"db": "open"} and events == ["enter life"]
        assert client.call_tool("db")["structuredContent"] == {"result": "{'db': 'open'}"}
    assert events == ["enter life", "exit"] and server.lifespan_value is None


def test_an_async_lifespan_runs_on_the_handlers_loop() -> None:
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def life(srv: Server) -> Any:
        import asyncio

        events.append("enter")
        yield asyncio.get_running_loop()
        events.append("exit")

    server = Server("alife", lifespan=life)

    @server.tool
    async def same_loop(ctx: Context) -> bool:
        import asyncio

        return ctx.lifespan is asyncio.get_running_loop()

    with server.test_client() as client:
        assert client.call_tool("same_loop")["structuredContent"] == {"result": True}
    assert events == ["enter", "exit"]


LIFESPAN_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from mcp_agent_kit import Context, Server

def life(server):
    print("ENTER", file=sys.stderr, flush=True)
    yield "the-db"
    print("EXIT", file=sys.stderr, flush=True)

server = Server("life", lifespan=life)

@server.tool
def db(ctx: Context) -> str:
    return ctx.lifespan

code = server.run(transport={transport!r}{extra})
print("RETURNED", code, file=sys.stderr, flush=True)
"""
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def _script(tmp_path: Path, transport: str, extra: str = "") -> Path:
    script = tmp_path / "life_server.py"
    script.write_text(textwrap.dedent(LIFESPAN_SCRIPT.format(root=str(ROOT), transport=transport, extra=extra)))
    return script


def test_stdio_lifespan_exits_on_eof_and_run_returns(tmp_path: Path) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": META, "name": "db"}}
    done = subprocess.run([sys.executable, str(_script(tmp_path, "stdio"))], input=json.dumps(call) + "\n",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["structuredContent"] == {"result": "the-db"}
    lines = [line for line in done.stderr.splitlines() if line.split()[0] in ("ENTER", "EXIT", "RETURNED")]
    assert lines == ["ENTER", "EXIT", "RETURNED 0"]


def test_stdio_lifespan_exits_on_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, str(_script(tmp_path, "stdio"))], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None and proc.stderr.readline().strip() == "ENTER"
        assert proc.stdin is not None and proc.stdout is not None
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                                     "params": {"_meta": meta}}) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # serving: its signal handlers are in place
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0 and "EXIT" in err.split(), err


def test_http_run_returns_when_stopped_and_leaves_the_lifespan(tmp_path: Path) -> None:
    import urllib.request

    proc = subprocess.Popen([sys.executable, str(_script(tmp_path, "http", ", host='127.0.0.1', port=0"))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        seen = [proc.stderr.readline().strip() for _ in range(2)]
        assert seen[0] == "ENTER", seen
        url = seen[1].split(" at ")[1]
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"_meta": META, "name": "db"}}).encode()
        request = urllib.request.Request(url, body, {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "db",
        })
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.loads(response.read())["result"]["structuredContent"] == {"result": "the-db"}
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0 and err.split()[-3:] == ["EXIT", "RETURNED", "0"], err


# ---- 6. run(transport=...) argument checks ------------------------------------------------------------
def test_run_refuses_mixed_or_unknown_forms(server: Server) -> None:
    with pytest.raises(ValueError, match="not both"):
        server.run(["--http", "x"], transport="http")
    with pytest.raises(ValueError, match="unknown transport"):
        server.run(transport="carrier-pigeon")  # type: ignore[arg-type]


# ---- 7. dir() of the package ---------------------------------------------------------------------------
def test_the_package_lists_its_lazy_public_api() -> None:
    listed = dir(mcp_agent_kit)
    assert set(mcp_agent_kit.__all__) <= set(listed)
    assert {"Server", "Context", "TestClient", "Elicited", "content"} <= set(listed)
    assert listed == sorted(listed)


def test_a_structured_result_with_an_odd_type_field_is_still_structured() -> None:
    from mcp_agent_kit.core.content import is_content_block, tool_result

    for odd in ({"type": []}, {"type": {"a": 1}}, {"type": 3}):
        assert not is_content_block(odd)
        assert tool_result(odd, structured=True)["structuredContent"] == odd
