"""drop the databases' full-text indexes

Every search — browse, recommendation context, fork suggestions — now asks one relevance
engine (the in-process text index: words segmented per language, English glosses of Chinese
and Japanese words, character n-grams), so the SQLite FTS5 table with its triggers and the
PostgreSQL tsvector column with its GIN index have no reader left. Dropping them also takes
their upkeep off every write to ``subagent``. A downgrade rebuilds them from the rows.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 18:40:00

"""
from typing import Sequence, Union

from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0008'
down_revision: Union[str, Sequence[str], None] = '0007'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


SQLITE_FTS = [
    """CREATE VIRTUAL TABLE subagent_fts USING fts5(
        title, summary, story, tags, content='subagent', content_rowid='id',
        tokenize='porter unicode61')""",
    """CREATE TRIGGER subagent_fts_ai AFTER INSERT ON subagent BEGIN
        INSERT INTO subagent_fts(rowid, title, summary, story, tags)
        VALUES (new.id, new.title, new.summary, new.story, new.tags);
    END""",
    """CREATE TRIGGER subagent_fts_ad AFTER DELETE ON subagent BEGIN
        INSERT INTO subagent_fts(subagent_fts, rowid, title, summary, story, tags)
        VALUES ('delete', old.id, old.title, old.summary, old.story, old.tags);
    END""",
    """CREATE TRIGGER subagent_fts_au AFTER UPDATE OF title, summary, story, tags ON subagent BEGIN
        INSERT INTO subagent_fts(subagent_fts, rowid, title, summary, story, tags)
        VALUES ('delete', old.id, old.title, old.summary, old.story, old.tags);
        INSERT INTO subagent_fts(rowid, title, summary, story, tags)
        VALUES (new.id, new.title, new.summary, new.story, new.tags);
    END""",
    # An external-content table starts empty: index the rows already there.
    "INSERT INTO subagent_fts(subagent_fts) VALUES ('rebuild')",
]

POSTGRES_FTS = [
    """ALTER TABLE subagent ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', coalesce(title, '')), 'A') ||
        setweight(to_tsvector('english', coalesce(tags::text, '')), 'B') ||
        setweight(to_tsvector('english', coalesce(summary, '')), 'B') ||
        setweight(to_tsvector('english', coalesce(story, '')), 'C')) STORED""",
    "CREATE INDEX ix_subagent_search_vector ON subagent USING gin (search_vector)",
]


def upgrade() -> None:
    """Upgrade schema."""
    if op.get_bind().dialect.name == "sqlite":
        for name in ("subagent_fts_ai", "subagent_fts_ad", "subagent_fts_au"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS subagent_fts")
    else:
        op.execute("DROP INDEX IF EXISTS ix_subagent_search_vector")
        op.execute("ALTER TABLE subagent DROP COLUMN IF EXISTS search_vector")


def downgrade() -> None:
    """Downgrade schema."""
    statements = SQLITE_FTS if op.get_bind().dialect.name == "sqlite" else POSTGRES_FTS
    for statement in statements:
        op.execute(statement)
