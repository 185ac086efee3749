"""A study's prompt versions."""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import RatingStudy
from jury.models import PromptTemplate


def latest_prompt_template(*, study: RatingStudy) -> PromptTemplate | None:
    """The study's most recently saved prompt version, or None when it has none."""
    return PromptTemplate.objects.filter(study=study).order_by("-created_at", "-version").first()


def prompt_versions(*, study: RatingStudy) -> QuerySet[PromptTemplate]:
    """The study's prompt versions, newest first."""
    return PromptTemplate.objects.filter(study=study).order_by("-created_at")
