"""Does the streaming (evict-first) unary rung's gain at 64-256 MiB depend on the L2 flush leaving dirty
lines? The same candidates timed in turn after a write flush (zero a 2x-L2 buffer, as kernelkit.bench
does) and after a read flush (sum a 2x-L2 buffer that is never written: L2 left clean)."""
import os
import torch
from kernelkit.runtime import get_kernel, launch

CT = {torch.float32: "float", torch.float16: "__half"}
scratch_w = torch.empty(100 << 20, dtype=torch.uint8, device="cuda")
scratch_r = torch.ones(100 << 20, dtype=torch.uint8, device="cuda")
for n, dtype in ((1 << 24, torch.float32), (1 << 25, torch.float16), (1 << 24, torch.float16), (1 << 26, torch.float32)):
    xs = [torch.randn(n, device="cuda", dtype=dtype) for _ in range(4)]
    f = "kk::GeluTanh" if dtype == torch.float32 else "kk::GeluTanhFast"
    ks = {st: get_kernel("gelu.cu", f"kk::unary_fast<{CT[dtype]}, {f}, 1, true, {st}>", device_index=0) for st in ("false", "true")}
    nvec = n * xs[0].element_size() // 16
    fns = {"torch": lambda i: torch.nn.functional.gelu(xs[i % 4], approximate="tanh"),
           "plain": lambda i: launch(ks["false"], nvec // 512 + 1, 512, torch.empty_like(xs[i % 4]).data_ptr(), xs[i % 4].data_ptr(), n, 0),
           "streaming": lambda i: launch(ks["true"], nvec // 512 + 1, 512, torch.empty_like(xs[i % 4]).data_ptr(), xs[i % 4].data_ptr(), n, 0)}
    for mode in ("write", "read"):
        times = {k: [] for k in fns}
        for i in range(310):
            for name, fn in fns.items():
                if mode == "write":
                    scratch_w.zero_()
                else:
                    scratch_r.sum(dtype=torch.int32)
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); fn(i); e.record()
                times[name].append((s, e))
        torch.cuda.synchronize()
        nbytes = 2 * n * xs[0].element_size()
        med = {k: sorted(s.elapsed_time(e) for s, e in v[10:])[150] for k, v in times.items()}
        print(f"{dtype} n=2^{n.bit_length()-1} flush={mode}: " + "  ".join(f"{k} {nbytes / m / 1e6:.0f} GB/s" for k, m in med.items()))
