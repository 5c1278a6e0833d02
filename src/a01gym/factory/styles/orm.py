# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""The SQLAlchemy 2.0 ORM style: mapped classes, one ``Session`` per request, ``select()``.

:class:`OrmStyle` writes the data layer itself (``app/tables.py`` with the mapped classes,
``app/db.py`` with the engine and the session dependency, ``app/repository.py`` from
:mod:`~a01gym.factory.styles.orm_repository`, ``app/storage.py``) and moves every other module
onto sessions with :mod:`~a01gym.factory.styles.orm_rewrite`. The tables, columns and defaults
are those of the plain-SQL schema, so the sandbox seeds both styles alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a01gym.factory.styles import orm_repository, orm_rewrite
from a01gym.factory.styles.orm_repository import SHAPES

if TYPE_CHECKING:
    from a01gym.factory.renderhost import Renderer

__all__ = ["OrmStyle"]


class OrmStyle:
    """SQLAlchemy 2.0 sessions and mapped classes."""

    name = "sqlalchemy"

    def finish(self, r: Renderer, files: dict[str, str]) -> dict[str, str]:
        """``files`` with the ORM data layer and every other module on sessions."""
        own = {
            "app/tables.py": tables(r),
            "app/db.py": db(r),
            "app/repository.py": orm_repository.repository(r),
            "app/storage.py": storage(r),
            "app/policy.py": orm_rewrite.policy(r, files["app/policy.py"]),
            "app/security.py": orm_rewrite.security(files["app/security.py"]),
        }
        out = {}
        for path, text in files.items():
            if path in own:
                out[path] = own.pop(path)
            elif path.endswith(".py"):
                out[path] = orm_rewrite.sessions(text)
            else:
                out[path] = text
        return {**out, **own}


def tables(r: Renderer) -> str:
    """``app/tables.py``: the mapped classes, one per table of the schema, with the
    relationships every registered ORM shape declares."""
    user_side = "".join("\n    " + r.t(shape.USER_SIDE) for shape in SHAPES)
    entity_side = "".join("\n    " + r.t(shape.ENTITY_SIDE) for shape in SHAPES)
    return r.t(
        '''
        """Mapped classes: one per table. The schema is created from them at startup."""

        from typing import Any

        from sqlalchemy import ForeignKey, text
        from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


        class Base(DeclarativeBase):
            def as_record(self) -> dict[str, Any]:
                """The row as the plain dict routers, policy and response models work with."""
                return {column.key: getattr(self, column.key) for column in self.__table__.columns}


        class Tenant(Base):
            __tablename__ = "tenants"

            id: Mapped[int] = mapped_column(primary_key=True)
            name: Mapped[str]


        class User(Base):
            __tablename__ = "users"

            id: Mapped[int] = mapped_column(primary_key=True)
            tenant_id: Mapped[int | None]
            username: Mapped[str] = mapped_column(unique=True)
            display_name: Mapped[str] = mapped_column(default="", server_default="")
            email: Mapped[str] = mapped_column(default="", server_default="")
            role: Mapped[str] = mapped_column(default="user", server_default="user")
            api_key: Mapped[str] = mapped_column(default="", server_default="")
            is_active: Mapped[int] = mapped_column(default=1, server_default="1")$user_side


        class LoginSession(Base):
            __tablename__ = "sessions"

            token: Mapped[str] = mapped_column(primary_key=True)
            user_id: Mapped[int]


        class $Ent(Base):
            __tablename__ = "$ents"

            id: Mapped[int] = mapped_column(primary_key=True)
            tenant_id: Mapped[int]
            owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
            $title: Mapped[str]
            $secret: Mapped[str] = mapped_column(default="", server_default="")
            $number: Mapped[int] = mapped_column(default=0, server_default="0")
            visibility: Mapped[str] = mapped_column(default="private", server_default="private")
            status: Mapped[str] = mapped_column(default="open", server_default="open")
            created_at: Mapped[str] = mapped_column(server_default=text("CURRENT_TIMESTAMP"))$entity_side


        class Attachment(Base):
            __tablename__ = "attachments"

            id: Mapped[int] = mapped_column(primary_key=True)
            owner_id: Mapped[int]
            filename: Mapped[str]
            content: Mapped[str] = mapped_column(default="", server_default="")


        class AuditEntry(Base):
            __tablename__ = "audit_log"

            id: Mapped[int] = mapped_column(primary_key=True)
            tenant_id: Mapped[int | None]
            actor_id: Mapped[int | None]
            action: Mapped[str]
            detail: Mapped[str] = mapped_column(default="", server_default="")


        class Setting(Base):
            __tablename__ = "settings"

            key: Mapped[str] = mapped_column(primary_key=True)
            value: Mapped[str]


        class TenantSetting(Base):
            __tablename__ = "tenant_settings"

            tenant_id: Mapped[int] = mapped_column(primary_key=True)
            currency: Mapped[str] = mapped_column(default="EUR", server_default="EUR")
            retention_days: Mapped[int] = mapped_column(default=365, server_default="365")
            webhook_url: Mapped[str] = mapped_column(default="", server_default="")
        ''',
        user_side=user_side,
        entity_side=entity_side,
    )


def db(r: Renderer) -> str:
    """``app/db.py``: the engine, the schema and the per-request session."""
    extra = r.extra.schema
    migrations = (
        "\n\n"
        + r.t(
            '''

            FEATURE_TABLES = """$schema
            """
            ''',
            schema=extra,
        )
        if extra
        else ""
    )
    create_extra = (
        "\n    with engine.begin() as raw:\n"
        '        for statement in FEATURE_TABLES.split(";"):\n'
        "            if statement.strip():\n"
        "                raw.exec_driver_sql(statement)"
        if extra
        else ""
    )
    return r.t(
        '''
        """Database access with SQLAlchemy: one engine, one session per request."""

        from collections.abc import Iterator

        from sqlalchemy import create_engine
        from sqlalchemy.orm import Session, sessionmaker

        from app import config
        from app.tables import Base

        engine = create_engine(
            f"sqlite:///{config.DB_PATH}", connect_args={"timeout": 5.0, "check_same_thread": False}
        )
        SessionLocal = sessionmaker(bind=engine, expire_on_commit=False)$migrations


        def init_schema() -> None:
            Base.metadata.create_all(engine)$create_extra


        def get_session() -> Iterator[Session]:
            with SessionLocal() as session:
                yield session
        ''',
        migrations=migrations,
        create_extra=create_extra,
    )


def storage(r: Any) -> str:
    """``app/storage.py``: stored files mirrored to disk, read through the ORM (with the
    download check's helper when the app puts it in the storage module, F10)."""
    return (
        r.t(
            '''
        """File storage: uploads live in the database and are mirrored to disk on access.

        The on-disk mirror also carries ``config/service.env`` for the background worker.
        """

        from pathlib import Path

        from sqlalchemy import select
        from sqlalchemy.orm import Session

        from app import config
        from app.tables import Attachment, Setting


        def user_dir(user_id: int) -> Path:
            return config.UPLOAD_DIR / str(user_id)


        def _write(path: Path, content: str) -> None:
            if path.is_file() and path.read_text() == content:
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)


        def sync(session: Session) -> None:
            """Mirror every stored file (and the worker settings) to the data directory."""
            for attachment in session.scalars(select(Attachment)):
                _write(user_dir(attachment.owner_id) / attachment.filename, attachment.content)
            settings = session.scalars(select(Setting).order_by(Setting.key))
            lines = [f"{setting.key.upper()}={setting.value}" for setting in settings]
            _write(config.CONFIG_DIR / "service.env", "\\n".join(lines) + "\\n")


        def files_of(session: Session, user_id: int) -> list[str]:
            query = select(Attachment.filename).where(Attachment.owner_id == user_id).order_by(Attachment.filename)
            return list(session.scalars(query))
        '''
        )
        + r._download_helper()
    )
