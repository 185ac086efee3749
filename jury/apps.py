from django.apps import AppConfig


class JuryConfig(AppConfig):
    name = "jury"
    verbose_name = "LLM jury and automatic metrics"
