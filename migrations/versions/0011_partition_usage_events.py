"""usage events partitioned by month (PostgreSQL)

``usage_event`` becomes a table range-partitioned by ``occurred_day``, one partition a month
plus a default one (``market.usage.partitions`` says why, and how exactly-once holds: the key
becomes ``(event_id, occurred_day)``). The populated table is converted in this transaction:
renamed aside, every row copied into the new table in day order (so each month's BRIN index
sees its rows in time order), the two counts compared, and only then the old table dropped.
A month partition is made for every month that holds rows, and for the current month and the
three after it. SQLite keeps its plain table.

The copy rewrites the table once (minutes per hundred million rows) while ingest waits on the
table lock: run it in a maintenance window on a large table.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 01:40:00

"""
from datetime import UTC, date, datetime, timedelta
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0011'
down_revision: Union[str, Sequence[str], None] = '0010'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

MONTHS_AHEAD = 3
# Events are accepted up to a week late: the month they may still arrive for gets one too.
LATE_EVENTS = timedelta(days=7)


def _next_month(month: date) -> date:
    return (month.replace(day=28) + timedelta(days=4)).replace(day=1)


def _indexes(table: str) -> None:
    op.execute(f"CREATE INDEX ix_usage_event_subagent_day ON {table} (subagent_id, occurred_day)")
    op.execute(f"CREATE INDEX ix_usage_event_day_brin ON {table} USING brin (occurred_day)")
    op.execute(
        f"CREATE INDEX ix_usage_event_uninstalls ON {table} (subagent_id, occurred_day) "
        "WHERE kind = 'uninstall'"
    )


def _drop_indexes() -> None:
    for name in ("ix_usage_event_subagent_day", "ix_usage_event_day_brin", "ix_usage_event_uninstalls"):
        op.execute(f"DROP INDEX {name}")


def _copy_checked(source: str, target: str) -> None:
    bind = op.get_bind()
    bind.execute(sa.text(f"INSERT INTO {target} SELECT * FROM {source} ORDER BY occurred_day, received_at"))
    before = bind.execute(sa.text(f"SELECT count(*) FROM {source}")).scalar()
    after = bind.execute(sa.text(f"SELECT count(*) FROM {target}")).scalar()
    if before != after:
        raise RuntimeError(f"copied {after} of {before} usage events: nothing was changed")


def upgrade() -> None:
    """Upgrade schema."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE usage_event RENAME TO usage_event_unpartitioned")
    op.execute("ALTER TABLE usage_event_unpartitioned RENAME CONSTRAINT usage_event_pkey TO usage_event_unpartitioned_pkey")
    _drop_indexes()
    op.execute("CREATE TABLE usage_event (LIKE usage_event_unpartitioned INCLUDING DEFAULTS) PARTITION BY RANGE (occurred_day)")
    op.execute("ALTER TABLE usage_event ADD CONSTRAINT usage_event_pkey PRIMARY KEY (event_id, occurred_day)")
    _indexes("usage_event")
    op.execute("CREATE TABLE usage_event_default PARTITION OF usage_event DEFAULT")
    today = datetime.now(UTC).date()
    first = op.get_bind().execute(sa.text("SELECT min(occurred_day) FROM usage_event_unpartitioned")).scalar()
    month = min(first or today, today - LATE_EVENTS).replace(day=1)
    last = today.replace(day=1)
    for _ in range(MONTHS_AHEAD):
        last = _next_month(last)
    while month <= last:
        end = _next_month(month)
        op.execute(
            f"CREATE TABLE usage_event_y{month.year:04d}m{month.month:02d} PARTITION OF usage_event "
            f"FOR VALUES FROM ('{month.isoformat()}') TO ('{end.isoformat()}')"
        )
        month = end
    _copy_checked("usage_event_unpartitioned", "usage_event")
    op.execute("DROP TABLE usage_event_unpartitioned")


def downgrade() -> None:
    """Downgrade schema: one plain table again, keyed by event_id alone (fails, changing
    nothing, if an id was stored on two days meanwhile)."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE usage_event RENAME TO usage_event_partitioned")
    _drop_indexes()
    op.execute("CREATE TABLE usage_event (LIKE usage_event_partitioned INCLUDING DEFAULTS)")
    op.execute("ALTER TABLE usage_event ADD CONSTRAINT usage_event_plain_pkey PRIMARY KEY (event_id)")
    _copy_checked("usage_event_partitioned", "usage_event")
    op.execute("DROP TABLE usage_event_partitioned")
    op.execute("ALTER TABLE usage_event RENAME CONSTRAINT usage_event_plain_pkey TO usage_event_pkey")
    _indexes("usage_event")
