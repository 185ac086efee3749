"""Identity and sessions: login throttling, API tokens, idle sessions, logout clean-up."""
