"""A TorchServe-like ``context`` for calling handlers outside TorchServe (local endpoint, tests).

It carries what TorchServe's ``ts.context.Context`` gives a handler: system properties (model_dir),
per-request headers through ``request_processor[i].get_request_properties()``, and per-request
response status and content type, which the caller reads back.
"""

from __future__ import annotations


class RequestProcessor:
    def __init__(self, headers: dict[str, str]) -> None:
        self._headers = dict(headers)
        self.status: tuple[int, str] | None = None

    def get_request_properties(self) -> dict[str, str]:
        return self._headers

    def get_request_property(self, key: str) -> str | None:
        return self._headers.get(key)

    def report_status(self, code: int, reason_phrase: str = "") -> None:
        self.status = (code, reason_phrase)


class TorchServeContext:
    """Context for one batch: ``headers[i]`` are request i's HTTP headers."""

    def __init__(self, model_dir: str, headers: list[dict[str, str]], model_name: str = "model") -> None:
        self.system_properties = {"model_dir": model_dir, "gpu_id": None, "batch_size": len(headers)}
        self.model_name = model_name
        self.manifest = {"model": {"modelName": model_name}}
        self.request_processor = [RequestProcessor(h) for h in headers]
        self._content_types: dict[int, str] = {}
        self.metrics = None

    def get_request_header(self, idx: int, key: str) -> str | None:
        return self.request_processor[idx].get_request_property(key)

    def set_response_content_type(self, idx: int, value: str) -> None:
        self._content_types[idx] = value

    def get_response_content_type(self, idx: int) -> str | None:
        return self._content_types.get(idx)

    def set_response_status(self, code: int = 200, phrase: str = "", idx: int = 0) -> None:
        self.request_processor[idx].report_status(code, phrase)

    def status(self, idx: int) -> int:
        reported = self.request_processor[idx].status
        return reported[0] if reported else 200
