"""Router modules of a generated app: the three router mixins in one.

:class:`RoutesMixin` combines :mod:`~a01gym.factory.routes_records`,
:mod:`~a01gym.factory.routes_reports` and :mod:`~a01gym.factory.routes_admin`, so the renderer
inherits one name for every ``app/routers/*.py`` module of the shared skeleton.
"""

from __future__ import annotations

from a01gym.factory import routes_admin, routes_records, routes_reports

__all__ = ["RoutesMixin"]


class RoutesMixin(
    routes_records.RecordRoutes, routes_reports.ReportRoutes, routes_admin.AdminRoutes
):
    """Renders every ``app/routers/*.py`` module of the shared skeleton."""
