"""Analysis options: the part of the configuration the stream model reads.

The command line and ``[tool.synclint]`` loading live in :mod:`synclint.config`; this module only
holds the knobs that change what the analysis believes, so that the model does not depend on the CLI.
These values are part of the cache key.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Calls whose result behaves like the ``torch.cuda`` module (``.Stream()``, ``.Event()``,
#: ``.current_stream()``, ``.synchronize()``, ``.stream(s)``, ...). DeepSpeed's accelerator is on by
#: default because it is the most common wrapper in the wild.
DEFAULT_ACCELERATOR_WRAPPERS = (
    "deepspeed.accelerator.get_accelerator",
    "deepspeed.accelerator.real_accelerator.get_accelerator",
)


@dataclass(frozen=True)
class AnalysisSettings:
    #: Dotted names of callables returning a torch.cuda-like accelerator object (config key
    #: ``accelerator-wrappers``). Matched after import resolution, so ``from x import get_accelerator``
    #: then ``get_accelerator().Stream()`` resolves.
    accelerator_wrappers: tuple[str, ...] = DEFAULT_ACCELERATOR_WRAPPERS
    #: Dotted (or bare) names of user helpers that synchronize the host with the device (config key
    #: ``synchronizing-functions``), e.g. ``"mylib.utils.cuda_sync"``.
    synchronizing_functions: tuple[str, ...] = ()
    #: Where parameters and values of unknown origin were produced (config key ``parameter-origin``):
    #: ``"caller-stream"`` (default: on the caller's current stream, before the function's first
    #: statement) or ``"synchronized"`` (assume the caller synchronized them: no hazard on entry).
    parameter_origin: str = "caller-stream"

    def cache_key(self) -> str:
        return repr(self)
