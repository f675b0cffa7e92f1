"""shared_models, shared_audience, shared_participants and audits.shared_model_id: a model its
owner publishes for contributors to audit, and the per-model leakage report built from their
audits (docs/SPEC.md §3.3); every existing row is kept (its audits name no shared model)

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "shared_models",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("owner_id", sa.Integer,
                  sa.ForeignKey("contributors.id", name="fk_shared_models_owner"),
                  nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("upload_id", sa.String(36),
                  sa.ForeignKey("uploads.id", name="fk_shared_models_upload"), nullable=True),
        sa.Column("placed", sa.Text, nullable=True),
        sa.Column("modality", sa.String(16), nullable=True),
        sa.Column("declared", JSON, nullable=False),
        sa.Column("claim", JSON, nullable=True),
        sa.Column("audience_all", sa.Boolean, nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("withdrawn_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("owner_id", "name", "version",
                            name="uq_shared_models_owner_name_version"),
    )  # fmt: skip
    op.create_index("ix_shared_models_owner_id", "shared_models", ["owner_id"])
    op.create_index("ix_shared_models_upload_id", "shared_models", ["upload_id"])
    op.create_table(
        "shared_audience",
        sa.Column("shared_model_id", sa.Integer,
                  sa.ForeignKey("shared_models.id", ondelete="CASCADE",
                                name="fk_shared_audience_model"),
                  primary_key=True),
        sa.Column("contributor_name", sa.String(120), primary_key=True),
    )  # fmt: skip
    op.create_index("ix_shared_audience_contributor_name", "shared_audience", ["contributor_name"])
    op.create_table(
        "shared_participants",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("shared_model_id", sa.Integer,
                  sa.ForeignKey("shared_models.id", name="fk_shared_participants_model"),
                  nullable=False),
        sa.Column("contributor_id", sa.Integer,
                  sa.ForeignKey("contributors.id", name="fk_shared_participants_contributor"),
                  nullable=False),
        sa.Column("pseudonym", sa.String(40), nullable=False),
        sa.Column("named", sa.Boolean, nullable=False),
        sa.Column("withdrawn_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("joined_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("shared_model_id", "contributor_id",
                            name="uq_shared_participants_model_contributor"),
    )  # fmt: skip
    op.create_index(
        "ix_shared_participants_shared_model_id", "shared_participants", ["shared_model_id"]
    )
    op.create_index(
        "ix_shared_participants_contributor_id", "shared_participants", ["contributor_id"]
    )
    with op.batch_alter_table("audits") as batch:
        batch.add_column(sa.Column("shared_model_id", sa.Integer, nullable=True))
        batch.create_index("ix_audits_shared_model_id", ["shared_model_id"])
        batch.create_foreign_key(
            "fk_audits_shared_model", "shared_models", ["shared_model_id"], ["id"]
        )


def downgrade() -> None:
    with op.batch_alter_table("audits") as batch:
        batch.drop_constraint("fk_audits_shared_model", type_="foreignkey")
        batch.drop_index("ix_audits_shared_model_id")
        batch.drop_column("shared_model_id")
    op.drop_table("shared_participants")
    op.drop_table("shared_audience")
    op.drop_table("shared_models")
