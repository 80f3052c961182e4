"""A deployed endpoint and everything done to it after it exists: the ``Endpoint`` handle and its verbs.

Modules: ``handle`` (``Endpoint``, status, wait, scale, delete, list), ``naming`` (names, the ownership tag,
what may be shown), ``invoke`` (the one InvokeEndpoint call), ``streaming`` (response streams, SSE),
``components`` (inference components: copies), ``autoscaling`` (Application Auto Scaling of variants),
``logs`` (CloudWatch), ``polling``.

May import: errors, session, catalog, specs, artifact. Never deployment/ (it builds on this package).
"""
