"""Deploy: ``stage`` the artifact, ``plan`` from its content (no I/O), ``apply`` the plan.

Modules: ``corridor`` (``deploy``, ``preview``, ``deploy_model_name``: the one entry for both kinds),
``request`` (``resolve``: project file + flags + artifact -> one typed ``DeployRequest``, the other kind's
settings refused), ``encoder_plan`` and ``generation_plan`` (the two strategies of one ``Plan`` protocol),
``planning`` (the plan protocol and which plan a kind gets), ``apply`` (the one apply engine: a ledger of what a call
creates, reconciliation by tag of what the endpoint owns, cleanup on failure and Ctrl-C).

May import: errors, session, display, catalog, specs, artifact, container, endpoints.
"""
