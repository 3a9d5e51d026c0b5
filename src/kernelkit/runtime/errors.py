"""Exceptions raised by the runtime, each carrying what a user needs to act on it."""
from __future__ import annotations


class KernelkitError(RuntimeError):
    """Base class of kernelkit's own runtime errors."""


class HeadersNotFoundError(KernelkitError):
    """No CUDA headers for NVRTC: the message lists every place searched."""


class CompileError(KernelkitError):
    """NVRTC rejected a source; ``log`` holds its full log (file and line of each diagnostic)."""

    def __init__(self, source: str, arch: str, log: str):
        self.source, self.arch, self.log = source, arch, log
        super().__init__(f"NVRTC failed to compile {source} for {arch}:\n{log.strip()}")

    def __reduce__(self):  # back from a worker process (kernelkit inspect) with its three fields
        return CompileError, (self.source, self.arch, self.log)


class KernelLaunchError(KernelkitError):
    """A launch, or (with KERNELKIT_SYNC=1) the kernel itself, failed; the message names the kernel."""


class UnsupportedDeviceError(KernelkitError):
    """The GPU is older than kernelkit's kernels support (compute capability below 8.0)."""
