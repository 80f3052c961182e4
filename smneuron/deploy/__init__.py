"""Deploy: ``stage`` the artifact, ``plan`` from its content (no I/O), ``apply`` the plan.

Modules: ``corridor`` (``deploy``, ``preview``, ``deploy_model_name``: the one entry for both kinds),
``encoder_plan`` and ``generation_plan`` (the two strategies of one plan protocol), ``encoder_env`` and
``generation_env`` (container environments), ``apply`` (the one apply engine: a ledger of what a call
creates, reconciliation by tag of what the endpoint owns, cleanup on failure and Ctrl-C).

May import: errors, session, catalog, specs, artifact, endpoints.
"""
