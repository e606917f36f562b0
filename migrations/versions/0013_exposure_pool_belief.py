"""exposure pool belief

A decision's first exposure row now keeps what the slate policy believed of every candidate it
drew from (``pool_belief``: sub-agent id → [E[θ], sd(θ), young]), so ``sprig ope`` can say
what Thompson sampling with another young share would have shown at each logged slot.
Decisions logged before have none: they support only the candidates built from the logged
slot distributions.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 09:20:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0013'
down_revision: Union[str, Sequence[str], None] = '0012'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('exposure', schema=None) as batch_op:
        batch_op.add_column(sa.Column('pool_belief', sa.JSON(), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('exposure', schema=None) as batch_op:
        batch_op.drop_column('pool_belief')
