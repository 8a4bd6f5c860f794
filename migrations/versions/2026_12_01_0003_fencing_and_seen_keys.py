"""lease fencing tokens; seen_keys (cross-replica dedupe and rate limit)

Revision ID: 0003
Revises: 0002_bench_noise
Create Date: 2026-12-01 21:00:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import services.store.models

revision: str = '0003'
down_revision: str | None = '0002_bench_noise'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('seen_keys',
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('holder', sa.String(length=128), nullable=False),
    sa.Column('expires_at', services.store.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_seen_keys'))
    )
    with op.batch_alter_table('seen_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_seen_keys_expires_at'), ['expires_at'], unique=False)
    with op.batch_alter_table('leases', schema=None) as batch_op:
        batch_op.add_column(sa.Column('fence', sa.String(length=32), server_default='', nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('leases', schema=None) as batch_op:
        batch_op.drop_column('fence')
    with op.batch_alter_table('seen_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_seen_keys_expires_at'))
    op.drop_table('seen_keys')
