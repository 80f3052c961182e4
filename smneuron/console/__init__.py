"""`smneuron console`: a web page on 127.0.0.1 for the endpoints, jobs, logs and metrics of the embedded SageMaker or
of the account the AWS environment names (issue 65).

``server`` holds the Starlette app and its doors (a one-time token in the URL, then a SameSite=Strict, HttpOnly
cookie; Host and Origin checked as the embedded service checks them; every changing request with the page's CSRF
token; read-only against an account unless ``allow_changes``); ``api`` answers each page from the same SDK calls the
CLI makes (``list_endpoints``, ``read_endpoint``, ``Endpoint.invoke``, ``endpoints.scaling.scale``,
``endpoints.handle.delete``, ``log_events``, CloudWatch's statistics), with the equivalent CLI command beside each
action. The page (``static/``) is one HTML file, one script and one stylesheet shipped in the wheel: no CDN, no build.

May import: every SDK package below ``cli``; starlette and uvicorn (the ``serve`` extra).
"""
