"""REST API for agreement reports: list and create snapshots, read one as JSON, recompute
it, download its CSV, PDF, LaTeX or Markdown (Table 2 and the methods paragraph) and each
figure (SVG, PDF, 300-dpi PNG) and its tidy score table (CSV, Parquet, data dictionary),
and read its methods paragraph. Same access as the pages (study readers; 404 for non-members, 403 for
clinicians)."""

from __future__ import annotations

import json

from django.http import Http404, HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agreement import analysis, selectors, services
from agreement.input_status import incomplete_message, input_status
from agreement.models import ReportJob, ReportSnapshot
from agreement.stats.medhelm import REQUESTABLE_FORMS
from agreement.views import export_response, figure_response, scores_response
from annotation.access import STUDY_READERS, get_study_for_user
from annotation.models import RatingStudy


class ReportSummarySerializer(serializers.ModelSerializer):
    class Meta:
        model = ReportSnapshot
        fields = ["id", "title", "study", "created_at", "input_hash", "previous", "parameters"]


class ReportSerializer(serializers.ModelSerializer):
    # As stored, plus "estimability": {"applied": false, ...} for a report computed before the
    # estimability rule existed, so a client can tell.
    method = serializers.SerializerMethodField()

    class Meta:
        model = ReportSnapshot
        fields = [
            "id",
            "title",
            "study",
            "created_at",
            "input_hash",
            "previous",
            "parameters",
            "method",
            "results",
        ]

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_method(self, snapshot: ReportSnapshot) -> dict:
        return services.stated_method(snapshot)


class CreateReportSerializer(serializers.Serializer):
    title = serializers.CharField(required=False, allow_blank=True, max_length=300)
    n_resamples = serializers.IntegerField(
        required=False, min_value=10, max_value=services.MAX_RESAMPLES
    )
    seed = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=services.MAX_SEED
    )
    confidence = serializers.FloatField(required=False, min_value=0.5, max_value=0.999)
    ci_method = serializers.ChoiceField(choices=sorted(analysis.CI_METHODS), required=False)
    values = serializers.ChoiceField(choices=["latest", "first"], required=False)
    min_items = serializers.IntegerField(required=False, min_value=2, max_value=1000)
    min_shared_items = serializers.IntegerField(required=False, min_value=2, max_value=1000)
    max_ci_width = serializers.FloatField(required=False)  # range checked by the service
    exclude_flagged = serializers.BooleanField(required=False)
    clinician_form = serializers.ChoiceField(
        choices=list(REQUESTABLE_FORMS),
        required=False,
        help_text="The clinician-clinician form: 'design' (the default) lets each cell's design "
        "decide; 'medhelm_pairwise' (MedHELM's mean over clinician pairs, the published method), "
        "'twoway_raw' (the two-way ICC(C,2) with each clinician's offset fitted) or 'oneway_z' "
        "(the one-way ICC(1,2) on z-scores) asks for that form in every cell.",
        error_messages={
            "invalid_choice": f"must be one of {', '.join(REQUESTABLE_FORMS)}, got {{input!r}}"
        },
    )
    confirm_incomplete = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Compute although judge calls or metrics are incomplete (refused with 400 "
        "naming what is missing otherwise), as the page asks its reader to confirm.",
    )


class ConfirmSerializer(serializers.Serializer):
    confirm_incomplete = serializers.BooleanField(required=False, default=False)


CONFIRM_IN_API = 'Send "confirm_incomplete": true'


def _require_confirmation(study: RatingStudy, confirmed: bool) -> dict:
    """The machine scores' status now; a 400 naming what is missing when they are incomplete
    and the caller did not confirm (the same rule as the page's)."""
    now = input_status(study=study)
    if now["incomplete"] and not confirmed:
        raise serializers.ValidationError(
            {"confirm_incomplete": [incomplete_message(now, how_to_confirm=CONFIRM_IN_API)]}
        )
    return now


class _FileRenderer(BaseRenderer):
    """Lets a client ask for the file's media type; the views return the bytes themselves."""

    charset = None

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, bytes) else json.dumps(data).encode()


class CsvRenderer(_FileRenderer):
    media_type = "text/csv"
    format = "csv"


class LatexRenderer(_FileRenderer):
    media_type = "application/x-tex"
    format = "tex"


class MarkdownRenderer(_FileRenderer):
    media_type = "text/markdown"
    format = "md"


class PdfRenderer(_FileRenderer):
    media_type = "application/pdf"
    format = "pdf"


class SvgRenderer(_FileRenderer):
    media_type = "image/svg+xml"
    format = "svg"


class PngRenderer(_FileRenderer):
    media_type = "image/png"
    format = "png"


class ParquetRenderer(_FileRenderer):
    media_type = "application/vnd.apache.parquet"
    format = "parquet"


def _study(request: Request, study_id: int) -> RatingStudy:
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    return study


def _snapshot(
    request: Request, study_id: int, report_id: int, *, with_results: bool = True
) -> ReportSnapshot:
    snapshot = selectors.study_snapshot(
        study=_study(request, study_id), report_id=report_id, with_results=with_results
    )
    if snapshot is None:
        raise Http404("No such report.")
    return snapshot


class ReportJobSerializer(serializers.Serializer):
    """The state of a report being computed (documentation of the job responses)."""

    id = serializers.IntegerField()
    title = serializers.CharField()
    status = serializers.ChoiceField(choices=ReportJob.Status.choices)
    stage = serializers.CharField()
    cells_done = serializers.IntegerField()
    cells_total = serializers.IntegerField()
    resamples_per_cell = serializers.IntegerField()
    resamples_done = serializers.IntegerField()
    resamples_total = serializers.IntegerField()
    percent = serializers.IntegerField()
    error = serializers.CharField()
    snapshot = serializers.IntegerField(allow_null=True)
    status_url = serializers.URLField()
    report_url = serializers.URLField(allow_null=True)
    input_status = serializers.JSONField(
        required=False,
        help_text="In the 202 answer to a request: where the judge calls and metrics stood "
        "when it was queued (incomplete, and what is missing); the report's "
        "results.computed_on records it too.",
    )


class ReportsApi(ListAPIView):
    """A study's report snapshots, newest first (without their results); POST computes one."""

    serializer_class = ReportSummarySerializer

    def get_queryset(self):
        study = _study(self.request, self.kwargs["study_id"])
        return selectors.study_snapshots(study=study)

    @extend_schema(
        request=CreateReportSerializer,
        responses={202: ReportJobSerializer},
        summary="Queue a new report snapshot (the seed is drawn and recorded when not given); "
        "202 with the job's status URL, which names the report once it is computed",
    )
    def post(self, request: Request, study_id: int) -> Response:
        study = _study(request, study_id)
        params = CreateReportSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        parameters = dict(params.validated_data)
        now = _require_confirmation(study, parameters.pop("confirm_incomplete"))
        job = services.request_report(study=study, actor=request.user, parameters=parameters)
        return _accepted(request, study, job, now)


def _job_state(request: Request, study: RatingStudy, job: ReportJob) -> dict:
    state = selectors.job_state(job)
    state["status_url"] = request.build_absolute_uri(
        reverse("agreement-api:job", kwargs={"study_id": study.pk, "job_id": job.pk})
    )
    state["report_url"] = (
        request.build_absolute_uri(
            reverse(
                "agreement-api:report", kwargs={"study_id": study.pk, "report_id": job.snapshot_id}
            )
        )
        if job.snapshot_id
        else None
    )
    return state


def _accepted(request: Request, study: RatingStudy, job: ReportJob, now: dict) -> Response:
    """202 Accepted with the job's state and the machine scores' status when it was queued;
    Location is the job's status URL."""
    state = {**_job_state(request, study, job), "input_status": now}
    return Response(
        state, status=status.HTTP_202_ACCEPTED, headers={"Location": state["status_url"]}
    )


class ReportJobApi(APIView):
    @extend_schema(
        responses={200: ReportJobSerializer},
        summary="A report job's state: queued, running (stage, cells and resamples done), "
        "finished (with the report's URL) or failed (with the reason)",
    )
    def get(self, request: Request, study_id: int, job_id: int) -> Response:
        study = _study(request, study_id)
        services.fail_stale_jobs(study=study)
        job = selectors.study_job(study=study, job_id=job_id)
        if job is None:
            raise Http404("No such report job.")
        return Response(_job_state(request, study, job))


class ReportApi(RetrieveAPIView):
    """One snapshot: parameters, full method and results, exactly as computed."""

    serializer_class = ReportSerializer

    def get_object(self) -> ReportSnapshot:
        return _snapshot(self.request, self.kwargs["study_id"], self.kwargs["report_id"])


class RecomputeApi(APIView):
    @extend_schema(
        request=ConfirmSerializer,
        responses={202: ReportJobSerializer},
        summary="Queue a recomputation of a snapshot with its parameters on today's scores "
        "(a new snapshot, compared with this one); 202 with the job's status URL",
    )
    def post(self, request: Request, study_id: int, report_id: int) -> Response:
        snapshot = _snapshot(request, study_id, report_id)
        confirm = ConfirmSerializer(data=request.data)
        confirm.is_valid(raise_exception=True)
        now = _require_confirmation(snapshot.study, confirm.validated_data["confirm_incomplete"])
        job = services.request_recomputation(snapshot=snapshot, actor=request.user)
        return _accepted(request, snapshot.study, job, now)


class ReportCsvApi(APIView):
    renderer_classes = [JSONRenderer, CsvRenderer]

    @extend_schema(
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR)},
        summary="The comparison table in long format (CSV)",
    )
    def get(self, request: Request, study_id: int, report_id: int) -> HttpResponse:
        return export_response(_snapshot(request, study_id, report_id, with_results=False), "csv")


class ReportPdfApi(APIView):
    renderer_classes = [JSONRenderer, PdfRenderer]

    @extend_schema(
        responses={(200, "application/pdf"): OpenApiResponse(OpenApiTypes.BINARY)},
        summary="The report as a PDF (method, tables, plots)",
    )
    def get(self, request: Request, study_id: int, report_id: int) -> HttpResponse:
        return export_response(_snapshot(request, study_id, report_id, with_results=False), "pdf")


class ReportLatexApi(APIView):
    renderer_classes = [JSONRenderer, LatexRenderer]

    @extend_schema(
        responses={(200, "application/x-tex"): OpenApiResponse(OpenApiTypes.STR)},
        summary="Table 2 as a LaTeX booktabs table, with the methods paragraph",
    )
    def get(self, request: Request, study_id: int, report_id: int) -> HttpResponse:
        return export_response(_snapshot(request, study_id, report_id, with_results=False), "tex")


class ReportMarkdownApi(APIView):
    renderer_classes = [JSONRenderer, MarkdownRenderer]

    @extend_schema(
        responses={(200, "text/markdown"): OpenApiResponse(OpenApiTypes.STR)},
        summary="Table 2 as a Markdown table, with the methods paragraph",
    )
    def get(self, request: Request, study_id: int, report_id: int) -> HttpResponse:
        return export_response(_snapshot(request, study_id, report_id, with_results=False), "md")


class MethodsParagraphSerializer(serializers.Serializer):
    text = serializers.CharField()


class ReportMethodsApi(APIView):
    @extend_schema(
        responses={200: MethodsParagraphSerializer},
        summary="The methods paragraph of a report, generated from its stored method record",
    )
    def get(self, request: Request, study_id: int, report_id: int) -> Response:
        snapshot = _snapshot(request, study_id, report_id)
        return Response({"text": services.methods_text(snapshot)})


class ReportFigureApi(APIView):
    renderer_classes = [JSONRenderer, SvgRenderer, PdfRenderer, PngRenderer]

    @extend_schema(
        responses={
            (200, "image/svg+xml"): OpenApiResponse(OpenApiTypes.BINARY),
            (200, "application/pdf"): OpenApiResponse(OpenApiTypes.BINARY),
            (200, "image/png"): OpenApiResponse(OpenApiTypes.BINARY),
        },
        summary="One figure of a report (scatter, bland_altman, forest, heatmap) as svg, pdf "
        "or a 300-dpi png",
    )
    def get(
        self, request: Request, study_id: int, report_id: int, key: str, fmt: str
    ) -> HttpResponse:
        # the results are read (deferred) only where the figure files are not stored yet
        snapshot = _snapshot(request, study_id, report_id, with_results=False)
        return figure_response(snapshot, key, fmt)


class ReportScoresApi(APIView):
    renderer_classes = [JSONRenderer, CsvRenderer, ParquetRenderer, MarkdownRenderer]

    @extend_schema(
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR),
            (200, "application/vnd.apache.parquet"): OpenApiResponse(OpenApiTypes.BINARY),
            (200, "text/markdown"): OpenApiResponse(OpenApiTypes.STR),
            409: OpenApiResponse(description="The study's scores changed since the report"),
        },
        summary="The report's long score table, tidy (fmt: csv, parquet), or its data "
        "dictionary (fmt: dictionary)",
    )
    def get(self, request: Request, study_id: int, report_id: int, fmt: str) -> HttpResponse:
        return scores_response(_snapshot(request, study_id, report_id), fmt)
