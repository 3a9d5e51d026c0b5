"""kernelkit's runtime: NVRTC compile through cuda.core, header discovery, caches, the one launch path.

Nothing outside this package imports cuda.core or cuda.bindings.
"""
from .cache import cache_dir
from .compiler import Build, clear_memory_cache, compile_source, lineinfo_enabled
from .errors import CompileError, HeadersNotFoundError, KernelLaunchError, KernelkitError, UnsupportedDeviceError
from .headers import driver_cuda_version, header_options, include_dirs, nvrtc_version
from .launch import (allow_shared, clear_loaded, current_stream, device_arch, get_kernel, launch, on_device,
                     plain_launcher, resident_blocks, stream_handle)
from .support import MIN_COMPUTE_CAPABILITY, check_supported

__all__ = [
    "Build", "CompileError", "HeadersNotFoundError", "KernelLaunchError", "KernelkitError", "MIN_COMPUTE_CAPABILITY",
    "UnsupportedDeviceError", "check_supported",
    "allow_shared", "cache_dir", "clear_loaded", "clear_memory_cache", "compile_source", "current_stream",
    "device_arch", "driver_cuda_version", "get_kernel", "header_options", "include_dirs", "launch", "lineinfo_enabled",
    "nvrtc_version", "on_device", "plain_launcher", "resident_blocks", "stream_handle",
]
