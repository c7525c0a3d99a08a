"""The tasks extension's requests and results as pydantic models for the official `mcp` client (2.3.0),
which has no tasks API of its own: tests send them with `client.session.send_request`.
`name_param` puts the task id in the Mcp-Name header, as 2026-07-28 asks."""

from __future__ import annotations

from typing import Any, Literal

from tests.pinned import require

require("mcp", "mcp==2.3.0 (the interop peer)")
from mcp import types  # noqa: E402
from pydantic import ConfigDict, Field  # noqa: E402


class TaskParams(types.RequestParams):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] | None = Field(default=None, alias="inputResponses")


class TasksGet(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class TasksUpdate(types.Request[TaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class TasksCancel(types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


class AnyResult(types.Result):
    model_config = ConfigDict(extra="allow")


class CreatedTask(types.Result):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str
