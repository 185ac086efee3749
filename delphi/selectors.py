"""Reads for taxonomies and Delphi studies."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from delphi.models import DelphiStudy, TaxonomyNode, TaxonomyVersion


def delphi_studies_coordinated_by(*, user: AbstractBaseUser) -> QuerySet[DelphiStudy]:
    return DelphiStudy.objects.filter(coordinators__user=user).order_by("-created_at")


def delphi_studies_on_panel_of(*, user: AbstractBaseUser) -> QuerySet[DelphiStudy]:
    return DelphiStudy.objects.filter(
        panelists__user=user, panelists__withdrawn_at__isnull=True
    ).order_by("-created_at")


def nodes_of_kind(*, version: TaxonomyVersion, kind: str) -> QuerySet[TaxonomyNode]:
    return (
        version.nodes.filter(kind=kind)
        .select_related("parent")
        .order_by("parent__position", "position")
    )


def category_of(node: TaxonomyNode) -> TaxonomyNode:
    """The category a node sits under (itself, for a category). Walks at most two parents."""
    while node.parent_id is not None:
        node = node.parent
    return node
