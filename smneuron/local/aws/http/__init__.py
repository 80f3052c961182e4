"""HTTP/1.1 on the wire for the embedded AWS: see README.md beside this file.

moto's werkzeug server answers HTTP/1.1 with connections kept alive (``connections``: a body read to its end, an answer of known length or chunked, idle and first-line timeouts, a cap on open connections); ``http1`` reads a message head as the standard library does, without its email parser, and is the relay's kept-alive client to the model servers; ``bodies`` reads a request's body only as far as its operation takes (limits from Content-Length first, chunked transfer coding read strictly, spooled to disk past 1 MiB); ``aws_errors`` answers a refusal in the shape of its protocol (JSON, S3 XML, query XML, CBOR), which botocore parses.
"""
