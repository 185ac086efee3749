"""The one error type of the jury app for a user's request that cannot be carried out.

Provider failures (jury.providers.base.ProviderError) are not user errors: they are stored
on the call that met them.
"""

from medhelm_site.common.errors import DomainError


class JuryError(DomainError):
    pass
