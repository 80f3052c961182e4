"""`smneuron package`, `smneuron inspect`, `smneuron upload`: model.tar.gz and S3."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from smneuron.cli._common import JsonOpt, console, not_empty, print_json, shown, state, table
from smneuron.errors import UsageError


def package_cmd(
    artifact_dir: Path = typer.Argument(..., help="Compiled artifact directory (from `smneuron compile`)."),
    out: Path = typer.Option(
        Path("model.tar.gz"), "--output", "-o", help="Tarball (or directory with --compression none)."
    ),
    code: Path = typer.Option(None, "--code", help="Your own modules to ship in code/."),
    requirements: Path = typer.Option(
        None, "--requirements", help="Extra pip requirements for the container."
    ),
    wheel: list[Path] = typer.Option(
        None, "--wheel", help="Vendor a wheel for network-isolated endpoints (repeat)."
    ),
    compression: str = typer.Option("gzip", "--compression", help="gzip, or none for S3-prefix model data."),
    as_json: bool = JsonOpt,
) -> None:
    """Build model.tar.gz in the layout the DLC expects; deterministic, multi-threaded."""
    from smneuron.artifact.packaging import package

    t0 = time.perf_counter()
    r = package(
        artifact_dir,
        out,
        extra_code=code,
        requirements=requirements,
        wheels=wheel or None,
        compression=compression,
    )  # type: ignore[arg-type]
    seconds = time.perf_counter() - t0
    if as_json:
        print_json(
            {
                "path": str(r.path),
                "sha256": r.sha256,
                "size_bytes": r.size_bytes,
                "compression": r.compression,
                "seconds": round(seconds, 3),
                "entries": r.entries,
            }
        )
        return
    # one plain line: rich would cost its import (~0.02 s) in a command that is all start-up and deflate
    typer.echo(f"{r.path}  {r.size_bytes / 2**20:.1f} MiB  sha256 {r.sha256}  ({seconds:.2f} s)")


def inspect_cmd(
    package_path: Path = typer.Argument(
        ..., help="model.tar.gz, a package directory or an artifact directory."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """List a package's entries and verify them against its manifest (exit 1 on any mismatch)."""
    from smneuron.artifact.archive import inspect_package
    from smneuron.artifact.kind import ENCODER, GENERATION, kind_of

    r = inspect_package(package_path)
    if as_json:
        print_json(
            {
                "path": str(r.path),
                "ok": r.ok,
                "problems": r.problems,
                "notes": r.notes,
                "code_files": r.code_files,
                "manifest": r.manifest,
                "entries": [
                    {"name": e.name, "size_bytes": e.size_bytes, "sha256": e.sha256} for e in r.entries
                ],
            }
        )
    else:
        table(None, ["entry", "bytes", "sha256"], [[e.name, e.size_bytes, e.sha256[:16]] for e in r.entries])
        if r.manifest:  # each kind's line of what the manifest says
            lines = {ENCODER: _encoder_line, GENERATION: _generation_line}
            console().print(lines[kind_of(r.manifest)](r.manifest))
        for n in r.notes:
            console().print(f"note: {n}")
        for p in r.problems:
            console().print(f"[red]problem:[/red] {shown(p)}", markup=True)
        if r.ok:
            console().print("[green]OK[/green]: every file matches the manifest.", markup=True)
    if not r.ok:
        raise typer.Exit(1)


def upload_cmd(
    ctx: typer.Context,
    package_path: Path = typer.Argument(..., help="model.tar.gz or an uncompressed package directory."),
    model_name: str = typer.Option(
        None, "--model-name", "-n", help="Names the S3 key (default: from smneuron.yaml)."
    ),
    bucket: str = typer.Option(
        None, "--bucket", help="Artifact bucket (default smneuron-{account}-{region})."
    ),
    kms_key_id: str = typer.Option(None, "--kms-key-id", help="Encrypt with this KMS key (else SSE-S3)."),
    prefix: str = typer.Option(
        None, "--prefix", help="Key prefix (default: aws.prefix in smneuron.yaml, else smneuron)."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Upload to S3 under a content-addressed key; a second upload of the same bytes is skipped."""
    from smneuron.artifact.staging import stage

    st = state(ctx)
    project = st.project()
    session = st.session(
        bucket=not_empty(bucket, "--bucket"), kms_key_id=not_empty(kms_key_id, "--kms-key-id")
    )
    name = not_empty(model_name, "--model-name") or project.model_name or package_path.name.split(".")[0]
    r = stage(package_path, name=name, session=session, prefix=_key_prefix(prefix))  # default: aws.prefix
    if as_json:
        print_json(r.to_dict())
        return
    verb = "already there, skipped (same sha256)" if r.skipped else "uploaded"
    console().print(f"{r.uri}  {verb}")


def _generation_line(m: dict) -> str:
    g = m["generation"]
    return (
        f"task text-generation  target {m['compiler']['target']}  batch {g['batch_size']}  sequence "
        f"{g['sequence_length']}  tp {g['tensor_parallel_size']}  {g['dtype']}  smneuron {m['smneuron_version']}"
    )


def _encoder_line(m: dict) -> str:
    """One file per (batch, sequence bucket): each bucket and each compiled batch said once."""
    seqs = sorted({b["seq_len"] for b in m["buckets"]})
    batches = sorted({b.get("batch_size", m["batch_size"]) for b in m["buckets"]})
    return (
        f"task {m['task']}  target {m['compiler']['target']}  batch {m['batch_size']}  buckets "
        f"{', '.join(map(str, seqs))}  compiled batches {', '.join(map(str, batches))}  smneuron {m['smneuron_version']}"
    )


def _key_prefix(prefix: str | None) -> str | None:
    """``--prefix`` as aws.prefix takes it (S3's safe characters, "/" between segments): ``../x`` made a key with
    "..", which S3 stores and a console or a sync maps elsewhere."""
    from smneuron.specs.models import is_key_prefix

    if prefix is None or is_key_prefix(prefix):
        return prefix
    raise UsageError(
        f"--prefix {prefix!r} is not a key prefix smneuron stages under: S3's safe characters (letters, digits and "
        "!-_.*'()) in segments joined by '/', with no empty, '.' or '..' segment.",
        hint="Give e.g. --prefix team-models, or leave it out for aws.prefix in smneuron.yaml (smneuron).",
    )
