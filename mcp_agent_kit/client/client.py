"""client: the dual-era MCP Client — probe once, then list, call, read, get and complete.

A Client owns one Channel (stdio child or HTTP endpoint). `connect()` runs the probe (cached
per process / per HTTP origin); every later request is shaped for the verdict's era: modern
requests carry the `_meta` envelope and modern HTTP headers, legacy ones the plain shapes.
Lists follow `nextCursor`; skills (SEP-2640) are listed, got and read through client.skills'
SkillHost, which verifies every read; input_required rounds are answered with the caller's callbacks and
`requestState` echoed byte-exactly, up to a round limit; task results are polled to the end.
An expired legacy HTTP session (404) is re-initialized once and the request retried.
Rules: imports wire/ and client/ only (never core/, the server or transports).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mcp_agent_kit.client.channel import Channel, PeerError, drive
from mcp_agent_kit.client.headers import header_params
from mcp_agent_kit.client.inputs import Callback, ClientError, InputAnswerer
from mcp_agent_kit.client.probe import Era, Failure, Probe, Verdict
from mcp_agent_kit.client.skills import SkillHost
from mcp_agent_kit.client.watch import LIST_CHANGED
from mcp_agent_kit.wire import implementation, mcp
from mcp_agent_kit.wire.jsonrpc import RpcError

log = logging.getLogger("mcp_agent_kit.client")
CLIENT_INFO = {"name": implementation.NAME, "version": implementation.VERSION}
Progress = Callable[[float, float | None, str | None], None]
LISTENER_KINDS = ("list_changed",)  # Client.add_listener's kinds
MAX_PAGES = 1000
_TERMINAL = frozenset({"completed", "failed", "cancelled"})

_cache_lock = threading.Lock()
_verdicts: dict[str, Verdict] = {}


class Unavailable(PeerError):
    """connect() found no MCP server it may talk to; `verdict.reason` says why."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__("unavailable", verdict.reason or "unavailable")
        self.verdict = verdict


def forget_verdicts() -> None:
    """Drop every cached per-origin verdict (e.g. after a server upgrade)."""
    with _cache_lock:
        _verdicts.clear()


class Client:
    """A dual-era client. Use `Client.stdio(...)` or `Client.http(...)`, then `connect()`."""

    def __init__(
        self,
        channel: Channel,
        *,
        timeout: float = 5.0,
        request_timeout: float = 120.0,
        allow_legacy: bool = False,
        client_info: dict[str, Any] | None = None,
        elicitation: Callback | None = None,
        sampling: Callback | None = None,
        roots: Callback | None = None,
        tasks: bool = False,
        on_log: Callable[[dict[str, Any]], None] | None = None,
        max_rounds: int = 10,
        task_timeout: float = 3600.0,
        cache_key: str | None = None,
    ) -> None:
        self.channel = channel
        self.timeout = timeout
        self.request_timeout = request_timeout
        self.allow_legacy = allow_legacy
        self.client_info = client_info or dict(CLIENT_INFO)
        self.inputs = InputAnswerer(elicitation, sampling, roots, tasks)
        self.on_log = on_log
        self.max_rounds = max_rounds
        self.task_timeout = task_timeout
        self.cache_key = cache_key
        self.verdict: Verdict | None = None
        self.tools: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._id_lock = threading.Lock()
        self._progress: dict[str, Progress] = {}
        self._session_generation = 0  # bumped by each re-initialize after an expired session
        self._reinit_lock = threading.Lock()
        # Requests in flight that brought their own answerer (call_tool(inputs=...)): a legacy
        # server's question during such a request goes to that answerer.
        self._call_inputs: dict[Any, InputAnswerer] = {}
        self._listeners: dict[str, list[Callable[[str], None]]] = {kind: [] for kind in LISTENER_KINDS}
        self.skills = SkillHost(self)
        # registered on the channel for the Client's life (a channel serves one Client's requests)
        channel.add_listener("notification", self._on_notification)
        channel.add_listener("request", self._serve_request)

    # ---- construction ------------------------------------------------------------------------------
    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        **options: Any,
    ) -> Client:
        from mcp_agent_kit.client.stdio import StdioChannel

        return cls(StdioChannel(command, args, env=env, cwd=cwd), **options)

    @classmethod
    def http(cls, url: str, headers: Mapping[str, str] | None = None, **options: Any) -> Client:
        from mcp_agent_kit.client.http import HttpChannel

        channel = HttpChannel(url, headers, auth=options.pop("auth", None))
        options.setdefault("cache_key", channel.origin)
        return cls(channel, **options)

    def __enter__(self) -> Client:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.channel.close()

    # ---- era ----------------------------------------------------------------------------------------
    @property
    def era(self) -> str | None:
        return self.verdict.era if self.verdict else None

    def probe(self) -> Verdict:
        """Decide the era (or reuse the cached verdict for this origin) without raising."""
        cached = None
        if self.cache_key is not None:
            with _cache_lock:
                cached = _verdicts.get(self.cache_key)
        if cached is not None and cached.era == "modern":
            self.verdict = cached
            return cached
        verdict = drive(self._new_probe(cached.era if cached is not None else None), self.channel, self.timeout)
        self.verdict = verdict
        if self.cache_key is not None and verdict.era != "unavailable":
            with _cache_lock:
                _verdicts[self.cache_key] = verdict
        return verdict

    def _new_probe(self, known_era: Era | None) -> Probe:
        return Probe(
            client_info=self.client_info,
            capabilities=self.inputs.capabilities("modern"),
            legacy_capabilities=self.inputs.capabilities("legacy"),
            allow_legacy=self.allow_legacy,
            offerable=self.inputs.offerable(),
            known_era=known_era,
        )

    def _reinitialize(self, generation: int) -> None:
        """The legacy session expired: initialize again (once, however many requests saw it)."""
        with self._reinit_lock:
            if generation != self._session_generation:
                return  # another request has already re-initialized
            self._session_generation += 1
            log.info("the session with %s expired; initializing again", self.channel.describe())
            self.channel.restart()
            verdict = drive(self._new_probe("legacy"), self.channel, self.timeout)
            if verdict.era == "unavailable":
                raise Unavailable(verdict)
            self.verdict = verdict

    def connect(self) -> Verdict:
        """Probe; raise Unavailable unless the server is reachable in some era."""
        verdict = self.probe()
        if verdict.era == "unavailable":
            raise Unavailable(verdict)
        if verdict.era == "legacy" and self.inputs.capabilities("legacy"):
            listen = getattr(self.channel, "listen_standalone", None)
            if callable(listen):  # a legacy server may send its requests (elicitation...) on the GET stream
                listen()
        return verdict

    # ---- requests ------------------------------------------------------------------------------------
    def _serve_request(self, message: dict[str, Any], related: Any) -> dict[str, Any]:
        """Answer a legacy server's request with the answerer of the request it belongs to.

        The transport names that request when it can (Streamable HTTP streams a request's server
        requests on its own response); otherwise, when exactly one request with its own answerer
        is in flight, it is that one; else the client's own callbacks answer.
        """
        with self._id_lock:
            answerer = self._call_inputs.get(related) if related is not None else None
            if answerer is None and related is None and len(self._call_inputs) == 1:
                answerer = next(iter(self._call_inputs.values()))
        return (answerer or self.inputs).serve(message)

    def _next_id(self) -> int:
        with self._id_lock:
            return next(self._ids)

    def _message(
        self, method: str, params: dict[str, Any], meta: dict[str, Any], inputs: InputAnswerer | None = None
    ) -> dict[str, Any]:
        verdict = self.verdict
        if verdict is None:
            self.connect()
            verdict = self.verdict
        assert verdict is not None
        body = dict(params)
        if verdict.era == "modern":
            meta = {
                mcp.META_PROTOCOL_VERSION: verdict.version,
                mcp.META_CLIENT_INFO: self.client_info,
                mcp.META_CLIENT_CAPABILITIES: (inputs or self.inputs).capabilities("modern"),
                **meta,
            }
        if meta:
            body["_meta"] = meta
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id(), "method": method}
        if body or verdict.era == "modern":
            message["params"] = body
        return message

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        progress: Progress | None = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
        inputs: InputAnswerer | None = None,
    ) -> dict[str, Any]:
        """One request and its raw result (resultType checked); JSON-RPC errors raise RpcError.

        inputs overrides, for this request, the capabilities declared (modern era).
        """
        meta: dict[str, Any] = {}
        token = None
        if progress is not None:
            token = f"progress-{self._next_id()}"
            meta["progressToken"] = token
            self._progress[token] = progress
        message = self._message(method, params or {}, meta, inputs)
        if inputs is not None:
            with self._id_lock:
                self._call_inputs[message["id"]] = inputs
        try:
            generation = self._session_generation
            event = self.channel.exchange(message, timeout or self.request_timeout, headers)
            if isinstance(event, Failure) and event.kind == "expired" and self.era == "legacy":
                self._reinitialize(generation)
                event = self.channel.exchange(message, timeout or self.request_timeout, headers)
        finally:
            if token is not None:
                self._progress.pop(token, None)
            if inputs is not None:
                with self._id_lock:
                    self._call_inputs.pop(message["id"], None)
        if isinstance(event, Failure):
            raise PeerError(event.kind, event.detail)
        error = event.message.get("error")
        if isinstance(error, dict):
            raise RpcError(int(error.get("code", 0)), str(error.get("message", "")), error.get("data"))
        result = event.message.get("result")
        if not isinstance(result, dict):
            raise ClientError(f"{method}: the result is not an object")
        if self.era == "legacy":
            return result
        kind = result.get("resultType", "complete")
        allowed = {"complete"}
        if method in mcp.INPUT_REQUIRED_METHODS:
            allowed.add("input_required")
        if method == "tools/call" and self.inputs.tasks:
            allowed.add("task")
        if kind not in allowed:
            raise ClientError(f"{method}: unexpected resultType {kind!r}")
        return result

    def _with_input(self, method: str, params: dict[str, Any], **options: Any) -> dict[str, Any]:
        """Run a request to completion, answering input_required rounds (modern era)."""
        answerer = options.get("inputs") or self.inputs
        result = self.request(method, params, **options)
        rounds = 0
        while result.get("resultType") == "input_required" and self.era == "modern":
            rounds += 1
            if rounds > self.max_rounds:
                raise ClientError(f"{method}: gave up after {self.max_rounds} input_required rounds")
            retry = dict(params)
            if "inputRequests" in result:
                retry["inputResponses"] = answerer.answer_all(result["inputRequests"])
            if "requestState" in result:
                retry["requestState"] = result["requestState"]
            result = self.request(method, retry, **options)
        if result.get("resultType") == "task":
            result = self._await_task(result)
        return result

    # ---- tasks -----------------------------------------------------------------------------------------
    def _await_task(self, task: dict[str, Any]) -> dict[str, Any]:
        task_id = task.get("taskId")
        if not isinstance(task_id, str):
            raise ClientError("a task result without a taskId")
        deadline = time.monotonic() + self.task_timeout
        answered: set[str] = set()
        while True:
            status = task.get("status")
            if status == "completed":
                result = task.get("result")
                if not isinstance(result, dict):
                    raise ClientError(f"task {task_id} completed without a result")
                return result
            if status == "failed":
                error = task.get("error")
                error = error if isinstance(error, dict) else {}
                code, text = int(error.get("code", -32603)), str(error.get("message", "task failed"))
                raise RpcError(code, text, error.get("data"))
            if status == "cancelled":
                raise ClientError(f"task {task_id} was cancelled")
            if status == "input_required":
                responses = self.inputs.answer_all(task.get("inputRequests") or {}, answered)
                if responses:
                    self.request("tasks/update", {"taskId": task_id, "inputResponses": responses})
                    answered.update(responses)
            if time.monotonic() > deadline:
                raise ClientError(f"task {task_id} did not finish within {self.task_timeout:g}s")
            interval = task.get("pollIntervalMs")
            time.sleep(min(max(interval / 1000 if isinstance(interval, int | float) else 1.0, 0.01), 30.0))
            task = self.request("tasks/get", {"taskId": task_id})

    def cancel_task(self, task_id: str) -> None:
        self.request("tasks/cancel", {"taskId": task_id})

    # ---- notifications -------------------------------------------------------------------------------
    def _on_notification(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if message.get("method") == "notifications/progress":
            callback = self._progress.get(str(params.get("progressToken")))
            progress = params.get("progress")
            if callback is not None and isinstance(progress, int | float):
                total = params.get("total")
                note = params.get("message")
                callback(
                    float(progress),
                    float(total) if isinstance(total, int | float) else None,
                    note if isinstance(note, str) else None,
                )
        elif message.get("method") == "notifications/message" and self.on_log is not None:
            self.on_log(params)
        elif message.get("method") in LIST_CHANGED:
            self._tell("list_changed", LIST_CHANGED[str(message["method"])])

    # ---- listeners ---------------------------------------------------------------------------------------
    def add_listener(self, kind: str, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call `listener` on each event of `kind` ("list_changed": with "tools", "prompts" or
        "resources", on a transport thread); returns the function that removes it again."""
        listeners = self._listeners.get(kind)
        if listeners is None:
            raise ValueError(f"unknown listener kind {kind!r}; use one of {', '.join(LISTENER_KINDS)}")
        listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):  # removed already
                listeners.remove(listener)

        return remove

    def has_listeners(self, kind: str) -> bool:
        return bool(self._listeners.get(kind))

    def _tell(self, kind: str, value: str) -> None:
        """Every listener of `kind`, each guarded: one that raises is logged and the others still hear."""
        for listener in tuple(self._listeners[kind]):
            try:
                listener(value)
            except Exception:
                log.exception("a %s listener failed", kind)

    # ---- the API -----------------------------------------------------------------------------------------
    def _list(self, method: str, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            result = self.request(method, {"cursor": cursor} if cursor is not None else {})
            page = result.get(key)
            if not isinstance(page, list):
                raise ClientError(f"{method}: {key!r} is not a list")
            items.extend(item for item in page if isinstance(item, dict))
            next_cursor = result.get("nextCursor")
            if not isinstance(next_cursor, str):
                return items
            if next_cursor in seen:
                raise ClientError(f"{method}: the server repeated cursor {next_cursor!r}")
            seen.add(next_cursor)
            cursor = next_cursor
        raise ClientError(f"{method}: more than {MAX_PAGES} pages")

    def list_tools(self) -> list[dict[str, Any]]:
        """Every tool (pagination followed); tools with invalid x-mcp-header annotations are dropped."""
        tools = []
        for tool in self._list("tools/list", "tools"):
            name = tool.get("name")
            if not isinstance(name, str) or not isinstance(tool.get("inputSchema"), dict):
                log.warning("dropping a malformed tool definition: %.120r", tool)
                continue
            if self.era == "modern" and header_params(tool["inputSchema"]) is None:
                log.warning("dropping tool %r: its x-mcp-header annotations are invalid", name)
                continue
            tools.append(tool)
        self.tools = {tool["name"]: tool for tool in tools}
        return tools

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        progress: Progress | None = None,
        timeout: float | None = None,
        inputs: InputAnswerer | None = None,
    ) -> dict[str, Any]:
        """A CallToolResult; tool failures come back as isError results, protocol errors raise.

        inputs answers this call's input_required rounds instead of the client's own callbacks
        (a gateway passes its caller's), and sets the capabilities the call declares.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        options: dict[str, Any] = {"progress": progress, "timeout": timeout, "inputs": inputs}
        if self.era == "modern" and self.channel.describe().startswith(("http://", "https://")):
            return self._call_http(name, params, options)
        return self._with_input("tools/call", params, **options)

    def _call_http(self, name: str, params: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
        from mcp_agent_kit.client.headers import header_value

        if name not in self.tools:
            self.list_tools()
        for attempt in (1, 2):
            tool = self.tools.get(name)
            mapping = header_params(tool["inputSchema"]) if tool else {}
            extra: dict[str, str] = {}
            for header, path in sorted((mapping or {}).items()):
                value: Any = params.get("arguments")
                for key in path:
                    value = value.get(key) if isinstance(value, dict) else None
                text = header_value(value)
                if text is not None:
                    extra[f"Mcp-Param-{header}"] = text
            try:
                return self._with_input("tools/call", params, headers=extra, **options)
            except RpcError as exc:
                if exc.code != mcp.HEADER_MISMATCH or attempt == 2:
                    raise
                self.list_tools()  # the server's view of the tool changed: re-fetch and retry once
        raise AssertionError("unreachable")

    def list_resources(self) -> list[dict[str, Any]]:
        return self._list("resources/list", "resources")

    def list_resource_templates(self) -> list[dict[str, Any]]:
        return self._list("resources/templates/list", "resourceTemplates")

    def read_resource(self, uri: str) -> dict[str, Any]:
        return self._with_input("resources/read", {"uri": uri})

    def list_skills(self) -> list[dict[str, Any]]:
        """The server's loadable skill entries (SEP-2640); reads no skill file."""
        return self.skills.list()

    def get_skill(self, uri: str) -> dict[str, Any]:
        """The entry for one SKILL.md URI, listed or not (SEP-2640 skills/get)."""
        return self.skills.get(uri)

    def read_skill_file(self, uri: str) -> bytes:
        """A skill file's bytes, verified against the held entry (size, digest, frontmatter for
        SKILL.md); a supporting file only once its skill's SKILL.md was read. SkillError otherwise."""
        return self.skills.read(uri)

    def list_prompts(self) -> list[dict[str, Any]]:
        return self._list("prompts/list", "prompts")

    def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = arguments
        return self._with_input("prompts/get", params)

    def complete(
        self, ref: dict[str, Any], argument: dict[str, str], context: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"ref": ref, "argument": argument}
        if context is not None:
            params["context"] = context
        completion = self.request("completion/complete", params).get("completion")
        if not isinstance(completion, dict):
            raise ClientError("completion/complete: no completion object")
        return completion
