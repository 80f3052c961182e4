"""The front door: only its user gets in: see README.md beside this file.

``gate`` is WSGI middleware in front of everything: Host on loopback, Origin allowed or none, no form types on JSON APIs, then limits, identity and the body in that order. ``sigv4`` is SigV4 as AWS verifies it, with botocore's own signers: ``identify`` before the body, ``verify`` over it. ``aws_chunked`` decodes S3's chunked uploads and checks every chunk signature, the trailer's, and the trailing checksum. ``bearer`` checks SageMaker's OpenAI-path bearer tokens with its own reading of AWS's token format (never the client's).
"""
