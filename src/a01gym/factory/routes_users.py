"""Router modules of a generated app, part 4: the users router and the caller's own account.

A mixin of :class:`a01gym.factory.appgen._Renderer`: the profile sites. With
``Layout.account_router`` the caller's own account (``GET`` and ``PATCH /users/me``) is a
router module of its own, ``app/routers/me.py``, as in many real apps: the router set and the
file count vary between apps (issue 28, item 3), and the users router keeps two handlers.
"""

from __future__ import annotations

from a01gym.factory.families.f06_mass_assignment import dump_call
from a01gym.factory.families.f09_response_model import view
from a01gym.factory.renderhost import RenderHost

__all__ = ["UserRoutes"]


class UserRoutes(RenderHost):
    """Renders ``app/routers/users.py`` and, with ``Layout.account_router``, ``me.py``."""

    def users_router(self) -> str:
        """Other users' profiles and the team, with the caller's own account unless the layout
        serves it from a router of its own (:meth:`me_router`)."""
        own = [] if self.spec.layout.account_router else self._own_account()
        return self._users_module(
            "User profiles: the caller's own account and other users' public profiles."
            if own
            else "User profiles: other users' public profiles and the caller's team.",
            "users",
            [*own, *self._profiles()],
        )

    def me_router(self) -> str:
        """``app/routers/me.py`` (``Layout.account_router``): the caller's own account."""
        return self._users_module("The caller's own account.", "me", self._own_account())

    def _users_module(self, doc: str, tag: str, handlers: list[str]) -> str:
        body = "\n\n\n".join(handlers)
        fastapi = "APIRouter, Depends" + (", HTTPException, status" * ("HTTPException" in body))
        return (
            self.t(
                '''
                """$doc"""

                import sqlite3
                from typing import Any

                from fastapi import $fastapi

                from app import db, models, repository, security
                from app.security import CurrentUser

                router = APIRouter(tags=["$tag"])
                ''',
                doc=doc,
                fastapi=fastapi,
                tag=tag,
            )
            + "\n\n\n"
            + body
        )

    def _own_account(self) -> list[str]:
        out: list[str] = []
        self.route("GET", "/users/me")
        out.append(
            self.t(
                """
                @router.get("/users/me", response_model=models.UserPrivate)
                def read_me(
                    user: CurrentUser = Depends(security.current_user),
                    connection: sqlite3.Connection = Depends(db.get_db),
                ) -> dict[str, Any]:
                    return repository.UserRepository(connection).get(user.id) or {}
                """
            )
        )
        if "profile.update" not in self.v.removed:
            self.route("PATCH", "/users/me")
            out.append(
                self.t(
                    """
                    @router.patch("/users/me", response_model=$model)
                    def update_me(
                        body: models.ProfileUpdate,
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> dict[str, Any]:
                        users = repository.UserRepository(connection)
                        users.update(user.id, $dump)
                        return users.get(user.id) or {}
                    """,
                    dump=dump_call(
                        self.spec,
                        self.v.mode("profile.update"),
                        "ProfileUpdate",
                        "exclude_unset=True",
                    ),
                    model="models.UserPublic"
                    if self.v.mode("profile.update") == "response_only"
                    else "models.UserPrivate",
                )
            )

        return out

    def _profiles(self) -> list[str]:
        out: list[str] = []
        profile_model, profile_value = view(
            self.spec, self.v.mode("profile.view"), False, "profile"
        )
        team_model, team_value = view(
            self.spec,
            self.v.mode("team.list"),
            True,
            "repository.UserRepository(connection).in_tenant(user.tenant_id)",
        )
        if "profile.view" not in self.v.removed:
            self.route("GET", "/users/{user_id}")
            out.append(
                self.t(
                    """
                    @router.get("/users/{user_id}", $model)
                    def read_profile(
                        user_id: int,
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> dict[str, Any]:
                        profile = repository.UserRepository(connection).get(user_id)
                        if profile is None:
                            raise HTTPException(status.HTTP_404_NOT_FOUND, "user not found")
                        return $value
                    """,
                    model=profile_model,
                    value=profile_value,
                )
            )
        if "team.list" not in self.v.removed:
            self.route("GET", "/team")
            out.append(
                self.t(
                    '''
                    @router.get("/team", $model)
                    def read_team(
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> list[dict[str, Any]]:
                        """Everyone in the caller's $tenant_noun."""
                        return $value
                    ''',
                    model=team_model,
                    value=team_value,
                )
            )
        return out
