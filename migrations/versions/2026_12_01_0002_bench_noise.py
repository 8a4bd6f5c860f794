"""bench results keep the bootstrap interval of their median decode rate

Revision ID: 0002_bench_noise
Revises: 0001
Create Date: 2026-12-01 20:50:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0002_bench_noise'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('bench_results', schema=None) as batch_op:
        batch_op.add_column(sa.Column('decode_tok_s_ci_lo', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('decode_tok_s_ci_hi', sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('bench_results', schema=None) as batch_op:
        batch_op.drop_column('decode_tok_s_ci_hi')
        batch_op.drop_column('decode_tok_s_ci_lo')
