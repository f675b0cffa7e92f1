"""uploads: data files and model folders sent over the network, owned by one contributor;
workers' credentials (``contributors.is_worker``)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def _json() -> sa.types.TypeEngine:
    from sqlalchemy.dialects.postgresql import JSONB

    return sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("contributors") as batch:
        batch.add_column(
            sa.Column("is_worker", sa.Boolean, nullable=False, server_default=sa.false())
        )
    op.create_table(
        "uploads",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("contributor_id", sa.Integer, sa.ForeignKey("contributors.id"), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("filename", sa.String(200), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("received", sa.BigInteger, nullable=False),
        sa.Column("state", sa.String(12), nullable=False),
        sa.Column("files", _json(), nullable=False),
        sa.Column("summary", _json(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("touched_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("contributor_id", "name", name="uq_uploads_owner_name"),
    )
    op.create_index("ix_uploads_contributor_id", "uploads", ["contributor_id"])


def downgrade() -> None:
    op.drop_index("ix_uploads_contributor_id", "uploads")
    op.drop_table("uploads")
    with op.batch_alter_table("contributors") as batch:
        batch.drop_column("is_worker")
