"""subagent category listing indexes

Browsing one category, newest or most installed first, read the listing indexes in order and
dropped the other categories' rows one heap fetch at a time (about ten for each row kept). At
a million sub-agents that was most of a browse page's time; these serve it in order.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 01:45:00

"""
from typing import Sequence, Union

from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0012'
down_revision: Union[str, Sequence[str], None] = '0011'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('subagent', schema=None) as batch_op:
        batch_op.create_index(
            'ix_subagent_category_new',
            ['category', 'visibility', 'status', 'created_at', 'id'],
            unique=False,
        )
        batch_op.create_index(
            'ix_subagent_category_installs',
            ['category', 'visibility', 'status', 'install_count', 'id'],
            unique=False,
        )


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('subagent', schema=None) as batch_op:
        batch_op.drop_index('ix_subagent_category_installs')
        batch_op.drop_index('ix_subagent_category_new')
