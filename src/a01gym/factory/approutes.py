"""Router modules of a generated app: the four router mixins in one.

:class:`RoutesMixin` combines :mod:`~a01gym.factory.routes_records`,
:mod:`~a01gym.factory.routes_reports`, :mod:`~a01gym.factory.routes_admin` and
:mod:`~a01gym.factory.routes_users`, so the renderer
inherits one name for every ``app/routers/*.py`` module of the shared skeleton.
"""

from __future__ import annotations

from a01gym.factory import routes_admin, routes_records, routes_reports, routes_users

__all__ = ["RoutesMixin"]


class RoutesMixin(
    routes_records.RecordRoutes,
    routes_reports.ReportRoutes,
    routes_admin.AdminRoutes,
    routes_users.UserRoutes,
):
    """Renders every ``app/routers/*.py`` module of the shared skeleton."""
