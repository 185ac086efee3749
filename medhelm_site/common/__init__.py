"""Django-free helpers every app shares: one place each for a rule several apps need."""
