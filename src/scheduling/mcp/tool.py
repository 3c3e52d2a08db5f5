"""A tool: its name, what it does in words, its input and output as pydantic models (whose JSON
Schemas `tools/list` gives), and the call itself, made for an agent key.

A call that may not go on raises a `Refusal`; the endpoint answers it as a tool error, in the
same plain words and with the same code the pages use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict

from scheduling.repository.agent_keys import AgentKey
from scheduling.services import Services


class Arguments(BaseModel):
    """A tool's input: strict about what it takes, nothing else."""

    model_config = ConfigDict(extra="forbid", frozen=True)


_EARLIEST, _LATEST = (datetime(year, 1, 1, tzinfo=UTC).timestamp() for year in (1970, 9000))


def _within_reach(moment: datetime) -> datetime:
    if not _EARLIEST <= moment.timestamp() < _LATEST:
        raise ValueError("an instant between 1970 and 9000 is expected")
    return moment


# An RFC 3339 instant whose windows and words stay within the years Python can write.
Instant = Annotated[AwareDatetime, AfterValidator(_within_reach)]


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
    destructive: bool = False  # it ends or undoes something, not only adds

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
                "destructiveHint": self.destructive,
                "openWorldHint": False,
            },
        }
