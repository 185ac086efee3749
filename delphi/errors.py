"""The one error type of the Delphi app: its message says what is wrong and where, and
`field` names the form or API field at fault. consensus.RuleError (a bad consensus rule)
and services.taxonomy.TaxonomyFormatError (a bad taxonomy file) are its subclasses."""

from medhelm_site.common.errors import DomainError


# The ValueError base is transitional: it goes once every view catches DelphiError (or
# DomainError) instead of ValueError.
class DelphiError(DomainError, ValueError):
    pass
