"""`withdraw_proposal`: take back one of this key's proposals still waiting for a person."""

from __future__ import annotations

from pydantic import Field

from scheduling.actions.agents_propose import withdraw
from scheduling.mcp.shapes import ProposalShape, proposal_shape
from scheduling.mcp.tool import Answer, Arguments, Tool
from scheduling.repository.agent_keys import AgentKey
from scheduling.services import Services


class WithdrawArguments(Arguments):
    proposal_id: str = Field(min_length=1, max_length=64)


class WithdrawAnswer(Answer):
    proposal: ProposalShape


async def withdraw_proposal(
    services: Services, key: AgentKey, asked: WithdrawArguments
) -> WithdrawAnswer:
    ended = await withdraw(services, key, asked.proposal_id)
    return WithdrawAnswer(proposal=proposal_shape(ended, services.clock.now_ms()))


TOOL = Tool(
    name="withdraw_proposal",
    title="Withdraw a proposal",
    description="Take back a proposal this key made that no person has confirmed or declined yet.",
    arguments=WithdrawArguments,
    answer=WithdrawAnswer,
    call=withdraw_proposal,
    read_only=False,
    destructive=True,
)
