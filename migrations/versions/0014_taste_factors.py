"""taste factors for personal scores

Each full ranking run fits a low-rank taste on what the ranking leaves of every rating
(``evolution.personal``) and stores its factors: ``rater_taste`` (a rater's taste, personal)
and ``subagent_taste`` (which tastes a sub-agent suits). ``POST /recommendations`` adds their
product to the candidates' scores for a person who has one.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02 09:40:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0014'
down_revision: Union[str, Sequence[str], None] = '0013'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        'rater_taste',
        sa.Column('user_id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('factors', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('user_id'),
    )
    op.create_table(
        'subagent_taste',
        sa.Column('subagent_id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('factors', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('subagent_id'),
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('subagent_taste')
    op.drop_table('rater_taste')
