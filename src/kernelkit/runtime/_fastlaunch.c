/* The plain kernel launch as one C call: the host-cost floor of every small op.
 *
 * launch(function, gx, gy, gz, bx, by, bz, shmem, stream, args) -> CUresult as an int
 *
 * `function` is a CUkernel or CUfunction handle as an int (cuLaunchKernel takes either and runs the
 * kernel in the current context), `stream` a CUstream handle, `args` a tuple of the kernel's
 * arguments: Python ints as 64-bit integers, floats as doubles, bools as one byte, and numpy scalars
 * (read through the buffer protocol) at their own width. Each value is copied to a local buffer at
 * its natural alignment and the driver gets an array of pointers into it, as cuLaunchKernel expects.
 * libcuda is opened at the first call, so importing the module needs no GPU.
 *
 * Why not cuda.core's launch: it costs about 4 us of host time a call on an H100 host, against
 * about 6.4 us for a whole torch eager call of a small element-wise op (docs/design/host-overhead.md).
 *
 * Lanes: the whole plain eager call of the allocating element-wise ops in C (below), so that such a
 * call costs the host what torch's own does: the allocation through torch, a few method calls on the
 * tensors and the launch, with no Python frame between them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned shmem, void *stream, void **params, void **extra);

static launch_fn cu_launch_kernel = NULL;

#define MAX_ARGS 64
#define ARG_BYTES 4096 /* the driver's limit on a kernel's parameters */

static int bind_driver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    PyErr_Format(PyExc_RuntimeError, "cannot open libcuda.so.1: %s", dlerror());
    return -1;
  }
  cu_launch_kernel = (launch_fn)dlsym(lib, "cuLaunchKernel");
  if (!cu_launch_kernel) {
    PyErr_SetString(PyExc_RuntimeError, "libcuda.so.1 has no cuLaunchKernel");
    return -1;
  }
  return 0;
}

/* Copy the arguments of the tuple `args` into `storage` at their natural alignment and point
 * params[i] at each; returns the bytes used, or -1 with a Python error set. */
static Py_ssize_t pack(PyObject *args, unsigned char *storage, void **params) {
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
      if (PyObject_GetBuffer(a, &view, PyBUF_SIMPLE) != 0 || view.len < 1 || view.len > 8) {
        if (!PyErr_Occurred()) PyBuffer_Release(&view);
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "kernel argument %zd has type %s: pass an int (64-bit), a float (double) or a numpy scalar", i,
                     Py_TYPE(a)->tp_name);
        return -1;
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
  if (pack(argv[9], storage, params) < 0) return NULL;
  if (!cu_launch_kernel && bind_driver() != 0) return NULL;
  int err = cu_launch_kernel(function, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], stream, params,
                             NULL);
  return PyLong_FromLong(err);
}

/* ---- lanes ------------------------------------------------------------------------------------------
 * A lane is the plain eager call of an op for one kind of input (dtype, device, parameter), made by the
 * op's Python module once its checked path has accepted such an input, and held in the op's lane dict
 * as a capsule. unary(lanes, x, param), binary(lanes, a, b) and axpy(lanes, alpha, x, y) look the lane up
 * and run it: they return the new output (axpy: True, y updated in place), or None for an input the lane does not take (not a plain tensor, no lane for its kind,
 * not contiguous, shapes that differ), which the caller then gives to its checked path. What a lane
 * launches is exactly what the checked path launches for the same input (the GPU tests compare bits). */

/* torch's callables and the error hook, bound once by bind() */
static PyObject *g_tensor_type, *g_empty_like, *g_current_device, *g_raw_stream, *g_exchange_device, *g_fail;
static PyObject *s_dtype, *s_get_device, *s_is_contiguous, *s_numel, *s_data_ptr, *s_shape;

typedef struct {
  void *kernel[2];               /* unary: [input aligned like the output, not]; add: [aligned, shuffle] */
  const char *name[2];
  int device;
  long long esize, per;          /* bytes an element, elements a 16-byte vector */
  unsigned block[2], shmem[2];   /* unary: [below large_n, from large_n]; add: [aligned, shuffle] */
  long long large_n;             /* unary: elements from which block[1] applies */
  char names[2][64];
} Lane;

static const char *CAPSULE = "kernelkit.lane";

static PyObject *call_method(PyObject *obj, PyObject *name) {
  PyObject *args[1] = {obj};
  return PyObject_VectorcallMethod(name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* obj.<name>() as a C integer; -1 with a Python error set on failure (callers check PyErr_Occurred). */
static long long method_ll(PyObject *obj, PyObject *name) {
  PyObject *r = call_method(obj, name);
  if (!r) return -1;
  long long v = PyLong_AsLongLong(r);
  Py_DECREF(r);
  return v;
}

static PyObject *bind(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *t, *e, *c, *r, *x, *f;
  if (!PyArg_ParseTuple(args, "OOOOOO", &t, &e, &c, &r, &x, &f)) return NULL;
  PyObject **slots[6] = {&g_tensor_type, &g_empty_like, &g_current_device, &g_raw_stream, &g_exchange_device, &g_fail};
  PyObject *vals[6] = {t, e, c, r, x, f};
  for (int i = 0; i < 6; ++i) {
    Py_INCREF(vals[i]);
    Py_XSETREF(*slots[i], vals[i]);
  }
  if (!s_dtype) {
    s_dtype = PyUnicode_InternFromString("dtype");
    s_get_device = PyUnicode_InternFromString("get_device");
    s_is_contiguous = PyUnicode_InternFromString("is_contiguous");
    s_numel = PyUnicode_InternFromString("numel");
    s_data_ptr = PyUnicode_InternFromString("data_ptr");
    s_shape = PyUnicode_InternFromString("shape");
  }
  Py_RETURN_NONE;
}

static void free_lane(PyObject *capsule) { PyMem_Free(PyCapsule_GetPointer(capsule, CAPSULE)); }

/* make_lane(kernel0, kernel1, name0, name1, device, esize, block0, shmem0, block1, shmem1, large_n) */
static PyObject *make_lane(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *k0, *k1;
  const char *n0, *n1;
  int dev;
  long long esize, large_n;
  unsigned b0, m0, b1, m1;
  if (!PyArg_ParseTuple(args, "OOssiLIIIIL", &k0, &k1, &n0, &n1, &dev, &esize, &b0, &m0, &b1, &m1, &large_n))
    return NULL;
  if (esize < 1 || esize > 16 || 16 % esize || !b0 || !b1) {
    PyErr_SetString(PyExc_ValueError, "make_lane: element size must divide 16 and blocks be positive");
    return NULL;
  }
  Lane *lane = PyMem_Calloc(1, sizeof(Lane));
  if (!lane) return PyErr_NoMemory();
  lane->kernel[0] = PyLong_AsVoidPtr(k0);
  lane->kernel[1] = PyLong_AsVoidPtr(k1);
  if (PyErr_Occurred()) {
    PyMem_Free(lane);
    return NULL;
  }
  snprintf(lane->names[0], sizeof lane->names[0], "%s", n0);
  snprintf(lane->names[1], sizeof lane->names[1], "%s", n1);
  lane->name[0] = lane->names[0];
  lane->name[1] = lane->names[1];
  lane->device = dev;
  lane->esize = esize;
  lane->per = 16 / esize;
  lane->block[0] = b0;
  lane->shmem[0] = m0;
  lane->block[1] = b1;
  lane->shmem[1] = m1;
  lane->large_n = large_n;
  PyObject *cap = PyCapsule_New(lane, CAPSULE, free_lane);
  if (!cap) PyMem_Free(lane);
  return cap;
}

/* The lane stored under key in the dict lanes, or NULL (no error) if there is none. */
static Lane *find_lane(PyObject *lanes, PyObject *key) {
  if (!key) return NULL;
  PyObject *cap = PyDict_GetItemWithError(lanes, key); /* borrowed */
  Py_DECREF(key);
  if (!cap || !PyCapsule_IsValid(cap, CAPSULE)) return NULL;
  return (Lane *)PyCapsule_GetPointer(cap, CAPSULE);
}

/* (x.dtype, x.get_device()) into two new references; 0 on success. */
static int dtype_device(PyObject *x, PyObject **dtype, PyObject **dev) {
  *dtype = PyObject_GetAttr(x, s_dtype);
  if (!*dtype) return -1;
  *dev = call_method(x, s_get_device);
  if (!*dev) {
    Py_CLEAR(*dtype);
    return -1;
  }
  return 0;
}

static int is_contiguous(PyObject *x) {
  PyObject *r = call_method(x, s_is_contiguous);
  if (!r) return -1;
  int yes = r == Py_True;
  Py_DECREF(r);
  return yes;
}

/* Launch on torch's current stream of the lane's device, making that device current for the call when
 * it is not; a launch error goes to the Python hook (which raises the library's launch error). */
static int lane_launch(Lane *lane, int which, unsigned grid, void **params) {
  unsigned block = lane->block[which], shmem = lane->shmem[which];
  if (!cu_launch_kernel && bind_driver() != 0) return -1;
  PyObject *dev = PyLong_FromLong(lane->device);
  if (!dev) return -1;
  PyObject *cur = PyObject_Vectorcall(g_current_device, NULL, 0, NULL);
  long current = cur ? PyLong_AsLong(cur) : -1;
  Py_XDECREF(cur);
  PyObject *prev = NULL;
  if (current != lane->device) {
    if (PyErr_Occurred()) PyErr_Clear();
    prev = PyObject_Vectorcall(g_exchange_device, &dev, 1, NULL);
    if (!prev) {
      Py_DECREF(dev);
      return -1;
    }
  }
  PyObject *st = PyObject_Vectorcall(g_raw_stream, &dev, 1, NULL);
  void *stream = st ? PyLong_AsVoidPtr(st) : NULL;
  Py_XDECREF(st);
  int err = -1;
  if (!PyErr_Occurred())
    err = cu_launch_kernel(lane->kernel[which], grid, 1, 1, block, 1, 1, shmem, stream, params, NULL);
  if (prev) {
    PyObject *back = PyObject_Vectorcall(g_exchange_device, &prev, 1, NULL);
    Py_XDECREF(back);
    Py_DECREF(prev);
  }
  Py_DECREF(dev);
  if (PyErr_Occurred()) return -1;
  if (err) {
    PyObject *r = PyObject_CallFunction(g_fail, "siIIIi", lane->name[which], err, grid, block, shmem, lane->device);
    Py_XDECREF(r); /* the hook raises: r is NULL and the error is set */
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "kernel launch failed");
    return -1;
  }
  return 0;
}

static int bound(void) {
  if (!g_tensor_type) PyErr_SetString(PyExc_RuntimeError, "lanes used before bind()");
  return g_tensor_type != NULL;
}

/* unary(lanes, x, param) -> out or None: out = f(x) by the element-wise fast kernels (out, x, n, head). */
static PyObject *unary(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 3) {
    PyErr_SetString(PyExc_TypeError, "unary(lanes, x, param)");
    return NULL;
  }
  PyObject *x = argv[1];
  if (!bound() || (PyObject *)Py_TYPE(x) != g_tensor_type) {
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
  }
  PyObject *dtype, *dev;
  if (dtype_device(x, &dtype, &dev)) return NULL;
  Lane *lane = find_lane(argv[0], PyTuple_Pack(3, dtype, dev, argv[2]));
  Py_DECREF(dtype);
  Py_DECREF(dev);
  if (!lane) {
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
  }
  int c = is_contiguous(x);
  if (c <= 0) {
    if (c < 0) return NULL;
    Py_RETURN_NONE;
  }
  PyObject *out = PyObject_Vectorcall(g_empty_like, &x, 1, NULL);
  if (!out) return NULL;
  long long n = method_ll(x, s_numel);
  long long xp = method_ll(x, s_data_ptr), op = method_ll(out, s_data_ptr);
  if (PyErr_Occurred()) goto fail;
  if (n == 0) return out;
  long long head = ((-op) & 15) / lane->esize;
  if (head > n) head = n;
  const int large = n >= lane->large_n;
  /* the grid covers the tensor, one vector a thread; the epilogue's threads fit in it */
  const unsigned grid = (unsigned)((n - head) / (lane->per * lane->block[large]) + 1);
  long long a[4] = {op, xp, n, head};
  void *params[4] = {&a[0], &a[1], &a[2], &a[3]};
  Lane view = *lane; /* the kernel by alignment, the launch shape by size */
  view.kernel[0] = lane->kernel[((xp - op) & 15) != 0];
  view.name[0] = lane->name[((xp - op) & 15) != 0];
  view.block[0] = lane->block[large];
  view.shmem[0] = lane->shmem[large];
  if (lane_launch(&view, 0, grid, params)) goto fail;
  return out;
fail:
  Py_DECREF(out);
  return NULL;
}

/* binary(lanes, a, b) -> out or None: out = a + b by add's fast kernels for a and b of one shape:
 * add_aligned(out, a, b, n, head) when a and b are misaligned like out, else
 * add_shuffle(out, a, b, n, head, a's misalignment, b's) (misalignments in bytes past out's head). */
static PyObject *binary(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 3) {
    PyErr_SetString(PyExc_TypeError, "binary(lanes, a, b)");
    return NULL;
  }
  PyObject *a = argv[1], *b = argv[2];
  if (!bound() || (PyObject *)Py_TYPE(a) != g_tensor_type || (PyObject *)Py_TYPE(b) != g_tensor_type) {
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
  }
  PyObject *ta, *da, *tb, *db;
  if (dtype_device(a, &ta, &da)) return NULL;
  if (dtype_device(b, &tb, &db)) {
    Py_DECREF(ta);
    Py_DECREF(da);
    return NULL;
  }
  Lane *lane = find_lane(argv[0], PyTuple_Pack(4, ta, tb, da, db));
  Py_DECREF(ta);
  Py_DECREF(tb);
  Py_DECREF(da);
  Py_DECREF(db);
  if (!lane) {
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
  }
  PyObject *sa = PyObject_GetAttr(a, s_shape), *sb = sa ? PyObject_GetAttr(b, s_shape) : NULL;
  int same = sb ? PyObject_RichCompareBool(sa, sb, Py_EQ) : -1;
  Py_XDECREF(sa);
  Py_XDECREF(sb);
  int ca = same > 0 ? is_contiguous(a) : same, cb = ca > 0 ? is_contiguous(b) : ca;
  if (cb <= 0) {
    if (cb < 0) return NULL;
    Py_RETURN_NONE;
  }
  PyObject *out = PyObject_Vectorcall(g_empty_like, &a, 1, NULL);
  if (!out) return NULL;
  long long n = method_ll(a, s_numel);
  long long ap = method_ll(a, s_data_ptr), bp = method_ll(b, s_data_ptr), op = method_ll(out, s_data_ptr);
  if (PyErr_Occurred()) goto fail;
  if (n == 0) return out;
  long long head = ((-op) & 15) / lane->esize;
  if (head > n) head = n;
  const long long nvec = (n - head) / lane->per;
  const int shuffle = ((ap - op) & 15) != 0 || ((bp - op) & 15) != 0;
  long long grid = (nvec + lane->block[shuffle] - 1) / lane->block[shuffle];
  struct {
    long long op, ap, bp, n;
    int head, da, db;
  } v = {op, ap, bp, n, (int)head, (int)((ap + head * lane->esize) & 15), (int)((bp + head * lane->esize) & 15)};
  void *params[7] = {&v.op, &v.ap, &v.bp, &v.n, &v.head, &v.da, &v.db};
  if (lane_launch(lane, shuffle, (unsigned)(grid ? grid : 1), params)) goto fail;
  return out;
fail:
  Py_DECREF(out);
  return NULL;
}

/* axpy(lanes, alpha, x, y) -> True or None: y = alpha x + y in place by saxpy's vector kernels
 * (y, x, n, alpha as float, head), [x aligned like y, not]; alpha a Python float or int, x and y
 * contiguous, of one shape, not partly overlapping (None for anything else: the checked path decides). */
static PyObject *axpy(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 4) {
    PyErr_SetString(PyExc_TypeError, "axpy(lanes, alpha, x, y)");
    return NULL;
  }
  PyObject *alpha = argv[1], *x = argv[2], *y = argv[3];
  if (!bound() || (PyObject *)Py_TYPE(x) != g_tensor_type || (PyObject *)Py_TYPE(y) != g_tensor_type ||
      !(PyFloat_CheckExact(alpha) || PyLong_CheckExact(alpha))) {
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
  }
  double a = PyFloat_AsDouble(alpha); /* an int too large for a double raises, as float(alpha) does */
  if (a == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  PyObject *tx, *dx, *ty, *dy;
  if (dtype_device(x, &tx, &dx)) return NULL;
  if (dtype_device(y, &ty, &dy)) {
    Py_DECREF(tx);
    Py_DECREF(dx);
    return NULL;
  }
  Lane *lane = find_lane(argv[0], PyTuple_Pack(4, tx, ty, dx, dy));
  Py_DECREF(tx);
  Py_DECREF(ty);
  Py_DECREF(dx);
  Py_DECREF(dy);
  if (!lane) {
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
  }
  PyObject *sx = PyObject_GetAttr(x, s_shape), *sy = sx ? PyObject_GetAttr(y, s_shape) : NULL;
  int same = sy ? PyObject_RichCompareBool(sx, sy, Py_EQ) : -1;
  Py_XDECREF(sx);
  Py_XDECREF(sy);
  int cx = same > 0 ? is_contiguous(x) : same, cy = cx > 0 ? is_contiguous(y) : cx;
  if (cy <= 0) {
    if (cy < 0) return NULL;
    Py_RETURN_NONE;
  }
  long long n = method_ll(x, s_numel);
  long long xp = method_ll(x, s_data_ptr), yp = method_ll(y, s_data_ptr);
  if (PyErr_Occurred()) return NULL;
  if (n == 0) Py_RETURN_TRUE;
  const long long nb = n * lane->esize;
  if (xp != yp && xp < yp + nb && yp < xp + nb) Py_RETURN_NONE; /* partial overlap: the checked path raises */
  long long head = ((-yp) & 15) / lane->esize;
  if (head > n) head = n;
  const int which = ((xp - yp) & 15) != 0;
  const long long grid = ((n - head) / lane->per + lane->block[0] - 1) / lane->block[0];
  struct {
    long long yp, xp, n;
    float a;
    int head;
  } v = {yp, xp, n, (float)a, (int)head};
  void *params[5] = {&v.yp, &v.xp, &v.n, &v.a, &v.head};
  Lane view = *lane; /* both kernels launch with the plan's one shape */
  view.kernel[0] = lane->kernel[which];
  view.name[0] = lane->name[which];
  if (lane_launch(&view, 0, (unsigned)(grid ? grid : 1), params)) return NULL;
  Py_RETURN_TRUE;
}

/* pack(args) -> (bytes, offsets): what launch hands the driver, for tests without a GPU. */
static PyObject *pack_for_test(PyObject *self, PyObject *args) {
  (void)self;
  _Alignas(16) unsigned char storage[ARG_BYTES];
  void *params[MAX_ARGS];
  memset(storage, 0, sizeof storage);
  Py_ssize_t used = pack(args, storage, params);
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
    {"bind", bind, METH_VARARGS,
     "bind(Tensor, empty_like, current_device, raw_stream, exchange_device, fail): torch's callables for the lanes"},
    {"make_lane", make_lane, METH_VARARGS,
     "make_lane(kernel0, kernel1, name0, name1, device, esize, block0, shmem0, block1, shmem1, large_n) -> capsule"},
    {"unary", (PyCFunction)(void (*)(void))unary, METH_FASTCALL, "unary(lanes, x, param) -> out or None"},
    {"binary", (PyCFunction)(void (*)(void))binary, METH_FASTCALL, "binary(lanes, a, b) -> out or None"},
    {"axpy", (PyCFunction)(void (*)(void))axpy, METH_FASTCALL, "axpy(lanes, alpha, x, y) -> True or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastlaunch",
                                    "The plain kernel launch as one C call.", -1, methods};

PyMODINIT_FUNC PyInit__fastlaunch(void) { return PyModule_Create(&module); }
