"""The runtime's errors, raised by both extension modules (csrc/bind_common.h)."""


class CommError(RuntimeError):
    """A communication or copy failed; the message names the rank and the operation."""


class NoGpuError(RuntimeError):
    """The CUDA/NCCL module was asked for a GPU where there is none."""


class MissingExtensionError(ImportError):
    """csrc's compiled module is not there (stagec was installed without building it)."""
