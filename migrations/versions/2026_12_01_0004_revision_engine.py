"""unit revisions record the engine their ExecStart= launches

Revision ID: 0004_revision_engine
Revises: 0003
Create Date: 2026-12-01 21:20:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0004_revision_engine'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('unit_revisions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('engine', sa.String(length=16), server_default='', nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('unit_revisions', schema=None) as batch_op:
        batch_op.drop_column('engine')
