"""`propose_change`: a waiting schedule moved to a new time, or sent now, proposed for a person
to confirm on their page, never changed by the agent itself."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from scheduling.actions.agents_propose import MAX_NOTE_CHARS, Proposed, propose
from scheduling.domain.refusals import Refusal
from scheduling.domain.statuses import WAITING
from scheduling.mcp.shapes import ProposalShape, proposal_shape
from scheduling.mcp.tool import Answer, Arguments, Tool
from scheduling.mcp.tools.get_schedule import reachable
from scheduling.repository.agent_keys import AgentKey
from scheduling.services import Services


class ChangeArguments(Arguments):
    schedule_id: str = Field(min_length=1, max_length=64, description="A waiting schedule's id.")
    send_now: bool = Field(False, description="Send it now instead of at its time.")
    local_time: str | None = Field(
        None, max_length=16, description="Its new wall time, YYYY-MM-DDTHH:MM (not with send_now)."
    )
    timezone: str | None = Field(
        None, max_length=64, description="An IANA zone; its own if not given."
    )
    fold: Literal["earlier", "later"] | None = None
    note: str = Field("", max_length=MAX_NOTE_CHARS, description="A note for the person.")


class ChangeAnswer(Answer):
    proposal: ProposalShape
    next_step: str


async def propose_change(services: Services, key: AgentKey, asked: ChangeArguments) -> ChangeAnswer:
    old = await reachable(services, key, asked.schedule_id)
    if old.status not in WAITING or old.release_id is not None:
        raise Refusal.explained(409, "release_item_alone" if old.release_id else "not_repinnable")
    if asked.send_now == (asked.local_time is not None):
        raise Refusal(422, "invalid_change", "Give either a new local_time, or send_now: true.")
    made = await propose(
        services,
        key,
        Proposed(
            installation_id=key.installation_id,
            content_id=old.content_id,
            kind=old.kind,
            to_state=old.to_state,
            local_time=old.local_time if asked.send_now else asked.local_time or "",
            timezone=old.timezone if asked.send_now else asked.timezone or old.timezone,
            fold=old.fold if asked.send_now else asked.fold,
            note=asked.note,
            changes=old.id,
            changes_as="sent_now" if asked.send_now else "moved",
        ),
    )
    return ChangeAnswer(
        proposal=proposal_shape(made, services.clock.now_ms()),
        next_step=(
            "Nothing is changed yet: a person who may make this change confirms it on the"
            " content's Scheduling page in Dee Wan, which reads the content again and pins what"
            " it shows. It expires at the new time (sent now: at the schedule's own time)."
        ),
    )


TOOL = Tool(
    name="propose_change",
    title="Propose moving a schedule, or sending it now",
    description=(
        "Propose a waiting schedule's new wall time (the same time rules as a schedule's), or"
        " sending it now instead of at its time. It makes a proposal, not a change: a person"
        " confirms it on their page. A release's item is moved with its release, not alone."
    ),
    arguments=ChangeArguments,
    answer=ChangeAnswer,
    call=propose_change,
    read_only=False,
)
