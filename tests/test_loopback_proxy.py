"""A proxy set for AWS is never used for this machine's services (smneuron.startup.loopback)."""

from __future__ import annotations

import os
import urllib.request

import httpx
import pytest

from smneuron.startup.loopback import no_proxy_for_loopback


@pytest.fixture
def proxied(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                 "no_proxy"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_loopback_is_added_to_no_proxy_and_what_the_user_set_stays(proxied):
    proxied.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    proxied.setenv("no_proxy", ".corp.example,10.0.0.0/8")
    no_proxy_for_loopback()
    assert urllib.request.proxy_bypass("127.0.0.1:8080") and urllib.request.proxy_bypass("localhost")
    assert not urllib.request.proxy_bypass(
        "runtime.sagemaker.us-east-1.amazonaws.com"
    )  # AWS still goes through it
    both = ".corp.example,10.0.0.0/8,127.0.0.1,localhost,::1"
    assert os.environ["no_proxy"] == os.environ["NO_PROXY"] == both  # whichever a tool reads
    mounts = (
        httpx.Client()._mounts
    )  # httpx reads the same variables: no proxy for loopback, the proxy for AWS
    assert any(m.pattern == "all://127.0.0.1" and t is None for m, t in mounts.items())
    no_proxy_for_loopback()  # twice: nothing added twice
    assert os.environ["NO_PROXY"] == both


def test_without_a_proxy_or_with_no_proxy_everything_nothing_changes(proxied):
    no_proxy_for_loopback()
    assert "NO_PROXY" not in os.environ
    proxied.setenv("HTTP_PROXY", "http://proxy.corp:3128")
    proxied.setenv("NO_PROXY", "*")
    proxied.setenv("no_proxy", "*")
    no_proxy_for_loopback()
    assert os.environ["NO_PROXY"] == os.environ["no_proxy"] == "*"
