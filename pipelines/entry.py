"""Entry point of every smneuron pipeline job: ``python3 entry.py <step> [args...]``.

The job's container (a Neuron DLC) has torch and the Neuron SDK but not smneuron: install the
wheel that travels with the job (input ``smneuron``), then run ``steps/<step>.py`` from the
installed package, so each step runs exactly the smneuron code the pipeline was built with.
Standard library only; runs on the DLCs' Python 3.10+.
"""

import glob
import os
import runpy
import subprocess
import sys

STEPS = (
    "compile",
    "compile_generation",
    "score",
    "staging",
    "staging_generation",
    "cleanup",
    "deploy_generation",
    "deploy",
)
EXTRAS = {
    "compile": "[compile,serve]",
    "compile_generation": "[compile,serve]",
    "staging_generation": "[serve]",
}


def _install(step):
    wheel_dir = os.environ.get("SMNEURON_WHEEL_DIR", "/opt/ml/processing/input/smneuron")
    wheels = sorted(glob.glob(os.path.join(wheel_dir, "smneuron-*.whl")))
    if not wheels:
        sys.exit(f"smneuron is not installed and no wheel was found in {wheel_dir}")
    # no-cache: the wheel is the job's input, pip's cache would only fill the volume
    subprocess.check_call(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-cache-dir",
            "--quiet",
            "--disable-pip-version-check",
            wheels[-1] + EXTRAS.get(step, ""),
        ]
    )


def main(argv):
    if not argv or argv[0] not in STEPS:
        sys.exit("usage: entry.py {" + "|".join(STEPS) + "} [args...]")
    step = argv[0]
    try:
        import smneuron  # noqa: F401
    except ImportError:
        _install(step)
    from smneuron.artifact.resources import pipelines_dir

    steps = pipelines_dir() / "steps"
    sys.path.insert(0, str(steps))  # for step_common
    sys.argv = [step] + list(argv[1:])
    runpy.run_path(str(steps / (step + ".py")), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
