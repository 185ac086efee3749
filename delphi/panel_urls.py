"""Panel pages: joining by invitation link, the round questionnaire, its autosave."""

urlpatterns: list = []
