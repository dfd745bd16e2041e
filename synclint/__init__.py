"""synclint: find CUDA stream and event synchronization bugs in PyTorch code.

The lint path (``synclint check``) never imports torch; only ``synclint confirm`` does.
"""

__version__ = "0.1.0"
