"""Contributors and their tokens: created, authenticated, listed, revoked."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import or_, select

from panoramia.errors import InputError
from panoramia.store.common import (
    Principal,
    StoreBase,
    TokenInfo,
    as_utc,
    retried,
    utcnow,
)
from panoramia.store.tables import Contributor
from panoramia.store.tokens import hash_token, new_token


class ContributorRows(StoreBase):
    """Contributors and their tokens: created, authenticated, listed, revoked."""

    @retried
    def create_contributor(
        self,
        name: str,
        *,
        admin: bool = False,
        expires_at: datetime | None = None,
        worker: bool = False,
    ) -> str:
        """Register ``name`` and return its token (shown once; only its hash is stored).

        ``expires_at`` (UTC): the token stops authenticating then (None: never)."""
        name = name.strip()
        if not name or len(name) > 120:
            raise InputError("--contributor: a name of 1 to 120 characters is required")
        token = new_token()
        with self.writes.begin() as session:
            if session.scalar(select(Contributor.id).where(Contributor.name == name)):
                raise InputError(f"--contributor: {name!r} already has a token")
            session.add(
                Contributor(
                    name=name,
                    token_hash=hash_token(token),
                    is_admin=admin,
                    is_worker=worker,
                    created_at=utcnow(),
                    expires_at=expires_at,
                )
            )
        return token

    WORKERS_FROM_ENVIRONMENT = "workers (PANORAMIA_WORKER_TOKEN)"

    @retried
    def ensure_worker_token(self, token: str) -> None:
        """Make ``token`` the credential of the workers the operator starts with it
        (``PANORAMIA_WORKER_TOKEN`` in a compose file's environment): one worker principal,
        its hash replaced when the token changes. InputError for a token under 32
        characters."""
        if len(token) < 32:
            raise InputError("PANORAMIA_WORKER_TOKEN: at least 32 characters")
        with self.writes.begin() as session:
            row = session.scalar(
                select(Contributor).where(Contributor.name == self.WORKERS_FROM_ENVIRONMENT)
            )
            if row is None:
                session.add(
                    Contributor(
                        name=self.WORKERS_FROM_ENVIRONMENT, token_hash=hash_token(token),
                        is_admin=False, is_worker=True, created_at=utcnow(),
                    )
                )  # fmt: skip
            else:
                row.token_hash, row.is_worker, row.is_admin = hash_token(token), True, False

    def authenticate(self, token: str) -> Principal | None:
        """The principal holding ``token``, or None (unknown, revoked or expired)."""
        return self.authenticate_digest(hash_token(token))

    def authenticate_digest(self, token_hash: str) -> Principal | None:
        """The principal whose token's digest is ``token_hash`` (a console session holds the
        digest, never the token), or None (unknown, revoked or expired)."""
        now = utcnow()
        query = select(Contributor).where(
            Contributor.token_hash == token_hash,
            Contributor.revoked_at.is_(None),
            or_(Contributor.expires_at.is_(None), Contributor.expires_at > now),
        )
        with self.sessions() as session:
            row = session.scalar(query)
            if row is None:
                return None
            return Principal(
                row.id, row.name, row.is_admin and not row.is_worker,
                as_utc(row.expires_at), as_utc(row.sessions_after), row.is_worker,
            )  # fmt: skip

    def list_tokens(self) -> list[TokenInfo]:
        """Every contributor's token state, by name."""
        with self.sessions() as session:
            rows = session.scalars(select(Contributor).order_by(Contributor.name))
            return [
                TokenInfo(
                    r.name,
                    r.is_admin,
                    as_utc(r.created_at),
                    as_utc(r.expires_at),
                    as_utc(r.revoked_at),
                )
                for r in rows
            ]

    @retried
    def end_sessions(self, principal: Principal) -> None:
        """Sign ``principal`` out of the console everywhere: sessions signed in until now end."""
        with self.writes.begin() as session:
            row = session.get(Contributor, principal.contributor_id)
            if row is not None:
                row.sessions_after = utcnow()

    @retried
    def revoke_token(self, name: str) -> None:
        """Revoke ``name``'s token (its reports and audits stay; a new token needs a new name)."""
        with self.writes.begin() as session:
            row = session.scalar(select(Contributor).where(Contributor.name == name))
            if row is None:
                raise InputError(f"--contributor: no contributor named {name!r}")
            if row.revoked_at is None:
                row.revoked_at = utcnow()
