"""Benchmarks for both kinds: load profiles, metrics, reports, compare and recommend.

Modules: ``profiles`` (the one profile engine: synchronous, concurrent, throughput, constant, poisson, sweep,
and the open-loop schedule), ``encoder`` (request/response load: profiles, statistics, cost), ``targets`` (URL or
InvokeEndpoint), ``report`` (plots, compare, recommend for encoder reports); ``generation``
(streamed load with GuideLLM's profiles), ``generation_metrics`` (TTFT, ITL, TPOT, goodput),
``stream_targets``, ``prompts`` (what a bench sends: encoder payloads; prompts exact to the tokenizer, datasets),
``generation_report`` (JSON / CSV / PNG / HTML, compare, recommend).

May import: errors, session, display, catalog, specs, artifact, endpoints.
"""
