"""subagent_version.offer_pending: versions whose forks have not been offered them yet

Set in the transaction that stores a version after the first, cleared once the upstream
offers are made; the sweep (beat) offers what a lost task left. Existing versions are taken as
offered (the column's default, added without rewriting the table on PostgreSQL).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04 20:05:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0018'
down_revision: Union[str, Sequence[str], None] = '0017'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('subagent_version') as batch:
        batch.add_column(
            sa.Column('offer_pending', sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    op.create_index(
        'ix_version_offer_pending',
        'subagent_version',
        ['id'],
        unique=False,
        postgresql_where=sa.text('offer_pending'),
        sqlite_where=sa.text('offer_pending'),
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index('ix_version_offer_pending', table_name='subagent_version')
    with op.batch_alter_table('subagent_version') as batch:
        batch.drop_column('offer_pending')
