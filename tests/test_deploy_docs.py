"""docs/deploy.md stays true: its YAML parses into the Deployment it describes, its Dockerfile is the one the
generator writes (and its entry point passes --store only when MCP_STORE is set), its commands parse with the
real parsers, and its JSON is what a replica really answers for a task whose replica died.

docs/deploy/ (agent hosts and board replicas) too: every manifest document parses and names itself, labels and
selectors agree, every Secret key a pod reads is defined (as a placeholder), every pod is locked down, the
commands (pods, the image's entry point, the page's docker lines) parse with the real agent-host and board
parsers, the agents' configs load with the real loaders, the probes ask routes the servers serve (the host's
are asked of a host built as the manifest starts it), the Containerfile's instructions are sound, and the
links of deploy.md, board.md and the README resolve."""

from __future__ import annotations

import functools
import json
import re
import shlex
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
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
from tests.pinned import require
from tests.test_docs import ROOT, blocks, read

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


# ---- docs/deploy/: the agent hosts' image and the Kubernetes manifests ------------------------------------------

DEPLOY = ROOT / "docs" / "deploy"
MANIFESTS = sorted((DEPLOY / "k8s").glob("*.yaml"))
WORKLOADS = ("Deployment", "StatefulSet")
NAMESPACED = ("Secret", "Service", "StatefulSet", "Deployment", "PersistentVolumeClaim", "NetworkPolicy")
DOCKERFILE_INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME",
                           "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def _documents() -> list[dict[str, Any]]:
    return json.loads(_parsed())  # a fresh copy each time: a test may not change what another reads


@functools.cache
def _parsed() -> str:
    yaml = require("yaml", "PyYAML==6.0.4")
    return json.dumps([doc for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc is not None])


def _kind(kind: str) -> list[dict[str, Any]]:
    return [doc for doc in _documents() if doc["kind"] == kind]


def _one(kind: str, name: str) -> dict[str, Any]:
    (doc,) = [doc for doc in _kind(kind) if doc["metadata"]["name"] == name]
    return doc


def _secret_value(name: str, key: str) -> str:
    value = _one("Secret", name)["stringData"][key]
    assert isinstance(value, str)
    return value


def _containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    pod = workload["spec"]["template"]["spec"]
    return [*pod.get("initContainers", []), *pod["containers"]]


def _env(container: dict[str, Any]) -> dict[str, str]:
    """The container's variables as the pod would see them: a Secret's value, a placeholder for a field's."""
    env: dict[str, str] = {}
    for item in container.get("env", []):
        ref = item.get("valueFrom", {})
        if "secretKeyRef" in ref:
            env[item["name"]] = _secret_value(ref["secretKeyRef"]["name"], ref["secretKeyRef"]["key"])
        elif "fieldRef" in ref:
            env[item["name"]] = {"metadata.name": "agent-host-0", "metadata.namespace": "agent-board"}[
                ref["fieldRef"]["fieldPath"]]
        else:
            env[item["name"]] = item["value"]
    return env


def _expand(words: list[str], env: dict[str, str]) -> list[str]:
    """Kubernetes' $(VAR) expansion of command and args (every variable used must be defined)."""
    return [VAR.sub(lambda m: env[m.group(1)], word) for word in words]


def _instructions() -> list[tuple[str, str]]:
    """The Containerfile's (INSTRUCTION, rest) pairs, continuation lines joined, comments left out."""
    joined, pending = [], ""
    for line in (DEPLOY / "Containerfile").read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            joined.append(pending)
            pending = ""
    assert not pending, "the Containerfile ends inside a continued line"
    return [(line.split(None, 1)[0], line.split(None, 1)[1]) for line in joined]


def _entry_point(env: dict[str, str], args: list[str]) -> list[str]:
    """The argv the image's ENTRYPOINT (tini, then sh -c) execs with these variables and arguments."""
    (entry,) = [json.loads(rest) for name, rest in _instructions() if name == "ENTRYPOINT"]
    assert entry[:4] == ["tini", "--", "sh", "-c"]
    script = entry[4].replace("exec mcp-agent-kit", "exec printf '%s\\n' mcp-agent-kit", 1)
    out = subprocess.run(["sh", "-c", script, *entry[5:], *args], env={"PATH": "/usr/bin:/bin", **env},
                         capture_output=True, text=True, timeout=10, check=True).stdout
    return out.splitlines()


def test_every_manifest_parses_and_names_itself() -> None:
    docs = _documents()
    assert {doc["kind"] for doc in docs} >= {"Namespace", "Secret", "StatefulSet", "Deployment", "Service",
                                             "NetworkPolicy", "PersistentVolumeClaim"}
    for doc in docs:
        assert doc["apiVersion"] and doc["kind"] and doc["metadata"]["name"], doc
        if doc["kind"] in NAMESPACED:
            assert doc["metadata"]["namespace"] == "agent-board", doc["metadata"]


def test_labels_selectors_and_ports_agree() -> None:
    workloads = [doc for doc in _documents() if doc["kind"] in WORKLOADS]
    ports = {id(w): {p["name"]: p["containerPort"] for c in _containers(w) for p in c.get("ports", [])}
             for w in workloads}

    def selected(selector: dict[str, str]) -> list[dict[str, Any]]:
        return [w for w in workloads if selector.items() <= w["spec"]["template"]["metadata"]["labels"].items()]

    for workload in workloads:
        assert selected(workload["spec"]["selector"]["matchLabels"]) == [workload]
    for service in _kind("Service"):
        (target,) = selected(service["spec"]["selector"])
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports[id(target)], (service["metadata"]["name"], port)
    for workload in _kind("StatefulSet"):  # a StatefulSet's pods are named by a headless Service selecting them
        service = _one("Service", workload["spec"]["serviceName"])
        assert service["spec"]["clusterIP"] == "None" and selected(service["spec"]["selector"]) == [workload]
    for policy in _kind("NetworkPolicy"):
        (target,) = selected(policy["spec"]["podSelector"]["matchLabels"])
        for rule in policy["spec"]["ingress"]:
            assert all(selected(peer["podSelector"]["matchLabels"]) for peer in rule["from"])
            assert {p["port"] for p in rule["ports"]} <= set(ports[id(target)].values())


def test_every_secret_key_read_is_defined_and_a_placeholder() -> None:
    read: set[tuple[str, str]] = set()
    for workload in (doc for doc in _documents() if doc["kind"] in WORKLOADS):
        for container in _containers(workload):
            read |= {(e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
                     for e in container.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})}
        for volume in workload["spec"]["template"]["spec"].get("volumes", []):
            if "secret" in volume:
                read |= {(volume["secret"]["secretName"], item["key"]) for item in volume["secret"]["items"]}
    defined = {(s["metadata"]["name"], key) for s in _kind("Secret") for key in s["stringData"]}
    assert read and read <= defined, read - defined
    assert all("data" not in s for s in _kind("Secret")), "stringData only: the values are placeholders"
    for name, key in defined:  # every secret value is a placeholder (a URL without a password may be real)
        if key in ("token", "password", "tokens.json"):
            assert "REPLACE-WITH" in _secret_value(name, key), (name, key)
    assert "REPLACE-WITH" in _secret_value("board-repo", "url")
    assert ":" not in _secret_value("board-postgres", "url").split("://", 1)[1].split("@")[0], "PGPASSWORD, not the URL"
    (token,) = json.loads(_secret_value("agent-host-token", "tokens.json"))
    assert token == _secret_value("agent-host-token", "token"), "the hosts accept the token the board sends"


def test_every_pod_is_locked_down() -> None:
    for workload in (doc for doc in _documents() if doc["kind"] in WORKLOADS):
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        for container in _containers(workload):
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False and context["readOnlyRootFilesystem"] is True
            assert context["capabilities"]["drop"] == ["ALL"]
            assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
            if context.get("procMount") == "Unmasked":  # Kubernetes allows it only in a pod's own user namespace
                assert pod["hostUsers"] is False and pod["securityContext"]["seccompProfile"]["type"] == "Unconfined"
        for container in pod["containers"]:
            assert container["readinessProbe"] and container["livenessProbe"], container["name"]


def test_the_agent_configs_load_with_the_real_loaders() -> None:
    from mcp_agent_kit.board.config import parse_config
    from mcp_agent_kit.hosts.config import parse as parse_host_config

    host = parse_host_config(json.loads(_secret_value("agent-host-config", "agents.json")), {})
    assert host.default == "claude" and host.agents["claude"].spec.sandbox is not None
    board = parse_config(json.loads(_secret_value("board-config", "board.json")))
    assert board.agents


def _host_argv() -> tuple[list[str], dict[str, str]]:
    (container,) = _one("StatefulSet", "agent-host")["spec"]["template"]["spec"]["containers"]
    assert "command" not in container, "the hosts run the image's entry point"
    env = _env(container)
    return _entry_point(env, _expand(container["args"], env)), env


def test_the_hosts_command_line_parses() -> None:
    from mcp_agent_kit.hosts.cli import parser as host_parser

    argv, env = _host_argv()
    assert argv[:2] == ["mcp-agent-kit", "agent-host"]
    args = host_parser().parse_args(argv[2:])
    mounts = {m["name"]: m["mountPath"] for m in _one("StatefulSet", "agent-host")["spec"]["template"]["spec"][
        "containers"][0]["volumeMounts"]}
    assert args.config == f"{mounts['config']}/agents.json" and args.tokens_file == f"{mounts['token']}/tokens.json"
    assert args.http == ("0.0.0.0", int(env["AGENTCTL_PORT"]))
    assert "agent-host-0.agent-hosts.agent-board.svc.cluster.local" in args.allow_host



@contextmanager
def _host_as_deployed(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """An AgentHost built as the manifest's command line starts it (its config, tokens file and Host names),
    on a free loopback port; yields (base URL, the token)."""
    from mcp_agent_kit.addresses import machine_names
    from mcp_agent_kit.cli_common import tokens_from
    from mcp_agent_kit.hosts.app import AgentHost
    from mcp_agent_kit.hosts.cli import parser as host_parser
    from mcp_agent_kit.hosts.config import parse as parse_host_config
    from mcp_agent_kit.httpd import Policy

    argv, env = _host_argv()
    tokens_file = tmp_path / "tokens.json"
    tokens_file.write_text(_secret_value("agent-host-token", "tokens.json"))
    args = host_parser().parse_args([*argv[2:], "--tokens-file", str(tokens_file)])
    config = parse_host_config(json.loads(_secret_value("agent-host-config", "agents.json")), env)
    policy = Policy(bind_host=args.http[0], allowed_hosts=[*machine_names(args.http[0]), *args.allow_host],
                    allowed_origins=args.allow_origin, tokens=tokens_from(args), realm="agent-host")
    host = AgentHost(config, policy)
    server = host.bind("127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _secret_value("agent-host-token", "token")
    finally:
        host.close()
        server.shutdown()
        server.server_close()
        thread.join(10)


def _status(url: str, headers: dict[str, str]) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_hosts_probes_and_the_boards_names_reach_a_host_built_as_deployed(tmp_path: Path) -> None:
    (container,) = _one("StatefulSet", "agent-host")["spec"]["template"]["spec"]["containers"]
    probes = [container["readinessProbe"]["httpGet"], container["livenessProbe"]["httpGet"]]
    with _host_as_deployed(tmp_path) as (base, token):
        for probe in probes:  # no token, the probe's own Host header
            assert _status(base + probe["path"], {h["name"]: h["value"] for h in probe["httpHeaders"]}) == 200
        named = {"Host": "agent-host-0.agent-hosts.agent-board.svc.cluster.local:9999"}
        assert _status(base + "/api/v1/status", named) == 401
        assert _status(base + "/api/v1/status", {**named, "Authorization": f"Bearer {token}"}) == 200
        assert _status(base + "/api/v1/status", {"Host": "elsewhere.example", "Authorization": f"Bearer {token}"}) \
            == 403
    (healthcheck,) = [rest for name, rest in _instructions() if name == "HEALTHCHECK"]
    command = json.loads(healthcheck[healthcheck.index("CMD ") + 4:])
    assert command[:2] == ["python", "-c"] and "127.0.0.1" in command[2] and probes[0]["path"] in command[2]
    compile(command[2], "HEALTHCHECK", "exec")


def test_the_boards_command_line_and_probes() -> None:
    from mcp_agent_kit.board.cli import parser as board_parser
    from mcp_agent_kit.board.web_app import PATHS

    board = _one("Deployment", "board")
    assert board["spec"]["replicas"] == 2
    (container,) = board["spec"]["template"]["spec"]["containers"]
    env = _env(container)
    argv = _expand([*container["command"], *container["args"]], env)
    assert argv[:4] == ["tini", "--", "mcp-agent-kit", "board"]
    args = board_parser().parse_args(argv[4:])
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert args.config == f"{mounts['config']}/board.json" and args.store.startswith("postgresql://")
    assert args.repo.startswith(mounts["board"]) and args.data_dir.startswith(mounts["board"])
    assert args.http == ("0.0.0.0", container["ports"][0]["containerPort"]) and args.replica == "agent-host-0"
    assert "MCP_AGENT_KIT_TOKEN" in env and "PGPASSWORD" in env  # the token the board reads, libpq's password
    for probe in (container["readinessProbe"]["httpGet"], container["livenessProbe"]["httpGet"]):
        assert probe["path"] in PATHS and probe["port"] == "http"  # the page's routes; /login needs no token
        assert {h["name"]: h["value"] for h in probe["httpHeaders"]} == {"Host": "localhost"}
    (clone,) = board["spec"]["template"]["spec"]["initContainers"]
    script = clone["command"][2]
    subprocess.run(["sh", "-n", "-c", script], check=True, timeout=10)
    assert "$BOARD_REPO_URL" in script and "BOARD_REPO_URL" in _env(clone) and args.repo in script


def test_the_containerfile_is_sound() -> None:
    instructions = _instructions()
    names = [name for name, _ in instructions]
    assert names[0] == "FROM" and instructions[0][1] == "python:3.11-slim"
    assert set(names) <= DOCKERFILE_INSTRUCTIONS, set(names) - DOCKERFILE_INSTRUCTIONS
    runs = " ".join(rest for name, rest in instructions if name == "RUN")
    assert all(package in runs for package in ("git", "bubblewrap", "tini"))
    (user,) = [rest for name, rest in instructions if name == "USER"]
    assert not user.startswith(("root", "0"))
    (arg,) = [rest for name, rest in instructions if name == "ARG"]
    assert re.fullmatch(r'MCP_AGENT_KIT_SPEC="mcp-agent-kit\[postgres\]>=[\d.]+"', arg)
    env = dict(shlex.split(word)[0].split("=", 1) for word in shlex.split(
        next(rest for name, rest in instructions if name == "ENV"), posix=False))
    assert {"AGENTCTL_PORT", "AGENTCTL_AGENT_COMMAND", "AGENTCTL_AUTO_START", "AGENTCTL_LOG_LEVEL"} <= set(env)
    (expose,) = [rest for name, rest in instructions if name == "EXPOSE"]
    assert expose == env["AGENTCTL_PORT"]
    for name in ("CMD", "ENTRYPOINT"):
        json.loads(next(rest for n, rest in instructions if n == name))


def test_the_images_entry_point_and_the_docker_lines_parse() -> None:
    from mcp_agent_kit.hosts.cli import parser as host_parser

    text = read("deploy.md")
    lines = [line for block in blocks(text) if block.lang == "sh" for line in block.body.splitlines()]
    builds = [shlex.split(line) for line in lines if line.startswith("docker build")]
    assert builds and all((ROOT / words[words.index("-f") + 1]).is_file() for words in builds)
    (run,) = [shlex.split(line) for line in lines if line.startswith("docker run")]
    env = dict(run[i + 1].split("=", 1) for i, word in enumerate(run) if word == "-e")
    image = run.index("agent-host")
    argv = _entry_point(env, run[image + 1:])
    args = host_parser().parse_args(argv[2:])
    assert args.config is None and args.tokens_file == env["AGENT_HOST_TOKENS_FILE"]
    assert args.http == ("0.0.0.0", 9999) and args.allow_host == ["agents.example.com"]
    bare = _entry_point({}, [])  # no token: the host itself refuses the public bind, in one line
    assert bare == ["mcp-agent-kit", "agent-host", "--http", "0.0.0.0:9999"]


def test_deploy_md_names_every_manifest_in_order_and_every_link_resolves() -> None:
    text = read("deploy.md")
    applied = [line.split() for block in blocks(text) if block.lang == "sh" for line in block.body.splitlines()
               if line.startswith("kubectl apply")]
    files = [word for words in applied for word in words if word.endswith(".yaml")]
    assert files == [str(path.relative_to(ROOT)) for path in MANIFESTS], "apply every manifest, in its order"
    for page, prefix in (("README.md", ROOT), ("docs/deploy.md", ROOT / "docs"), ("docs/board.md", ROOT / "docs")):
        for target in re.findall(r"\]\(((?:docs/)?deploy[^)\s]*)\)", (ROOT / page).read_text()):
            path, _, anchor = target.partition("#")
            assert (prefix / path).exists(), f"{page}: {target}"
            if anchor:
                headings = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
                            for h in re.findall(r"^#+ (.*)$", (prefix / path).read_text(), re.M)}
                assert anchor in headings, f"{page}: {target}"
    linked = set(re.findall(r"\]\(deploy/k8s/([^)]+)\)", text))
    assert linked == {path.name for path in MANIFESTS}
