"""The Balancer page: what ``zurau balancer status`` and ``plan`` show, and its three actions.

Reading and acting are :mod:`zurau.client.balancer_view`'s (the command line uses the same), so
the page and ``zurau balancer`` never disagree.

* :func:`status`: the status document of :func:`~zurau.client.balancer_view.status_of` (per
  broker replicas, leaders, disk used and capacity, removing, reachable; the moves in flight with
  the bytes copied of the bytes to copy; ``enabled``, ``rebalancing``) plus ``plan_available``.
* :func:`plan`: the dry-run plan, from the :data:`~zurau.client.balancer_view.Planner` the
  console was started with. The planner is the controller's (``zurau.metadata``), which an edge
  app may not import (an import-linter contract): ``zurau console`` hands it over, and a console
  started without one answers 501 ``unsupported`` (:class:`PlannerMissing`). ``remove`` plans as
  if those brokers were being removed too, a preview of a removal (each is checked as a removal
  is). The planner runs on a worker thread, one plan at a time, so a large cluster's plan never
  stalls the console's event loop. The document adds ``preview_removing`` (the brokers assumed
  removed for the preview).
* :func:`rebalance`, :func:`remove_broker`, :func:`cancel`: the actions, answering what they did.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from zurau.client import balancer_view
from zurau.client.admin import AdminClient
from zurau.client.balancer_view import Planner


class PlannerMissing(Exception):
    """The console has no planner (HTTP 501, kind ``unsupported``)."""


_PLAN_LOCK = threading.Lock()  # taken on the worker thread: waiting never blocks an event loop


def _plan_alone(planner: Planner, view: balancer_view.ClusterView) -> dict[str, Any]:
    with _PLAN_LOCK:
        return planner(view)


async def status(admin: AdminClient, planner: Planner | None) -> dict[str, Any]:
    doc = balancer_view.status_of(await balancer_view.read_cluster(admin))
    doc["plan_available"] = planner is not None
    return doc


async def plan(admin: AdminClient, planner: Planner | None, remove: Sequence[int] = ()) -> dict[str, Any]:
    if planner is None:
        raise PlannerMissing(
            "The dry-run plan is not available in this console: the planner is the controller's, and this "
            "console was started without it (zurau console provides it)"
        )
    view = await balancer_view.read_cluster(admin)
    for broker_id in remove:
        balancer_view.check_removal(view, broker_id)
        view.brokers[broker_id].removing = True
    doc = await asyncio.to_thread(_plan_alone, planner, view)
    doc["preview_removing"] = sorted(set(remove))
    return doc


async def rebalance(admin: AdminClient) -> dict[str, Any]:
    await balancer_view.request_rebalance(admin)
    return {"rebalance_requested": True}


async def remove_broker(admin: AdminClient, broker_id: int) -> dict[str, Any]:
    await balancer_view.remove_broker(admin, broker_id)
    return {"broker_id": broker_id, "removing": True}


async def cancel(admin: AdminClient) -> dict[str, Any]:
    removals_ended, cancelled = await balancer_view.cancel(admin)
    return {"removals_ended": removals_ended, "reassignments_cancelled": cancelled}


__all__ = ["PlannerMissing", "cancel", "plan", "rebalance", "remove_broker", "status"]
