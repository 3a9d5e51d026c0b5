/* Fixed lanes: one recorded launch, replayed.
 *
 * For an op whose launch is a function of its input's shape alone, given the input's data on a 16-byte
 * boundary (a fresh output from torch's allocator always is): the op records the one launch its checked
 * path made for a shape (runtime.lanes.record_fixed), and fixed(lanes, x, param) replays it for later
 * inputs of that (dtype, device, shape, parameter) with only the input's and the output's addresses
 * changed. */
#include <string.h>

#include "fastlaunch.h"

typedef struct {
  void *kernel;
  unsigned grid[3], block[3], shmem;
  int device;
  Py_ssize_t nargs, used;
  Py_ssize_t offset[MAX_ARGS];
  int in_slot, out_slot; /* the arguments that take x's and out's addresses */
  PyObject *out_shape;   /* None: out = empty_like(x); else x.new_empty(out_shape) */
  char name[64];
  _Alignas(16) unsigned char storage[ARG_BYTES];
} Fixed;

static const char *FIXED = "kernelkit.fixed_lane";

static void free_fixed(PyObject *capsule) {
  Fixed *f = PyCapsule_GetPointer(capsule, FIXED);
  if (f) {
    Py_XDECREF(f->out_shape);
    PyMem_Free(f);
  }
}

/* make_fixed(kernel, grid (3), block (3), shmem, device, args, in_slot, out_slot, out_shape, name) */
PyObject *kk_make_fixed(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *kernel, *kargs, *out_shape;
  unsigned g[3], b[3], shmem;
  int dev, in_slot, out_slot;
  const char *name;
  if (!PyArg_ParseTuple(args, "O(III)(III)IiO!iiOs", &kernel, &g[0], &g[1], &g[2], &b[0], &b[1], &b[2], &shmem, &dev,
                        &PyTuple_Type, &kargs, &in_slot, &out_slot, &out_shape, &name))
    return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(kargs);
  if (in_slot < 0 || in_slot >= n || out_slot < 0 || out_slot >= n || in_slot == out_slot) {
    PyErr_SetString(PyExc_ValueError, "make_fixed: in_slot and out_slot must be two argument indices");
    return NULL;
  }
  Fixed *f = PyMem_Calloc(1, sizeof(Fixed));
  if (!f) return PyErr_NoMemory();
  void *params[MAX_ARGS];
  Py_ssize_t used = kk_pack(kargs, f->storage, params);
  if (used < 0) goto fail;
  for (Py_ssize_t i = 0; i < n; ++i) f->offset[i] = (unsigned char *)params[i] - f->storage;
  if (!PyLong_CheckExact(PyTuple_GET_ITEM(kargs, in_slot)) || !PyLong_CheckExact(PyTuple_GET_ITEM(kargs, out_slot))) {
    PyErr_SetString(PyExc_ValueError, "make_fixed: the pointer slots must be 64-bit (Python int) arguments");
    goto fail;
  }
  f->kernel = PyLong_AsVoidPtr(kernel);
  if (PyErr_Occurred()) goto fail;
  memcpy(f->grid, g, sizeof g);
  memcpy(f->block, b, sizeof b);
  f->shmem = shmem;
  f->device = dev;
  f->nargs = n;
  f->used = used;
  f->in_slot = in_slot;
  f->out_slot = out_slot;
  Py_INCREF(out_shape);
  f->out_shape = out_shape;
  snprintf(f->name, sizeof f->name, "%s", name);
  PyObject *cap = PyCapsule_New(f, FIXED, free_fixed);
  if (!cap) {
    Py_DECREF(out_shape);
    PyMem_Free(f);
  }
  return cap;
fail:
  PyMem_Free(f);
  return NULL;
}

/* fixed(lanes, x, param) -> out or None: the lane under (x.dtype, x.get_device(), x.shape, param) for a
 * plain contiguous x whose data starts on a 16-byte boundary; None for anything else (an unhashable
 * param included), which the caller gives to its checked path. */
PyObject *kk_fixed(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 3) {
    PyErr_SetString(PyExc_TypeError, "fixed(lanes, x, param)");
    return NULL;
  }
  PyObject *x = argv[1];
  if (!kk_bound()) return NULL;
  if ((PyObject *)Py_TYPE(x) != kk_tensor_type) Py_RETURN_NONE;
  kk_facts fx;
  if (kk_facts_of(x, &fx)) return NULL;
  if (!fx.contiguous || (fx.data_ptr & 15)) Py_RETURN_NONE;
  PyObject *dtype = PyObject_GetAttr(x, kk_s_dtype), *dev = PyLong_FromLong(fx.device);
  PyObject *shape = dtype && dev ? PyObject_GetAttr(x, kk_s_shape) : NULL;
  PyObject *key = shape ? PyTuple_Pack(4, dtype, dev, shape, argv[2]) : NULL;
  Py_XDECREF(dtype);
  Py_XDECREF(dev);
  Py_XDECREF(shape);
  if (!key) return NULL;
  PyObject *cap = PyDict_GetItemWithError(argv[0], key); /* borrowed */
  Py_DECREF(key);
  if (!cap) {
    if (PyErr_Occurred()) {
      if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
      PyErr_Clear(); /* an unhashable param */
    }
    Py_RETURN_NONE;
  }
  Fixed *f = PyCapsule_IsValid(cap, FIXED) ? (Fixed *)PyCapsule_GetPointer(cap, FIXED) : NULL;
  if (!f) Py_RETURN_NONE;
  const long long xp = fx.data_ptr;
  PyObject *out = f->out_shape == Py_None ? kk_new_like(x) : kk_new_shaped(x, f->out_shape);
  if (!out) return NULL;
  const long long op = kk_data_ptr_of(out);
  if (PyErr_Occurred() || (op & 15)) { /* never misaligned from torch's allocator; the recording assumed not */
    Py_DECREF(out);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
  }
  _Alignas(16) unsigned char storage[ARG_BYTES];
  void *params[MAX_ARGS];
  memcpy(storage, f->storage, (size_t)f->used);
  memcpy(storage + f->offset[f->in_slot], &xp, 8);
  memcpy(storage + f->offset[f->out_slot], &op, 8);
  for (Py_ssize_t i = 0; i < f->nargs; ++i) params[i] = storage + f->offset[i];
  if (kk_launch_on(f->device, f->kernel, f->name, f->grid, f->block, f->shmem, params)) {
    Py_DECREF(out);
    return NULL;
  }
  return out;
}
