"""ratings that break the rating rules stop counting

From now on only people who installed a sub-agent (any version, still installed or not) or
used it (any usage event) rate it, never its author, and a service rates for a person only
with the ``feedback:on-behalf`` scope (the rating's existing ``client_id`` records which
service wrote it). Ratings stored before these rules are kept, for the record, but the ones
that break them are flagged in ``excluded_reason`` ("author" or "not a user") and every
reader leaves flagged rows out. The (sub-agent, day) of each flagged rating is marked dirty
so the next rollup recounts that day without it.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 19:40:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel  # noqa: F401  (autogenerate writes sqlmodel.sql.sqltypes.AutoString)


# revision identifiers, used by Alembic.
revision: str = '0009'
down_revision: Union[str, Sequence[str], None] = '0008'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


FLAG_AUTHORS = """
UPDATE feedback SET excluded_reason = 'author'
WHERE user_id = (SELECT s.author_id FROM subagent s WHERE s.id = feedback.subagent_id)
"""
FLAG_STRANGERS = """
UPDATE feedback SET excluded_reason = 'not a user'
WHERE excluded_reason IS NULL
  AND NOT EXISTS (SELECT 1 FROM install i
                  WHERE i.user_id = feedback.user_id AND i.subagent_id = feedback.subagent_id)
  AND NOT EXISTS (SELECT 1 FROM usage_event e
                  WHERE e.user_id = feedback.user_id AND e.subagent_id = feedback.subagent_id)
"""
RECOUNT_FLAGGED_DAYS = """
INSERT INTO rollup_dirty (subagent_id, day)
SELECT DISTINCT subagent_id, updated_day FROM feedback WHERE excluded_reason IS NOT NULL
"""


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('feedback', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                'excluded_reason',
                sqlmodel.sql.sqltypes.AutoString(length=16),
                nullable=True,
            )
        )
    op.execute(FLAG_AUTHORS)
    op.execute(FLAG_STRANGERS)
    op.execute(RECOUNT_FLAGGED_DAYS)


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('feedback', schema=None) as batch_op:
        batch_op.drop_column('excluded_reason')
