/* What the launch shim's C files share: the driver's launch entry, argument packing, the lanes. */
#ifndef KERNELKIT_FASTLAUNCH_H
#define KERNELKIT_FASTLAUNCH_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MAX_ARGS 64
#define ARG_BYTES 4096 /* the driver's limit on a kernel's parameters */

typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned shmem, void *stream, void **params, void **extra);

extern launch_fn kk_cu_launch_kernel; /* cuLaunchKernel, once kk_bind_driver() has run */
int kk_bind_driver(void);
/* Copy the arguments of the tuple `args` into `storage` at their natural alignment and point params[i]
 * at each; returns the bytes used, or -1 with a Python error set. */
Py_ssize_t kk_pack(PyObject *args, unsigned char *storage, void **params);

/* The torch bridge (torch_bridge.cpp, compiled against the installed torch by `kernelkit warmup`): what
 * a lane reads of a tensor and its new output, through ATen instead of Python calls. */
#define KK_BRIDGE_ABI 1
typedef struct {
  long long numel, data_ptr;
  int device;     /* CUDA device index, -1 for any other device (as Tensor.get_device) */
  int contiguous; /* 0 also for a tensor without data (a functorch wrapper): no lane takes it */
} kk_facts;
typedef struct {
  int abi;                                               /* KK_BRIDGE_ABI */
  int (*facts)(PyObject *x, kk_facts *f);                /* x a torch.Tensor; 0, or -1 with an error set */
  PyObject *(*empty_like)(PyObject *x);                  /* contiguous, x's dtype and device */
  PyObject *(*new_empty)(PyObject *x, PyObject *shape);  /* shape: a tuple of ints; x's dtype and device */
} kk_bridge;

/* lanes.c */
PyObject *kk_use_bridge(PyObject *self, PyObject *capsule);
PyObject *kk_bind(PyObject *self, PyObject *args);
PyObject *kk_make_lane(PyObject *self, PyObject *args);
PyObject *kk_unary(PyObject *self, PyObject *const *argv, Py_ssize_t argc);
PyObject *kk_binary(PyObject *self, PyObject *const *argv, Py_ssize_t argc);
PyObject *kk_axpy(PyObject *self, PyObject *const *argv, Py_ssize_t argc);
/* fixed_lanes.c */
PyObject *kk_make_fixed(PyObject *self, PyObject *args);
PyObject *kk_fixed(PyObject *self, PyObject *const *argv, Py_ssize_t argc);

/* what lanes.c gives fixed_lanes.c */
extern PyObject *kk_tensor_type, *kk_empty_like;
extern PyObject *kk_s_dtype, *kk_s_shape, *kk_s_data_ptr, *kk_s_new_empty;
int kk_bound(void);
int kk_facts_of(PyObject *x, kk_facts *f);
PyObject *kk_new_like(PyObject *x);
PyObject *kk_new_shaped(PyObject *x, PyObject *shape);
long long kk_data_ptr_of(PyObject *t); /* an output's address: -1 with an error set on failure */
int kk_launch_on(int device, void *kernel, const char *name, const unsigned grid[3], const unsigned block[3],
                 unsigned shmem, void **params);

#ifdef __cplusplus
}
#endif
#endif
