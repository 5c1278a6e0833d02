# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""The policy and schema modules of a generated app: ``policy`` and ``models``.

A mixin of :class:`a01gym.factory.appgen._Renderer`. ``policy.py`` states the access rules once
(predicates and the matching SQL scopes); ``models.py`` holds the request and response schemas,
where the mass-assignment and response-model sites live.
"""

from __future__ import annotations

from a01gym.factory.families.f06_mass_assignment import model_config
from a01gym.factory.renderhost import RenderHost

__all__ = ["PolicyModules"]


class PolicyModules(RenderHost):
    """Renders ``app/policy.py`` and ``app/models.py``."""

    def policy(self) -> str:
        f = self.f
        read_all = ["admin"] + (["support"] if f.support_reads else [])
        lines_read = ["    if user.role in READ_ALL_ROLES:", "        return True"]
        if f.manager_reads:
            lines_read += [
                '    if user.role == "manager" and record["tenant_id"] == user.tenant_id:',
                "        return True",
            ]
        owns, sql, params = self._ownership()
        owned = f'"{sql}", [{params}]'
        lines_read.append(f"    if {owns}:")
        lines_read.append("        return True")
        if f.shared:
            lines_read.append(
                '    return record["tenant_id"] == user.tenant_id and record["visibility"] == "team"'
            )
        else:
            lines_read.append("    return False")
        scope = [
            "    if user.role in READ_ALL_ROLES:",
            '        return "1 = 1", []',
            f'    clauses, params = ["{sql}"], [{params}]',
        ]
        if f.shared:
            scope += [
                "    clauses.append(\"(tenant_id = ? AND visibility = 'team')\")",
                "    params.append(user.tenant_id)",
            ]
        if f.manager_reads:
            scope += [
                '    if user.role == "manager":',
                '        clauses.append("tenant_id = ?")',
                "        params.append(user.tenant_id)",
            ]
        scope.append('    return "(" + " OR ".join(clauses) + ")", params')
        modify = (
            ['    if user.role == "admin":', "        return True"] if f.admin_edits else []
        ) + [f"    return {owns}"]
        modify_scope = (
            ['    if user.role == "admin":', '        return "1 = 1", []'] if f.admin_edits else []
        ) + [f"    return {owned}"]
        return self.t(
            '''
            """Who may do what to $label records. Routers and queries ask here; nothing else decides.

            Policy: $policy_words
            """

            from typing import Any

            from app.security import CurrentUser

            READ_ALL_ROLES = ($read_all,)
            Record = dict[str, Any]


            def can_read(user: CurrentUser, record: Record) -> bool:
            $can_read


            def can_modify(user: CurrentUser, record: Record) -> bool:
            $can_modify


            def can_delete(user: CurrentUser, record: Record) -> bool:
                return user.role == "admin" or $owns


            def read_scope(user: CurrentUser) -> tuple[str, list[Any]]:
                """An SQL condition over $ents columns that matches exactly what can_read allows."""
            $scope


            def modify_scope(user: CurrentUser) -> tuple[str, list[Any]]:
                """An SQL condition matching can_modify."""
            $modify_scope


            def delete_scope(user: CurrentUser) -> tuple[str, list[Any]]:
                """An SQL condition matching can_delete."""
                if user.role == "admin":
                    return "1 = 1", []
                return $owned
            ''',
            owns=owns,
            owned=owned,
            policy_words=self.policy_words(),
            read_all=", ".join(f'"{r}"' for r in read_all),
            can_read="\n".join(lines_read),
            can_modify="\n".join(modify),
            scope="\n".join(scope),
            modify_scope="\n".join(modify_scope),
        )

    def _ownership(self) -> tuple[str, str, str]:
        """The owner check as a predicate's condition, a scope's SQL and its parameters:
        pinned to the caller's tenant too where the layout says so (``Layout.owner_in_tenant``)."""
        if self.spec.layout.owner_in_tenant:
            return (
                'record["owner_id"] == user.id and record["tenant_id"] == user.tenant_id',
                "(owner_id = ? AND tenant_id = ?)",
                "user.id, user.tenant_id",
            )
        return 'record["owner_id"] == user.id', "owner_id = ?", "user.id"

    def policy_words(self) -> str:
        f = self.f
        readers = ["their owner", "administrators"]
        if f.shared:
            readers.append("members of the same " + self.spec.domain.tenant_noun + " when shared")
        if f.support_reads:
            readers.append("support staff")
        if f.manager_reads:
            readers.append("the manager of the same " + self.spec.domain.tenant_noun)
        editors = "the owner and administrators" if f.admin_edits else "the owner only"
        return (
            f"{self.names['label']} records are read by {', '.join(readers)}; "
            f"changed by {editors}; deleted by the owner and administrators."
        )

    def models(self) -> str:
        forbid = "forbid_extra" in (self.v.mode("profile.update"), self.v.mode("record.create"))
        create_config = model_config(self.spec, self.v.mode("record.create"), forbid)
        profile_config = model_config(self.spec, self.v.mode("profile.update"), forbid)
        trimmed = self.v.mode("profile.view") == "over_filter" or self.v.mode("team.list") == (
            "over_filter"
        )

        visibility = '"private", "team"' if self.f.shared else '"private"'
        private_fields = (
            "    tenant_id: int | None = None\n"
            if trimmed
            else (
                "    email: str\n    role: str\n    tenant_id: int | None\n"
                "    api_key: str\n    is_active: bool\n"
            )
        )
        return self.t(
            '''
            """Request and response schemas."""

            from typing import Literal

            from pydantic import $pydantic_names

            Visibility = Literal[$visibility]


            class ${Ent}Create(BaseModel):
            ${create_config}    $title: str = Field(min_length=1, max_length=200)
                $secret: str = Field("", max_length=4000)
                $number: int = 0
                visibility: Visibility = "private"


            class ${Ent}Update(BaseModel):
                $title: str | None = Field(None, min_length=1, max_length=200)
                $secret: str | None = Field(None, max_length=4000)
                $number: int | None = None
                visibility: Visibility | None = None


            class ${Ent}Out(BaseModel):
                id: int
                tenant_id: int
                owner_id: int
                $title: str
                $secret: str
                $number: int
                visibility: str
                status: str
                created_at: str


            class UserPublic(BaseModel):
                id: int
                username: str
                display_name: str


            class UserPrivate(UserPublic):
            $private_fields

            class ProfileUpdate(BaseModel):
            ${profile_config}    display_name: str | None = Field(None, min_length=1, max_length=80)
                email: str | None = Field(None, max_length=200)


            class RoleChange(BaseModel):
                role: Literal["user", "support", "manager", "admin"]


            class TenantSettings(BaseModel):
                tenant_id: int | None
                currency: str
                retention_days: int
                webhook_url: str


            class TenantSettingsUpdate(BaseModel):
                currency: str | None = Field(None, min_length=3, max_length=3)
                retention_days: int | None = Field(None, ge=1, le=3650)
                webhook_url: str | None = Field(None, max_length=300)


            class AuditEntry(BaseModel):
                id: int
                tenant_id: int | None
                actor_id: int | None
                action: str
                detail: str
            ''',
            visibility=visibility,
            pydantic_names="BaseModel, ConfigDict, Field"
            if create_config or profile_config
            else "BaseModel, Field",
            create_config=create_config,
            profile_config=profile_config,
            private_fields=private_fields.rstrip("\n"),
        )
