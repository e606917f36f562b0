"""daily_stats key covers active_users

The fork tree sizes each node it draws by its average daily users over 30 days: a sum of 30
``daily_stats`` rows per node. A node's rows are written by 30 different days' rollups, so they
sit on 30 heap pages, and a tree of 60 nodes read about 500 pages for one number each. The
primary key's index now carries ``active_users`` (PostgreSQL's ``INCLUDE``): the sum is an
index-only scan. The rollup deletes and re-inserts a day's rows, so no update was HOT before
and none loses it now; the index grows by the column (about a sixth).

The key is rebuilt under the migration's lock on the table: the rollup waits for it (seconds at
millions of rows), reads never do.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04 16:30:00

"""
from typing import Sequence, Union

from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0017'
down_revision: Union[str, Sequence[str], None] = '0016'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    if op.get_bind().dialect.name != "postgresql":
        return  # SQLite has no INCLUDE: its key stays as it was
    # One statement (Alembic's create_primary_key takes no INCLUDE).
    op.execute(
        "ALTER TABLE daily_stats DROP CONSTRAINT daily_stats_pkey, "
        "ADD CONSTRAINT daily_stats_pkey PRIMARY KEY (subagent_id, day) INCLUDE (active_users)"
    )


def downgrade() -> None:
    """Downgrade schema."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "ALTER TABLE daily_stats DROP CONSTRAINT daily_stats_pkey, "
        "ADD CONSTRAINT daily_stats_pkey PRIMARY KEY (subagent_id, day)"
    )
