"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

JSON_COLUMN = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "contributors",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("is_admin", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("declared", JSON_COLUMN, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", "version", name="uq_models_name_version"),
    )
    op.create_table(
        "audits",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("contributor_id", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("request", JSON_COLUMN, nullable=False),
        sa.Column("progress", JSON_COLUMN, nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=True),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("timings", JSON_COLUMN, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["contributor_id"],
            ["contributors.id"],
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("audits", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_audits_contributor_id"), ["contributor_id"], unique=False
        )
        batch_op.create_index(
            "ix_audits_status_heartbeat", ["status", "heartbeat_at"], unique=False
        )

    op.create_table(
        "reports",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("contributor_id", sa.Integer(), nullable=False),
        sa.Column("audit_id", sa.String(length=36), nullable=True),
        sa.Column("modality", sa.String(length=16), nullable=False),
        sa.Column("c_lb", sa.Float(), nullable=False),
        sa.Column("c_plus_eps_lb", sa.Float(), nullable=False),
        sa.Column("eps_tilde", sa.Float(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("artifact_location", sa.Text(), nullable=True),
        sa.Column("document", JSON_COLUMN, nullable=False),
        sa.ForeignKeyConstraint(
            ["audit_id"],
            ["audits.id"],
        ),
        sa.ForeignKeyConstraint(
            ["contributor_id"],
            ["contributors.id"],
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("audit_id"),
    )
    with op.batch_alter_table("reports", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_reports_contributor_id"), ["contributor_id"], unique=False
        )
        batch_op.create_index("ix_reports_model_created", ["model_id", "created_at"], unique=False)

    op.create_table(
        "report_pages",
        sa.Column("report_id", sa.String(length=36), nullable=False),
        sa.Column("html", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["report_id"], ["reports.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("report_id"),
    )


def downgrade() -> None:
    op.drop_table("report_pages")
    with op.batch_alter_table("reports", schema=None) as batch_op:
        batch_op.drop_index("ix_reports_model_created")
        batch_op.drop_index(batch_op.f("ix_reports_contributor_id"))

    op.drop_table("reports")
    with op.batch_alter_table("audits", schema=None) as batch_op:
        batch_op.drop_index("ix_audits_status_heartbeat")
        batch_op.drop_index(batch_op.f("ix_audits_contributor_id"))

    op.drop_table("audits")
    op.drop_table("models")
    op.drop_table("contributors")
