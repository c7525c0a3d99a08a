"""docs/deploy.md stays true: its YAML parses into the Deployment it describes, its Dockerfile is the one the
generator writes (and its entry point passes --store only when MCP_STORE is set), its commands parse with the
real parsers, and its JSON is what a replica really answers for a task whose replica died."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from typing import Any

import strictyaml

from mcp_agent_kit import __version__
from mcp_agent_kit.a2a import Agent
from mcp_agent_kit.a2a.cli import parser as a2a_parser
from mcp_agent_kit.a2a.engine import TaskEngine
from mcp_agent_kit.a2a.store import KIND, TaskStore
from mcp_agent_kit.gateway.cli import gateway_parser
from mcp_agent_kit.scaffold.names import derive
from mcp_agent_kit.scaffold.origin import Origin
from mcp_agent_kit.scaffold.render import render_templates
from mcp_agent_kit.store.base import Record
from mcp_agent_kit.store.memory import MemoryStore
from mcp_agent_kit.store_cli import parser as store_parser
from tests.test_docs import blocks, read

DOC = read("deploy.md")


def fenced(lang: str) -> list[str]:
    return [block.body for block in blocks(DOC) if block.lang == lang]


def test_the_kubernetes_yaml_parses_into_three_replicas_sharing_one_store() -> None:
    (text,) = fenced("yaml")
    docs = {d["kind"]: d for d in (strictyaml.dirty_load(part, allow_flow_style=True).data
                                  for part in text.split("\n---\n"))}
    assert set(docs) == {"Secret", "Deployment", "Service"}
    secret = docs["Secret"]["stringData"]
    assert len(secret["secret"].encode()) >= 32 and secret["store-url"].startswith("postgresql://")
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    assert docs["Deployment"]["spec"]["replicas"] == "3"
    (init,) = pod["initContainers"]
    assert init["command"][:5] == ["python", "-m", "mcp_agent_kit", "store", "migrate"]
    (server,) = pod["containers"]
    env = {e["name"]: e for e in server["env"]}
    for name in ("MCP_STORE", "MCP_AGENT_KIT_SECRET", "MCP_TOKEN"):
        assert env[name]["valueFrom"]["secretKeyRef"]["name"] == docs["Secret"]["metadata"]["name"]
    assert docs["Service"]["spec"]["selector"] == docs["Deployment"]["spec"]["selector"]["matchLabels"]
    assert docs["Service"]["spec"]["ports"][0]["targetPort"] == server["ports"][0]["containerPort"]


def test_the_dockerfile_is_the_generated_one() -> None:
    (text,) = fenced("dockerfile")
    files = render_templates(derive("my-agent"), "A demo.", Origin("index", f"mcp-agent-kit>={__version__}"))
    assert text.replace("1.0.0", __version__) == files["Dockerfile"].strip("\n")


def _entry_point_argv(env: dict[str, str]) -> list[str]:
    (text,) = fenced("dockerfile")
    cmd = json.loads(re.search(r"^CMD (.*)$", text, re.M).group(1))  # type: ignore[union-attr]
    assert cmd[:2] == ["sh", "-c"]
    script = cmd[2].replace("exec python", "exec printf '%s\\n' python", 1)
    out = subprocess.run(["sh", "-c", script], env={"PATH": "/usr/bin:/bin", **env}, capture_output=True,
                         text=True, timeout=10, check=True).stdout
    return out.splitlines()


def test_the_entry_point_passes_the_store_only_when_it_is_set() -> None:
    plain = _entry_point_argv({"MCP_TOKEN": "t"})
    assert plain == ["python", "-m", "my_agent.server", "--http", "0.0.0.0:8000", "--allow-host", "*", "--token", "t"]
    url = "postgresql://kit:p w@db/kit"  # a space survives: the value is one argument
    shared = _entry_point_argv({"MCP_TOKEN": "t", "MCP_STORE": url, "MCP_ALLOWED_HOST": "svc"})
    assert shared[-2:] == ["--store", url] and shared[6] == "svc"


def test_the_commands_parse() -> None:
    (text,) = [body for body in fenced("sh") if "a2a" in body]
    lines = text.replace("\\\n", " ").splitlines()
    a2a = shlex.split(next(line for line in lines if " a2a " in line))
    args = a2a_parser().parse_args(a2a[a2a.index("a2a") + 1:])
    assert args.store == "$STORE_URL" and args.secret_file == "/run/secrets/kit-secret"
    gateway = shlex.split(next(line for line in lines if " gateway " in line))
    args = gateway_parser().parse_args(gateway[gateway.index("gateway") + 1:])
    assert args.store == "$STORE_URL" and args.secret_file == "/run/secrets/kit-secret"
    for body in fenced("sh"):
        for line in body.splitlines():
            if "store migrate" in line:
                words = shlex.split(line.split("#")[0])
                assert store_parser().parse_args(words[words.index("store") + 1:]).command == "migrate"


def _shape(value: Any, names: dict[str, str]) -> Any:
    """The JSON with every id and timestamp replaced by a name in order of appearance."""
    if isinstance(value, dict):
        return {k: _shape(v, names) if k not in ("messageId", "contextId", "taskId", "id", "timestamp")
                else names.setdefault(f"{k == 'timestamp'}:{v}", f"<{len(names)}>") for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v, names) for v in value]
    return value


def test_the_failed_task_json_is_what_a_replica_answers() -> None:
    (text,) = fenced("json")
    documented = json.loads(text)
    store = MemoryStore()
    engine = TaskEngine(Agent(), TaskStore(store, "replica-2", 1.0))
    try:
        user = {"messageId": "m-1", "contextId": "c-1", "taskId": "t-1", "role": "ROLE_USER",
                "parts": [{"text": "wait"}]}
        body = {"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_WORKING",
                "timestamp": "2026-07-28T10:00:00.000Z"}, "history": [user], "_owner": ""}
        store.insert(Record(KIND, "t-1", body, state="TASK_STATE_WORKING", order="x", holder="replica-1",
                            lease_until=time.time() - 1))
        deadline = time.monotonic() + 5
        while engine.get("", {"id": "t-1"})["status"]["state"] != "TASK_STATE_FAILED":
            assert time.monotonic() < deadline, "the lapsed task was never failed"
            time.sleep(0.05)
        answered = engine.get("", {"id": "t-1"})
    finally:
        engine.close()
    assert _shape(documented, {}) == _shape(answered, {})
