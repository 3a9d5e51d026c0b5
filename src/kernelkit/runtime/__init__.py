"""kernelkit's runtime: NVRTC compile through cuda.core, header discovery, caches, launch."""
from .cache import cache_dir
from .compiler import Build, compile_source, clear_memory_cache, lineinfo_enabled
from .errors import CompileError, HeadersNotFoundError, KernelLaunchError, KernelkitError
from .headers import header_options, include_dirs, nvrtc_version
from .launch import current_stream, device_arch, get_kernel, launch

__all__ = [
    "Build", "CompileError", "HeadersNotFoundError", "KernelLaunchError", "KernelkitError",
    "cache_dir", "clear_memory_cache", "compile_source", "current_stream", "device_arch",
    "get_kernel", "header_options", "include_dirs", "launch", "lineinfo_enabled", "nvrtc_version",
]
