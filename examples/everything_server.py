"""The conformance fixture: every tool, resource, template and prompt the MCP conformance
scenarios call, written against the public Server API only.

Run it with `python examples/everything_server.py --http 127.0.0.1:3001` and point
`conformance server --url http://127.0.0.1:3001/mcp` at it; without `--http` it serves stdio.
The same code answers both eras: in 2026-07-28 asking the client ends the round with an
InputRequiredResult, in the handshake era it sends a request on the response stream.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from pathlib import Path
from typing import Any

from mcp_agent_kit import Context, RpcError, Server, ToolError, content
from mcp_agent_kit.core.tasks import start_task, task_tool
from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS

server = Server(
    "mcp-agent-kit-everything",
    "1.0.0",
    title="Everything (conformance fixture)",
    instructions="A fixture server exercising every MCP feature for the conformance suite.",
    skills=[Path(__file__).parent / "skills"],  # Skills over MCP (SEP-2640), with directoryRead
)

TEST_IMAGE_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
NO_ARGS = {"type": "object", "properties": {}, "additionalProperties": False}


def _checked(answer: Any) -> dict[str, Any]:
    """An ElicitResult from the client, or -32602 when it is not even an object."""
    if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
        raise RpcError(INVALID_PARAMS, "Invalid params: an elicitation response must be an ElicitResult object")
    return answer


# ---- content tools ----------------------------------------------------------------------------
@server.tool(input_schema=NO_ARGS)
def test_simple_text() -> str:
    """Tests simple text content response."""
    return "This is a simple text response for testing."


@server.tool(input_schema=NO_ARGS)
def test_image_content() -> dict[str, Any]:
    """Tests image content response."""
    return content.image(TEST_IMAGE_BASE64, "image/png")


@server.tool(input_schema=NO_ARGS)
def test_audio_content() -> dict[str, Any]:
    """Tests audio content response."""
    return content.audio(TEST_AUDIO_BASE64, "audio/wav")


@server.tool(input_schema=NO_ARGS)
def test_embedded_resource() -> dict[str, Any]:
    """Tests embedded resource content response."""
    return content.embedded_resource(
        "test://embedded-resource", text="This is an embedded resource content.", mime_type="text/plain"
    )


@server.tool(input_schema=NO_ARGS)
def test_multiple_content_types() -> list[Any]:
    """Tests response with multiple content types (text, image, resource)."""
    return [
        content.text("Multiple content types test:"),
        content.image(TEST_IMAGE_BASE64, "image/png"),
        content.embedded_resource(
            "test://mixed-content-resource", text='{"test": "data", "value": 123}', mime_type="application/json"
        ),
    ]


@server.tool(input_schema=NO_ARGS)
def test_error_handling() -> str:
    """Tests error response handling."""
    raise ToolError("This tool intentionally returns an error for testing")


# ---- notifications --------------------------------------------------------------------------------
@server.tool(input_schema=NO_ARGS)
def test_tool_with_logging(ctx: Context) -> str:
    """Tests tool that emits log messages during execution."""
    ctx.log("info", "Tool execution started")
    time.sleep(0.05)
    ctx.log("info", "Tool processing data")
    time.sleep(0.05)
    ctx.log("info", "Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool(input_schema=NO_ARGS)
def test_logging_tool(ctx: Context) -> str:
    """Logs at info level; the client sees the logs only if it asked for a logLevel."""
    ctx.log("info", "test_logging_tool ran")
    return "logged"


@server.tool(input_schema=NO_ARGS)
def test_tool_with_progress(ctx: Context) -> str:
    """Tests tool that reports progress notifications."""
    for step in (0, 50, 100):
        ctx.progress(step, 100, f"Completed step {step} of 100")
        if step < 100:
            time.sleep(0.05)
    return str(ctx.progress_token if ctx.progress_token is not None else 0)


@server.tool(input_schema=NO_ARGS)
def test_reconnection(ctx: Context) -> str:
    """Closes its SSE stream mid-call, then answers once the client has reconnected (SSE polling)."""
    if ctx.close_stream():
        time.sleep(0.3)  # the result is kept; the client fetches it with Last-Event-ID
    return "Reconnection test completed"


# ---- asking the client (both eras) -------------------------------------------------------------------
@server.tool(
    input_schema={"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}
)
def test_sampling(prompt: str, ctx: Context) -> str:
    """Tests server-initiated sampling (LLM completion request)."""
    answer = ctx.sample([{"role": "user", "content": {"type": "text", "text": prompt}}], 100)
    block = answer.get("content")
    text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else "No response"
    return f"LLM response: {text}"


@server.tool(
    input_schema={"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}
)
def test_elicitation(message: str, ctx: Context) -> str:
    """Tests server-initiated elicitation (user input request)."""
    schema = {
        "type": "object",
        "properties": {"response": {"type": "string", "description": "User's response"}},
        "required": ["response"],
    }
    answer = ctx.elicit(message, schema)
    return f"User response: action={answer.get('action')}, content={json.dumps(answer.get('content') or {})}"


SEP1034_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe", "description": "User name"},
        "age": {"type": "integer", "default": 30, "description": "User age"},
        "score": {"type": "number", "default": 95.5, "description": "User score"},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True, "description": "Verification status"},
    },
}


@server.tool(input_schema=NO_ARGS)
def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Tests elicitation with default values for all primitive types (SEP-1034)."""
    answer = ctx.elicit("Please provide user information", SEP1034_SCHEMA)
    return f"Elicitation completed: action={answer.get('action')}, content={json.dumps(answer.get('content') or {})}"


SEP1330_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


@server.tool(input_schema=NO_ARGS)
def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Tests elicitation with enum schema variations (SEP-1330)."""
    answer = ctx.elicit("Please select values using different enum schema types", SEP1330_SCHEMA)
    return f"Elicitation completed: action={answer.get('action')}, content={json.dumps(answer.get('content') or {})}"


@server.tool(input_schema=NO_ARGS)
def test_missing_capability(ctx: Context) -> str:
    """Needs sampling: a client that did not declare it gets -32021."""
    answer = ctx.sample("Say hello", 20, key="hello")
    return f"sampled: {json.dumps(answer)}"


@server.tool(input_schema=NO_ARGS)
def test_streaming_elicitation(ctx: Context) -> str:
    """Reports progress, then asks the user: the stream carries notifications, never requests."""
    ctx.progress(1, 2, "about to ask")
    answer = ctx.elicit("Streaming question: continue?", {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                        key="continue")
    return f"answered: {answer.get('action')}"


# ---- InputRequiredResult (2026-07-28) ----------------------------------------------------------------
@server.tool(input_schema=NO_ARGS)
def test_input_required_result_elicitation(ctx: Context) -> str:
    """One elicitation round (key user_name)."""
    answer = _checked(ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name"))
    name = (answer.get("content") or {}).get("name", "")
    return f"Hello, {name}! (action={answer.get('action')})"


@server.tool(input_schema=NO_ARGS)
def test_input_required_result_sampling(ctx: Context) -> str:
    """One sampling round (key capital_question)."""
    answer = ctx.sample("What is the capital of France?", 100, key="capital_question")
    block = answer.get("content")
    text = block.get("text") if isinstance(block, dict) else None
    return f"Sampling response: {text}"


@server.tool(input_schema=NO_ARGS)
def test_input_required_result_list_roots(ctx: Context) -> str:
    """One roots/list round (key client_roots)."""
    roots = ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(str(root.get("uri")) for root in roots)


@server.tool(input_schema=NO_ARGS)
def test_input_required_result_request_state(ctx: Context) -> str:
    """Round 2 proves the sealed requestState came back intact."""
    ctx.state["round"] = 1
    answer = ctx.elicit(
        "Please confirm", {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        key="confirm",
    )
    if ctx.state.get("round") != 1:
        raise ToolError("requestState was not restored")
    return f"state-ok: confirmed={(answer.get('content') or {}).get('ok')}"


@server.tool(input_schema=NO_ARGS)
def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Elicitation, sampling and roots asked at once."""
    ctx.state["asked"] = "all"
    answers = ctx.ask(
        {
            "user_name": {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": "What is your name?", "requestedSchema": NAME_SCHEMA},
            },
            "greeting": {
                "method": "sampling/createMessage",
                "params": {
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
                    "maxTokens": 50,
                },
            },
            "client_roots": {"method": "roots/list", "params": {}},
        }
    )
    name = (answers["user_name"].get("content") or {}).get("name")
    greeting = (answers["greeting"].get("content") or {}).get("text")
    roots = len(answers["client_roots"].get("roots") or [])
    return f"name={name}; greeting={greeting}; roots={roots}"


@server.tool(input_schema=NO_ARGS)
def test_input_required_result_multi_round(ctx: Context) -> str:
    """Three rounds: two questions, each with an evolving requestState, then the result."""
    first = _checked(ctx.elicit("Step 1: What is your name?", NAME_SCHEMA, key="step1"))
    ctx.state["step"] = 2
    color_schema = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
    second = _checked(ctx.elicit("Step 2: What is your favorite color?", color_schema, key="step2"))
    values = [(a.get("content") or {}) for a in (first, second)]
    return f"Completed 3 rounds: {json.dumps(values)}"


@server.tool(input_schema=NO_ARGS)
def test_input_required_result_tampered_state(ctx: Context) -> str:
    """The requestState is HMAC-sealed: a tampered one is rejected with -32602."""
    answer = ctx.elicit("Please confirm", {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                        key="confirm")
    return f"state verified: {answer.get('action')}"


@server.tool(input_schema=NO_ARGS)
def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only for what this request's clientCapabilities declare."""
    declared = ctx.client_capabilities
    requests: dict[str, dict[str, Any]] = {}
    if "elicitation" in declared:
        requests["user_name"] = {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "What is your name?", "requestedSchema": NAME_SCHEMA},
        }
    if "sampling" in declared:
        requests["greeting"] = {
            "method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 20},
        }
    if "roots" in declared:
        requests["client_roots"] = {"method": "roots/list", "params": {}}
    if not requests:
        return "no input capabilities declared; nothing to ask"
    answers = ctx.ask(requests)
    return "received: " + ", ".join(sorted(answers))


# ---- headers, schemas, runtime changes -----------------------------------------------------------------
@server.tool(
    input_schema={
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region", "description": "Routed by header"},
            "query": {"type": "string"},
        },
        "required": ["region"],
    }
)
def test_x_mcp_header(region: str, query: str = "") -> str:
    """Echoes an argument that travels in the Mcp-Param-Region header too."""
    return f"region={region} query={query}"


@server.tool(
    description="Tool with JSON Schema 2020-12 features",
    input_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    },
)
def json_schema_2020_12_tool(**arguments: Any) -> dict[str, Any]:
    return {"received": arguments}


_toggle_lock = threading.Lock()


def _dynamic_tool() -> str:
    """Appears and disappears when test_trigger_tool_change runs."""
    return "dynamic"


def _dynamic_prompt() -> str:
    """Appears and disappears when test_trigger_prompt_change runs."""
    return "dynamic prompt"


@server.tool(input_schema=NO_ARGS)
def test_trigger_tool_change() -> str:
    """Adds or removes a tool, so list-changed notifications go out."""
    with _toggle_lock:
        if server.get_tool("test_dynamic_tool") is None:
            server.add_tool(_dynamic_tool, name="test_dynamic_tool", input_schema=NO_ARGS)
            return "added test_dynamic_tool"
        server.remove_tool("test_dynamic_tool")
        return "removed test_dynamic_tool"


@server.tool(input_schema=NO_ARGS)
def test_trigger_prompt_change() -> str:
    """Adds or removes a prompt, so list-changed notifications go out."""
    with _toggle_lock:
        if server.get_prompt("test_dynamic_prompt") is None:
            server.add_prompt(_dynamic_prompt, name="test_dynamic_prompt")
            return "added test_dynamic_prompt"
        server.remove_prompt("test_dynamic_prompt")
        return "removed test_dynamic_prompt"


@server.tool(input_schema=NO_ARGS)
def test_trigger_resource_update() -> str:
    """Marks test://watched-resource as updated for its subscribers."""
    server.notify_resource_updated("test://watched-resource")
    return "updated test://watched-resource"


# ---- the tasks extension (io.modelcontextprotocol/tasks) ---------------------------------------------
@server.tool(input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
def greet(name: str) -> str:
    """Sync-only: greets at once, never as a task."""
    return f"Hello, {name}!"


@server.tool(
    long_running=True,
    input_schema={
        "type": "object",
        "properties": {"seconds": {"type": "number", "minimum": 0}, "label": {"type": "string"}},
    },
)
def slow_compute(ctx: Context, seconds: float = 1, label: str = "") -> str:
    """Sleeps `seconds` (checking for cancellation), then reports; runs as a task."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ctx.cancelled:
            return f"cancelled {label}"
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
    return f"computed {label} after {seconds}s"


@server.tool(input_schema=NO_ARGS)
def failing_job() -> str:
    """Task-only: fails as a tool (isError) after about a second."""
    time.sleep(1)
    raise ToolError("failing_job failed on purpose")


@server.tool(long_running=True, input_schema=NO_ARGS)
def protocol_error_job() -> str:
    """Task-capable: fails at the protocol level, so the task ends failed."""
    raise RpcError(INTERNAL_ERROR, "protocol_error_job: internal failure on purpose")


@server.tool(
    long_running=True,
    input_schema={"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]},
)
def confirm_delete(filename: str, ctx: Context) -> str:
    """Task-capable: asks the user to confirm, then 'deletes'."""
    schema = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
    answer = _checked(ctx.elicit(f"Delete {filename}?", schema, key="confirm_delete"))
    confirmed = answer.get("action") == "accept" and (answer.get("content") or {}).get("confirm") is True
    return f"deleted {filename}" if confirmed else f"kept {filename}"


@server.tool(long_running=True, input_schema=NO_ARGS)
def multi_input(ctx: Context) -> str:
    """Task-capable: asks two questions at once, so two inputRequests are pending together."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}}}
    answers = ctx.ask({
        "first": {"method": "elicitation/create", "params": {"mode": "form", "message": "First?",
                                                             "requestedSchema": schema}},
        "second": {"method": "elicitation/create", "params": {"mode": "form", "message": "Second?",
                                                              "requestedSchema": schema}},
    })
    names = [(_checked(answers[key]).get("content") or {}).get("name") for key in ("first", "second")]
    return f"got {names[0]} and {names[1]}"


@server.tool(input_schema=NO_ARGS)
def test_tool_with_task(ctx: Context) -> str:
    """Asks for user_name as an MRTR round, then detaches into a task and answers later."""
    answer = _checked(ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name"))
    start_task(ctx)
    time.sleep(0.3)
    return f"Hello, {(answer.get('content') or {}).get('name', '')}, from a task"


task_tool(server, "failing_job", required=True)
task_tool(server, "test_tool_with_task", required=True, manual=True)


# ---- resources -------------------------------------------------------------------------------------
@server.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource for testing."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (image) for testing."""
    return base64.b64decode(TEST_IMAGE_BASE64)


@server.resource("test://template/{id}/data", name="template", mime_type="application/json")
def template_data(id: str) -> str:
    """A resource template with parameter substitution."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource that can be subscribed to for updates."""
    return "Watched resource content"


# ---- prompts ---------------------------------------------------------------------------------------
@server.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Any]:
    """A prompt that includes an embedded resource."""
    return [
        content.embedded_resource(resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"),
        "Please process the embedded resource above.",
    ]


@server.prompt()
def test_prompt_with_image() -> list[Any]:
    """A prompt that includes image content."""
    return [content.image(TEST_IMAGE_BASE64, "image/png"), "Please analyze the image above."]


@server.prompt()
def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that asks the user for context first (InputRequiredResult on prompts/get)."""
    schema = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
    answer = ctx.elicit("What context should the prompt use?", schema, key="user_context")
    return f"Use this context: {(answer.get('content') or {}).get('context', '')}"


@server.completion(prompt="test_prompt_with_arguments")
def complete_arguments(argument: str, value: str, context: dict[str, str]) -> list[str]:
    options = {"arg1": ["test1", "test2", "testing"], "arg2": ["alpha", "beta"]}
    return [option for option in options.get(argument, []) if option.startswith(value)]


if __name__ == "__main__":
    server.run()
