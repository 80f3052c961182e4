"""The embedded AWS: moto on loopback, extended where it lags SageMaker, and backed by real servers. Its rooms, each
with a README:

- ``http/``: HTTP/1.1 on the wire (kept-alive connections, heads, bodies read within limits, AWS's error shapes);
- ``auth/``: the front door (Host, Origin, SigV4 before and after the body, S3's chunked signatures, bearer tokens);
- ``engine/``: moto and every change smneuron makes to it (the extensions, checked at start; the lifecycle hooks);
- ``data_plane/``: what answers invocations (routing, streams, the OpenAI path, data capture) and the model servers
  and copies behind endpoints (backing, log shipping);
- ``state/``: what survives `local down` and a crash (snapshots on disk, their restore, taking back what was not kept).

May import: every layer below ``local``.
"""
