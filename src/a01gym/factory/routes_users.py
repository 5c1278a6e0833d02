# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""Router modules of a generated app, part 4: the users router and the caller's own account.

A mixin of :class:`a01gym.factory.appgen._Renderer`: the profile sites. The caller's own account
(``GET`` and ``PATCH /users/me``) is a router module of its own, ``app/routers/me.py``, as in
many real apps, with whatever a family serves beside it (the caller's sessions, unless
``Layout.sessions_router`` gives them a router of their own). The users router keeps other
users' profiles and the team in every app: when a layout flag moved the own account into it in
half the apps, ``nearest_diff`` named it in 13% of apps (seeds 31-32), 3.6x chance, and F09 is
fixed there (docs/families.md).
"""

from __future__ import annotations

import re

from a01gym.factory.families.f06_mass_assignment import dump_call
from a01gym.factory.families.f09_response_model import view
from a01gym.factory.renderhost import RenderHost

__all__ = ["UserRoutes"]


class UserRoutes(RenderHost):
    """Renders ``app/routers/users.py`` and ``me.py``."""

    def users_router(self) -> str:
        """Other users' profiles and the caller's team."""
        return self._users_module(
            "User profiles: other users' public profiles and the caller's team.",
            "users",
            self._profiles(),
        )

    def me_router(self) -> str:
        """``app/routers/me.py``: the caller's own account, and what families serve beside it."""
        extra = self.extra.own_account
        return self._users_module(
            "The caller's own account" + (" and sessions." if extra else "."),
            "me",
            [*self._own_account(), *extra],
        )

    def _users_module(self, doc: str, tag: str, handlers: list[str]) -> str:
        body = "\n\n\n".join(handlers)
        used = [n for n in ("HTTPException", "Response", "status") if re.search(rf"\b{n}\b", body)]
        fastapi = ", ".join(["APIRouter", "Depends", *used])
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

        if self.spec.layout.account_activity:
            self.route("GET", "/users/me/activity")
            out.append(
                self.t(
                    '''
                    @router.get("/users/me/activity")
                    def read_my_activity(
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> list[dict[str, Any]]:
                        """The caller's own recent actions, newest first."""
                        rows = connection.execute("SELECT action, detail FROM audit_log WHERE actor_id = ? ORDER BY id DESC LIMIT 20", [user.id])
                        return [dict(row) for row in rows.fetchall()]
                    '''
                )
            )
        return out

    def _profiles(self) -> list[str]:
        out: list[str] = []
        profile_model, profile_answer, profile_returns = view(
            self.spec, self.v.mode("profile.view"), False, "profile"
        )
        team_model, team_answer, team_returns = view(
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
                    ) -> $returns:
                        profile = repository.UserRepository(connection).get(user_id)
                        if profile is None:
                            raise HTTPException(status.HTTP_404_NOT_FOUND, "user not found")
                        $answer
                    """,
                    model=profile_model,
                    answer=profile_answer,
                    returns=profile_returns,
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
                    ) -> $returns:
                        """Everyone in the caller's $tenant_noun."""
                        $answer
                    ''',
                    model=team_model,
                    answer=team_answer,
                    returns=team_returns,
                )
            )
        return out
