"""Shared models (docs/SPEC.md §3.3): published by an owner, audited by the contributors of
their audience, and the units of those audits the per-model leakage report reads.

Scoping: a shared model version is *visible* to its owner, to admins, and to the contributors
of its audience (named ones, or everyone where ``audience_all``); to anyone else every lookup
returns None, exactly as an unknown name does (the service answers 404 for both). What a
visible version's report shows each viewer is :mod:`panoramia.report.shared_leakage`'s rule.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Select, exists, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from panoramia.report.shared_leakage import ContributorUnit, Published, RunRecord
from panoramia.store.common import (
    ACTIVE,
    FINISHED,
    Principal,
    StoreBase,
    as_utc,
    retried,
    utcnow,
)
from panoramia.store.tables import (
    Audit,
    Contributor,
    Report,
    SharedAudience,
    SharedModel,
    SharedParticipant,
    Upload,
)

MAX_AUDIENCE = 1000
"""The most contributors one publication names."""


class SharedModelExists(Exception):
    """The owner already published this name and version (a new version is a new name)."""


class SharedFileGone(Exception):
    """The model upload a publication names is being deleted (or not ready) now."""


class SharedModelWithdrawn(Exception):
    """The version was withdrawn by its owner: no new audit may name it."""


@dataclass(frozen=True)
class Publication:
    """What an owner publishes: ``name``, ``version``, the model's file (her ``upload_id``, or
    an operator-placed folder ``placed``), its ``modality``, ``declared`` metadata, the
    ``claim`` (validated claims JSON) and the audience (``everyone``, else ``names``)."""

    name: str
    version: str
    upload_id: str | None
    placed: str | None
    modality: str | None
    declared: dict
    claim: dict | None
    everyone: bool
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class SharedEntry:
    """A shared model version as a listing shows it: never its file, path or upload."""

    id: int
    owner: str
    name: str
    version: str
    modality: str | None
    claim: dict | None
    declared: dict
    published_at: datetime
    withdrawn: bool
    audience: str
    """``everyone``, or ``named``: the owner sees the names in :attr:`names`."""
    names: tuple[str, ...]
    mine: bool
    """Whether the caller owns it."""
    sees_audience: bool
    """Whether the caller may see its audience's names (its owner, an admin)."""
    audience_size: int | None
    """How many contributors it is published for (None: everyone): what a contributor of
    the audience is told, so that she knows whether its owner could tell her row apart."""


def visible(principal: Principal) -> Select:
    """Every shared model version ``principal`` may see (see the module docstring)."""
    query = select(SharedModel, Contributor.name).join(
        Contributor, Contributor.id == SharedModel.owner_id
    )
    if principal.is_admin:
        return query
    named = exists().where(
        SharedAudience.shared_model_id == SharedModel.id,
        SharedAudience.contributor_name == principal.name,
    )
    return query.where(
        or_(SharedModel.owner_id == principal.contributor_id, SharedModel.audience_all, named)
    )


class SharedRows(StoreBase):
    """Publishing, finding and withdrawing shared models; participation; leakage units."""

    @retried
    def publish(self, principal: Principal, publication: Publication) -> SharedEntry:
        """Publish ``publication`` as ``principal``'s; :class:`SharedModelExists` where she
        already published that name and version."""
        try:
            with self.writes.begin() as session:
                if publication.upload_id is not None:  # its deletion waits, or refuses us
                    state = session.scalar(
                        select(Upload.state).where(Upload.id == publication.upload_id)
                        .with_for_update()
                    )  # fmt: skip
                    if state != "ready":
                        raise SharedFileGone("the upload is being deleted or is not ready")
                row = SharedModel(
                    owner_id=principal.contributor_id, name=publication.name,
                    version=publication.version, upload_id=publication.upload_id,
                    placed=publication.placed, modality=publication.modality,
                    declared=publication.declared, claim=publication.claim,
                    audience_all=publication.everyone, published_at=utcnow(),
                )  # fmt: skip
                session.add(row)
                session.flush()
                for name in sorted(set(publication.names))[:MAX_AUDIENCE]:
                    session.add(SharedAudience(shared_model_id=row.id, contributor_name=name))
        except IntegrityError:
            raise SharedModelExists(
                f"you already published {publication.name!r} version {publication.version!r}: "
                "publish a new version"
            ) from None
        found = self.find_shared(principal, principal.name, publication.name, publication.version)
        assert found is not None  # just written by her
        return found

    def list_shared(self, principal: Principal) -> list[SharedEntry]:
        """The versions ``principal`` may see, by owner, name and publication."""
        query = visible(principal).order_by(
            Contributor.name, SharedModel.name, SharedModel.published_at, SharedModel.id
        )
        with self.sessions() as session:
            rows = list(session.execute(query))
            return [self._entry(session, principal, row, owner) for row, owner in rows]

    def find_shared(
        self, principal: Principal, owner: str, name: str, version: str | None = None
    ) -> SharedEntry | None:
        """One visible version (the latest published where ``version`` is None); None for an
        unknown one and one she may not see alike."""
        query = visible(principal).where(Contributor.name == owner, SharedModel.name == name)
        if version is not None:
            query = query.where(SharedModel.version == version)
        query = query.order_by(SharedModel.published_at.desc(), SharedModel.id.desc()).limit(1)
        with self.sessions() as session:
            found = session.execute(query).first()
            return self._entry(session, principal, *found) if found is not None else None

    def shared_versions(self, principal: Principal, owner: str, name: str) -> list[SharedEntry]:
        """Every visible version of ``owner``'s ``name``, oldest first ([] where none)."""
        query = (
            visible(principal)
            .where(Contributor.name == owner, SharedModel.name == name)
            .order_by(SharedModel.published_at, SharedModel.id)
        )
        with self.sessions() as session:
            return [self._entry(session, principal, r, o) for r, o in session.execute(query)]

    def shared_file(self, shared_id: int) -> tuple[str | None, str | None]:
        """Internal (the door's): the version's ``upload_id`` and ``placed`` folder."""
        with self.sessions() as session:
            row = session.get(SharedModel, shared_id)
            return (row.upload_id, row.placed) if row is not None else (None, None)

    def _entry(
        self, session: Session, principal: Principal, row: SharedModel, owner: str
    ) -> SharedEntry:
        sees = row.owner_id == principal.contributor_id or principal.is_admin
        listed: tuple[str, ...] = ()
        if not row.audience_all:
            listed = tuple(session.scalars(
                select(SharedAudience.contributor_name)
                .where(SharedAudience.shared_model_id == row.id)
                .order_by(SharedAudience.contributor_name)
            ))  # fmt: skip
        return SharedEntry(
            id=row.id, owner=owner, name=row.name, version=row.version, modality=row.modality,
            claim=row.claim, declared=row.declared or {},
            published_at=as_utc(row.published_at), withdrawn=row.withdrawn_at is not None,
            audience="everyone" if row.audience_all else "named",
            names=listed if sees else (), mine=row.owner_id == principal.contributor_id,
            sees_audience=sees, audience_size=None if row.audience_all else len(listed),
        )  # fmt: skip

    @retried
    def withdraw_shared(self, principal: Principal, name: str, version: str) -> bool | None:
        """Withdraw her own version (no new audit may name it; its audits and reports stay):
        True where it is now withdrawn, None where she owns no such version."""
        with self.writes.begin() as session:
            row = session.scalar(
                select(SharedModel)
                .where(
                    SharedModel.owner_id == principal.contributor_id,
                    SharedModel.name == name,
                    SharedModel.version == version,
                )
                .with_for_update()
            )
            if row is None:
                return None
            if row.withdrawn_at is None:
                row.withdrawn_at = utcnow()
            return True

    def published_upload(self, upload_id: str) -> list[str]:
        """The ``name/version`` of each version not withdrawn that ``upload_id`` backs (its
        owner may not delete it while any is)."""
        query = select(SharedModel).where(
            SharedModel.upload_id == upload_id, SharedModel.withdrawn_at.is_(None)
        )
        with self.sessions() as session:
            return [f"{row.name}/{row.version}" for row in session.scalars(query)]

    @retried
    def detach_upload(self, upload_id: str) -> None:
        """Before ``upload_id``'s row is removed: every version it backs loses its file and is
        withdrawn (its audits and reports stay)."""
        with self.writes.begin() as session:
            for row in session.scalars(
                select(SharedModel).where(SharedModel.upload_id == upload_id).with_for_update()
            ):
                row.upload_id = None
                row.withdrawn_at = row.withdrawn_at or utcnow()

    def active_shared_audits(self, upload_id: str) -> int:
        """How many queued or running audits, of any contributor, audit a shared model
        ``upload_id`` backs (its deletion waits for them)."""
        query = (
            select(func.count(Audit.id))
            .join(SharedModel, SharedModel.id == Audit.shared_model_id)
            .where(SharedModel.upload_id == upload_id, Audit.status.in_(ACTIVE))
        )
        with self.sessions() as session:
            return int(session.scalar(query) or 0)

    def running_shared_audit_reads(self, upload_id: str) -> bool:
        """Whether a running audit of any contributor audits a shared model ``upload_id``
        backs (a remote worker may then fetch it)."""
        query = (
            select(Audit.id)
            .join(SharedModel, SharedModel.id == Audit.shared_model_id)
            .where(SharedModel.upload_id == upload_id, Audit.status == "running")
            .limit(1)
        )
        with self.sessions() as session:
            return session.scalar(query) is not None

    def join_shared(self, session: Session, shared_id: int, contributor_id: int) -> None:
        """Inside a submission's transaction: lock the version (refusing a withdrawn one with
        :class:`SharedModelWithdrawn`) and record her as a participant at her first audit,
        under a pseudonym of this version alone (never the one she has under another
        version: an owner who publishes a version for one named contributor would otherwise
        learn her rows in every version)."""
        row = session.scalar(
            select(SharedModel).where(SharedModel.id == shared_id).with_for_update()
        )
        if row is None or row.withdrawn_at is not None:
            raise SharedModelWithdrawn("this shared model version was withdrawn by its owner")
        if session.scalar(
            select(SharedParticipant.id).where(
                SharedParticipant.shared_model_id == shared_id,
                SharedParticipant.contributor_id == contributor_id,
            )
        ):
            return
        taken = set(session.scalars(
            select(SharedParticipant.pseudonym)
            .where(SharedParticipant.shared_model_id == shared_id)
        ))  # fmt: skip
        pseudonym = None
        while pseudonym is None or pseudonym in taken:  # a new one each version: unlinkable
            pseudonym = f"contributor-{secrets.token_hex(3)}"
        session.add(SharedParticipant(
            shared_model_id=shared_id, contributor_id=contributor_id, pseudonym=pseudonym,
            named=False, joined_at=utcnow(),
        ))  # fmt: skip

    @retried
    def set_participation(
        self,
        principal: Principal,
        shared_id: int,
        *,
        named: bool | None = None,
        withdrawn: bool | None = None,
    ) -> bool:
        """Her choices for one version she audited: to be ``named`` to the owner (else her
        pseudonym), to have ``withdrawn`` her audits from its report; False where she has
        not audited it."""
        with self.writes.begin() as session:
            row = session.scalar(
                select(SharedParticipant)
                .where(
                    SharedParticipant.shared_model_id == shared_id,
                    SharedParticipant.contributor_id == principal.contributor_id,
                )
                .with_for_update()
            )
            if row is None:
                return False
            if named is not None:
                row.named = named
            if withdrawn is not None:
                row.withdrawn_at = utcnow() if withdrawn else None
            return True

    def participation(self, principal: Principal, shared_id: int) -> SharedParticipant | None:
        """Her participant row of one version (None: she has not audited it)."""
        with self.sessions() as session:
            return session.scalar(
                select(SharedParticipant).where(
                    SharedParticipant.shared_model_id == shared_id,
                    SharedParticipant.contributor_id == principal.contributor_id,
                )
            )

    def published(self, entry: SharedEntry) -> Published:
        """What the report says of the publication itself."""
        return Published(entry.owner, entry.name, entry.version, entry.published_at,
                         entry.withdrawn, entry.claim)  # fmt: skip

    def leakage_units(self, shared_id: int) -> list[ContributorUnit]:
        """Each counted contributor's ended runs of the version, all of them as one unit
        (docs/SPEC.md §3.3): service-run audits naming it, control runs left out, its owner's
        own audits left out, a withdrawn participant not counted, and a contributor who
        deleted data any of her runs read not counted; by participant order."""
        with self.sessions() as session:
            owner_id = session.scalar(
                select(SharedModel.owner_id).where(SharedModel.id == shared_id)
            )
            participants = list(session.execute(
                select(SharedParticipant, Contributor.name)
                .join(Contributor, Contributor.id == SharedParticipant.contributor_id)
                .where(SharedParticipant.shared_model_id == shared_id)
                .order_by(SharedParticipant.id)
            ))  # fmt: skip
            audits = list(session.scalars(
                select(Audit).where(Audit.shared_model_id == shared_id)
                .order_by(Audit.created_at, Audit.id)
            ))  # fmt: skip
            digests = dict(session.execute(
                select(Report.audit_id, Report.digest)
                .where(Report.audit_id.in_([a.id for a in audits]))
            ).all())  # fmt: skip
            named_uploads = {
                upload_id
                for audit in audits
                for upload_id in ((audit.request or {}).get("uploads") or {}).values()
            }
            kept = set(session.scalars(select(Upload.id).where(Upload.id.in_(named_uploads))))
        runs: dict[int, list[Audit]] = {}
        erased: set[int] = set()
        for audit in audits:
            if ((audit.request or {}).get("repeat") or {}).get("role") == "control":
                continue
            read = set(((audit.request or {}).get("uploads") or {}).values())
            if not read <= kept:
                erased.add(audit.contributor_id)
            if audit.status in FINISHED:
                runs.setdefault(audit.contributor_id, []).append(audit)
        counted = []
        for participant, name in participants:
            who = participant.contributor_id
            if (
                who == owner_id
                or who in erased
                or participant.withdrawn_at is not None
                or not runs.get(who)
                or all(run.status == "cancelled" for run in runs[who])
            ):
                continue
            counted.append(ContributorUnit(
                key=who,
                label=name if participant.named else participant.pseudonym,
                named=participant.named,
                runs=[RunRecord(run.status, digests.get(run.id), as_utc(run.finished_at))
                      for run in runs[who]],
            ))  # fmt: skip
        return counted
