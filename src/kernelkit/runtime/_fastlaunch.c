/* The plain kernel launch as one C call: the host-cost floor of every small op.
 *
 * launch(function, gx, gy, gz, bx, by, bz, shmem, stream, args) -> CUresult as an int
 *
 * `function` is a CUkernel or CUfunction handle as an int (cuLaunchKernel takes either and runs the
 * kernel in the current context), `stream` a CUstream handle, `args` a tuple of the kernel's
 * arguments: Python ints as 64-bit integers, floats as doubles, bools as one byte, numpy scalars
 * (read through the buffer protocol) at their own width, and 128-byte buffers as tensor maps (CUtensorMap,
 * passed by value) at 64-byte alignment. Each value is copied to a local buffer at
 * its natural alignment and the driver gets an array of pointers into it, as cuLaunchKernel expects.
 * libcuda is opened at the first call, so importing the module needs no GPU.
 *
 * Why not cuda.core's launch: it costs about 4 us of host time a call on an H100 host, against
 * about 6.4 us for a whole torch eager call of a small element-wise op (docs/design/host-overhead.md).
 *
 * Lanes (lanes.c, fixed_lanes.c): the whole plain eager call of an op in C, so that such a call costs the
 * host what torch's own does: the allocation through torch, a few method calls on the tensors and the
 * launch, with no Python frame between them.
 */
#include <dlfcn.h>
#include <string.h>

#include "fastlaunch.h"

launch_fn kk_cu_launch_kernel = NULL;

int kk_bind_driver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    PyErr_Format(PyExc_RuntimeError, "cannot open libcuda.so.1: %s", dlerror());
    return -1;
  }
  kk_cu_launch_kernel = (launch_fn)dlsym(lib, "cuLaunchKernel");
  if (!kk_cu_launch_kernel) {
    PyErr_SetString(PyExc_RuntimeError, "libcuda.so.1 has no cuLaunchKernel");
    return -1;
  }
  return 0;
}

Py_ssize_t kk_pack(PyObject *args, unsigned char *storage, void **params) {
  if (!PyTuple_Check(args)) {
    PyErr_SetString(PyExc_TypeError, "args must be a tuple");
    return -1;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n > MAX_ARGS) {
    PyErr_Format(PyExc_ValueError, "%zd kernel arguments; at most %d", n, MAX_ARGS);
    return -1;
  }
  size_t offset = 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *a = PyTuple_GET_ITEM(args, i);
    unsigned char bytes[8];
    size_t size;
    if (PyLong_CheckExact(a)) {
      long long v = PyLong_AsLongLong(a);
      if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear(); /* past int64: an unsigned 64-bit value (an address, say) */
        unsigned long long u = PyLong_AsUnsignedLongLong(a);
        if (PyErr_Occurred()) return -1;
        memcpy(&v, &u, 8);
      }
      memcpy(bytes, &v, 8);
      size = 8;
    } else if (PyFloat_CheckExact(a)) {
      double v = PyFloat_AS_DOUBLE(a);
      memcpy(bytes, &v, 8);
      size = 8;
    } else if (PyBool_Check(a)) {
      bytes[0] = (unsigned char)(a == Py_True);
      size = 1;
    } else {
      Py_buffer view;
      if (PyObject_GetBuffer(a, &view, PyBUF_SIMPLE) != 0 || view.len < 1 || (view.len > 8 && view.len != 128)) {
        if (!PyErr_Occurred()) PyBuffer_Release(&view);
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "kernel argument %zd has type %s: pass an int (64-bit), a float (double), a numpy scalar "
                     "or the 128 bytes of a tensor map", i, Py_TYPE(a)->tp_name);
        return -1;
      }
      if (view.len == 128) { /* a CUtensorMap by value (a __grid_constant__ parameter): 64-byte aligned */
        offset = (offset + 63) & ~(size_t)63;
        if (offset + 128 > ARG_BYTES) {
          PyBuffer_Release(&view);
          PyErr_Format(PyExc_ValueError, "kernel arguments exceed %d bytes", ARG_BYTES);
          return -1;
        }
        memcpy(storage + offset, view.buf, 128);
        PyBuffer_Release(&view);
        params[i] = storage + offset;
        offset += 128;
        continue;
      }
      size = (size_t)view.len;
      memcpy(bytes, view.buf, size);
      PyBuffer_Release(&view);
    }
    size_t align = size >= 8 ? 8 : size >= 4 ? 4 : size >= 2 ? 2 : 1;
    offset = (offset + align - 1) & ~(align - 1);
    if (offset + size > ARG_BYTES) {
      PyErr_Format(PyExc_ValueError, "kernel arguments exceed %d bytes", ARG_BYTES);
      return -1;
    }
    memcpy(storage + offset, bytes, size);
    params[i] = storage + offset;
    offset += size;
  }
  return (Py_ssize_t)offset;
}

static PyObject *fast_launch(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 10) {
    PyErr_SetString(PyExc_TypeError, "launch(function, gx, gy, gz, bx, by, bz, shmem, stream, args)");
    return NULL;
  }
  void *function = PyLong_AsVoidPtr(argv[0]);
  unsigned dims[7];
  for (int i = 0; i < 7; ++i) dims[i] = (unsigned)PyLong_AsUnsignedLong(argv[1 + i]);
  void *stream = PyLong_AsVoidPtr(argv[8]);
  if (PyErr_Occurred()) return NULL;
  _Alignas(16) unsigned char storage[ARG_BYTES];
  void *params[MAX_ARGS];
  if (kk_pack(argv[9], storage, params) < 0) return NULL;
  if (!kk_cu_launch_kernel && kk_bind_driver() != 0) return NULL;
  int err = kk_cu_launch_kernel(function, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], stream, params,
                             NULL);
  return PyLong_FromLong(err);
}
/* pack(args) -> (bytes, offsets): what launch hands the driver, for tests without a GPU. */
static PyObject *pack_for_test(PyObject *self, PyObject *args) {
  (void)self;
  _Alignas(16) unsigned char storage[ARG_BYTES];
  void *params[MAX_ARGS];
  memset(storage, 0, sizeof storage);
  Py_ssize_t used = kk_pack(args, storage, params);
  if (used < 0) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject *offsets = PyTuple_New(n);
  if (!offsets) return NULL;
  for (Py_ssize_t i = 0; i < n; ++i)
    PyTuple_SET_ITEM(offsets, i, PyLong_FromSsize_t((unsigned char *)params[i] - storage));
  PyObject *out = Py_BuildValue("(y#N)", (const char *)storage, used, offsets);
  return out;
}

static PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))fast_launch, METH_FASTCALL,
     "launch(function, gx, gy, gz, bx, by, bz, shmem, stream, args) -> CUresult"},
    {"pack", (PyCFunction)pack_for_test, METH_O, "pack(args) -> (bytes, offsets), as launch packs them"},
    {"bind", kk_bind, METH_VARARGS,
     "bind(Tensor, empty_like, current_device, raw_stream, exchange_device, fail): torch's callables for the lanes"},
    {"use_bridge", kk_use_bridge, METH_O,
     "use_bridge(capsule or None): read tensors and allocate outputs through the torch bridge (None: Python calls)"},
    {"make_lane", kk_make_lane, METH_VARARGS,
     "make_lane(kernel0, kernel1, name0, name1, device, esize, block0, shmem0, block1, shmem1, large_n) -> capsule"},
    {"unary", (PyCFunction)(void (*)(void))kk_unary, METH_FASTCALL, "unary(lanes, x, param) -> out or None"},
    {"binary", (PyCFunction)(void (*)(void))kk_binary, METH_FASTCALL, "binary(lanes, a, b) -> out or None"},
    {"axpy", (PyCFunction)(void (*)(void))kk_axpy, METH_FASTCALL, "axpy(lanes, alpha, x, y) -> True or None"},
    {"make_fixed", kk_make_fixed, METH_VARARGS,
     "make_fixed(kernel, grid, block, shmem, device, args, in_slot, out_slot, out_shape, name) -> capsule"},
    {"fixed", (PyCFunction)(void (*)(void))kk_fixed, METH_FASTCALL, "fixed(lanes, x, param) -> out or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastlaunch",
                                    "The plain kernel launch as one C call.", -1, methods};

PyMODINIT_FUNC PyInit__fastlaunch(void) { return PyModule_Create(&module); }
