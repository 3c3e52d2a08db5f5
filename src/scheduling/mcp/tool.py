"""A tool: its name, what it does in words, its input and output as pydantic models (whose JSON
Schemas `tools/list` gives), and the call itself, made for an agent key.

A call that may not go on raises a `Refusal`; the endpoint answers it as a tool error, in the
same plain words and with the same code the pages use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from scheduling.repository.agent_keys import AgentKey
from scheduling.services import Services


class Arguments(BaseModel):
    """A tool's input: strict about what it takes, nothing else."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Answer(BaseModel):
    model_config = ConfigDict(frozen=True)


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    arguments: type[Arguments]
    answer: type[Answer]
    call: Callable[[Services, AgentKey, Any], Awaitable[Answer]]
    read_only: bool = True

    def listed(self) -> dict[str, Any]:
        """The tool as `tools/list` gives it."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.arguments.model_json_schema(),
            "outputSchema": self.answer.model_json_schema(),
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": False,
                "openWorldHint": False,
            },
        }
