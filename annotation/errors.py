"""The one error type of the annotation app: its message says what is wrong and where."""

from medhelm_site.common.errors import DomainError


# The ValueError base is transitional: it goes once every view catches AnnotationError (or
# DomainError) instead of ValueError.
class AnnotationError(DomainError, ValueError):
    pass
