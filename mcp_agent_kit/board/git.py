"""board.git: the one place the board runs git, and the errors every workspace operation raises.

Rules: running git is gitwork's (its settings: no hooks, no maintenance, no prompts, none of the variables
that aim git elsewhere; see its doc); here its errors join the board's family, so every git failure is a
WorkspaceError and thus a BoardError. The names below stay importable from here.
"""

from __future__ import annotations

import mcp_agent_kit.gitwork as gitwork
from mcp_agent_kit.board.errors import BoardError
from mcp_agent_kit.gitwork import (
    DEFAULT_TIMEOUT_S,
    FIX,
    LOCAL_ENV,
    MIN_VERSION,
    SETTINGS,
    Worktree,
    git_environment,
    parse_version,
    parse_worktrees,
)

__all__ = ["DEFAULT_TIMEOUT_S", "FIX", "LOCAL_ENV", "MIN_VERSION", "SETTINGS", "Git", "GitError", "GitUnavailable",
           "WorkspaceError", "Worktree", "git_environment", "parse_version", "parse_worktrees"]


class WorkspaceError(BoardError):
    """A workspace operation could not be done; the message is one line naming the problem."""


class GitUnavailable(gitwork.GitMissing, WorkspaceError):
    """git is missing or older than MIN_VERSION."""


class GitError(gitwork.GitFailed, WorkspaceError):
    """A git command failed: the message quotes git's own last line; `stderr` holds all of it."""


class Git(gitwork.GitRunner):
    """Runs git for the board (gitwork.GitRunner), raising the board's errors."""

    unavailable = GitUnavailable
    failed = GitError
    invalid = WorkspaceError
