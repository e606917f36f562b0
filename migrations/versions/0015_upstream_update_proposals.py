"""upstream update proposals

A parent's new version is offered to each of its forks as a three-way merge
(``market.catalog.upstream``): one ``upstream_proposal`` row per fork and upstream
version, which the fork's author accepts or declines, and which the coding agent resolves
when it conflicts.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02 12:40:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel  # noqa: F401  (autogenerate writes sqlmodel.sql.sqltypes.AutoString)


# revision identifiers, used by Alembic.
revision: str = '0015'
down_revision: Union[str, Sequence[str], None] = '0014'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('upstream_proposal',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('fork_id', sa.Integer(), nullable=False),
    sa.Column('parent_id', sa.Integer(), nullable=False),
    sa.Column('base_version_id', sa.Integer(), nullable=False),
    sa.Column('upstream_version_id', sa.Integer(), nullable=False),
    sa.Column('fork_version_id', sa.Integer(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('conflicted', sa.Boolean(), nullable=False),
    sa.Column('merged_sha256', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('file_summary', sa.JSON(), nullable=False),
    sa.Column('conflicts', sa.JSON(), nullable=False),
    sa.Column('added_scopes', sa.JSON(), nullable=False),
    sa.Column('merged_version_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('decided_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['base_version_id'], ['subagent_version.id'], ),
    sa.ForeignKeyConstraint(['fork_id'], ['subagent.id'], ),
    sa.ForeignKeyConstraint(['fork_version_id'], ['subagent_version.id'], ),
    sa.ForeignKeyConstraint(['merged_sha256'], ['bundle_blob.sha256'], ),
    sa.ForeignKeyConstraint(['merged_version_id'], ['subagent_version.id'], ),
    sa.ForeignKeyConstraint(['parent_id'], ['subagent.id'], ),
    sa.ForeignKeyConstraint(['upstream_version_id'], ['subagent_version.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('fork_id', 'upstream_version_id', name='uq_upstream_proposal')
    )
    with op.batch_alter_table('upstream_proposal', schema=None) as batch_op:
        batch_op.create_index('ix_upstream_proposal_fork', ['fork_id', 'status', 'id'], unique=False)
        batch_op.create_index('ix_upstream_proposal_queue', ['status', 'conflicted', 'id'], unique=False)



def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('upstream_proposal', schema=None) as batch_op:
        batch_op.drop_index('ix_upstream_proposal_queue')
        batch_op.drop_index('ix_upstream_proposal_fork')

    op.drop_table('upstream_proposal')
