"""`propose_schedule`: a proposal for a person to confirm on their page, never a schedule."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from scheduling.actions.agents_propose import MAX_NOTE_CHARS, Proposed, propose
from scheduling.mcp.shapes import ProposalShape, proposal_shape
from scheduling.mcp.tool import Answer, Arguments, Tool
from scheduling.repository.agent_keys import AgentKey
from scheduling.services import Services


class ProposeArguments(Arguments):
    content_id: str = Field(min_length=1, max_length=64, description="The content's id in Dee Wan.")
    change: Literal["publish", "unpublish"]
    to: str | None = Field(
        None,
        max_length=64,
        description="The workflow state to move to; if not given, the one Dee Wan offers.",
    )
    local_time: str = Field(
        max_length=16, description="The wall time, YYYY-MM-DDTHH:MM, in `timezone`."
    )
    timezone: str = Field(max_length=64, description="An IANA time zone, such as Europe/Paris.")
    fold: Literal["earlier", "later"] | None = Field(
        None, description="For a wall time that happens twice (clocks going back): which one."
    )
    note: str = Field("", max_length=MAX_NOTE_CHARS, description="A note for the person.")
    release: str | None = Field(
        None,
        max_length=64,
        description="A waiting release's id (rel_…) to add the change to: its time is used.",
    )


class ProposeAnswer(Answer):
    proposal: ProposalShape
    next_step: str


async def propose_schedule(
    services: Services, key: AgentKey, asked: ProposeArguments
) -> ProposeAnswer:
    made = await propose(
        services,
        key,
        Proposed(
            installation_id=key.installation_id,
            content_id=asked.content_id,
            kind=asked.change,
            to_state=asked.to,
            local_time=asked.local_time,
            timezone=asked.timezone,
            fold=asked.fold,
            note=asked.note,
            release=asked.release,
        ),
    )
    return ProposeAnswer(
        proposal=proposal_shape(made, services.clock.now_ms()),
        next_step=(
            f"Nothing is scheduled yet: {key.person_name}, or someone who may make this change,"
            " confirms it on the content's Scheduling page in Dee Wan. It expires at its time."
        ),
    )


TOOL = Tool(
    name="propose_schedule",
    title="Propose a schedule",
    description=(
        "Propose publishing or unpublishing a content at a wall time in a time zone. It makes"
        " a proposal, not a schedule: a person confirms it on their page, which pins the"
        " version they see. A time in a gap, a time that happens twice without `fold`, an"
        " unknown zone or a past time is refused with suggestions. With `release`, the change"
        " joins that waiting release, at its time (the time given is not used)."
    ),
    arguments=ProposeArguments,
    answer=ProposeAnswer,
    call=propose_schedule,
    read_only=False,
)
