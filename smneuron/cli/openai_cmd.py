"""`smneuron openai NAME`: the base URL, a bearer token and ready lines for an endpoint's OpenAI-compatible path."""

from __future__ import annotations

import datetime as dt
import re
import shlex
import sys

import typer

from smneuron.cli._common import JsonOpt, console, print_json, shown, state

_DURATION = re.compile(r"^\s*(\d+)\s*([smh])\s*$")


def _lifetime(text: str) -> dt.timedelta:
    match = _DURATION.match(text or "")
    if not match:
        raise typer.BadParameter(
            f"{text!r}: give a number and s, m or h (30m, 1h, 12h).", param_hint="--expires"
        )
    return dt.timedelta(seconds=int(match[1]) * {"s": 1, "m": 60, "h": 3600}[match[2]])


def openai_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The endpoint."),
    component: str = typer.Option(
        None, "--component", help="Its inference component (default: its only one)."
    ),
    expires: str = typer.Option("1h", "--expires", help="The token's lifetime: 30m, 1h ... at most 12h."),
    as_json: bool = JsonOpt,
) -> None:
    """The base URL, a bearer token and ready lines for an endpoint's OpenAI-compatible /openai/v1.

    Also the token's expiry and the model, then lines for the openai client, curl and OPENAI_BASE_URL / OPENAI_API_KEY.
    """
    from smneuron.endpoints.openai_compat import openai_access

    access = openai_access(name, component, expires=_lifetime(expires), session=state(ctx).session())
    if as_json:
        print_json(access.to_dict())
        return
    c = console()
    for note in access.notes:
        c.print(f"note: {note}")
    c.print(f"[bold]base URL[/bold]  {shown(access.base_url)}", soft_wrap=True, markup=True)
    c.print(f"[bold]token[/bold]     {shown(access.token)}", soft_wrap=True, markup=True)
    c.print(f"[bold]expires[/bold]   {access.expires_at.isoformat(timespec='seconds')}", markup=True)
    c.print(
        f"[bold]model[/bold]     {shown(access.model or '(empty: the container serves its one model)')}",
        markup=True,
    )
    c.print("\n# in a shell (the token is a credential until it expires: do not log or share it)")
    c.print(f"export OPENAI_BASE_URL={shlex.quote(access.base_url)}", soft_wrap=True, highlight=False)
    c.print(f"export OPENAI_API_KEY={shlex.quote(access.token)}", soft_wrap=True, highlight=False)
    c.print("\n# Python (openai), with those two variables set", highlight=False)
    c.print(
        "from openai import OpenAI\n"
        "client = OpenAI()  # reads OPENAI_BASE_URL and OPENAI_API_KEY\n"
        f"reply = client.chat.completions.create(model={access.model!r}, "
        'messages=[{"role": "user", "content": "Hello"}])\n'
        "print(reply.choices[0].message.content)",
        highlight=False,
        soft_wrap=True,
    )
    c.print("\n# curl", highlight=False)
    c.print(
        'curl -sS "$OPENAI_BASE_URL/chat/completions" -H "Authorization: Bearer $OPENAI_API_KEY" '
        "-H 'Content-Type: application/json' "
        f'-d \'{{"model": "{access.model}", "messages": [{{"role": "user", "content": "Hello"}}]}}\'',
        highlight=False,
        soft_wrap=True,
    )
    c.print(
        f"\n# a notebook that runs longer than the token: smneuron.openai_client({name!r}) renews it itself",
        highlight=False,
    )
    print("the token above is a credential until it expires: do not log or share it", file=sys.stderr)
