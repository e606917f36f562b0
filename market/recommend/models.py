"""``exposure``: every sub-agent ``POST /recommendations`` showed, with the probability the
policy had of showing it there, so events and feedback that cite it can be reweighted off-policy."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import JSON, Column, Index
from sqlmodel import Field, SQLModel

from market.platform.time import timestamp_field


class Exposure(SQLModel, table=True):
    __tablename__ = "exposure"
    __table_args__ = (
        Index("ix_exposure_decision", "decision_id", "slot"),
        Index("ix_exposure_user_time", "user_id", "created_at"),
        Index("ix_exposure_subagent", "subagent_id", "created_at"),
    )

    # The id the main agent cites in later events and feedback.
    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    decision_id: uuid.UUID  # one per slate: the propensities of a decision's slots
    slot: int
    user_id: int
    subagent_id: int
    version_id: int
    propensity: float  # P(policy shows this sub-agent in this slot | earlier slots)
    young_slot: bool = False
    policy_version: str = Field(max_length=40)
    context: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # The slot's whole distribution, {sub-agent id: probability} over the candidates the
    # policy could have shown there (sums to one), for off-policy evaluation of other policies.
    slot_distribution: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # On a decision's first slot only: what the policy believed of each candidate it drew from,
    # {sub-agent id: [E[θ], sd(θ), young]}, so another policy's slot distributions can be
    # recomputed for the logged slate (``sprig ope --candidate young-share:X``).
    pool_belief: dict | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    client_id: int | None = Field(default=None)
    created_at: datetime = timestamp_field()
